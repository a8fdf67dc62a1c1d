use serde_json::json;
use toolgate_model::config::{Detector, MaskConfig, MaskPattern};

use super::*;

fn all() -> Masker {
    Masker::new(&MaskConfig::default()).unwrap()
}

fn masked(m: &Masker, text: &str) -> String {
    m.mask(text, &mut Hits::default()).into_owned()
}

#[test]
fn a_card_number_is_masked_only_when_its_luhn_check_holds() {
    let m = all();
    assert_eq!(masked(&m, "card 4111 1111 1111 1111 ok"), "card [card] ok");
    assert_eq!(masked(&m, "card 5555-5555-5555-4444."), "card [card].");
    assert_eq!(masked(&m, "amex 378282246310005"), "amex [card]");
    // Random 16-digit numbers (Luhn fails) are order ids, not cards.
    assert_eq!(
        masked(&m, "order 4111111111111121"),
        "order 4111111111111121"
    );
    assert_eq!(
        masked(&m, "order 1234567812345678"),
        "order 1234567812345678"
    );
    // Digits glued to letters are not a card.
    assert_eq!(masked(&m, "id x4111111111111111"), "id x4111111111111111");
}

#[test]
fn an_iban_is_masked_only_when_its_mod_97_check_holds() {
    let m = all();
    assert_eq!(
        masked(&m, "pay DE89370400440532013000 now"),
        "pay [iban] now"
    );
    assert_eq!(
        masked(&m, "IBAN: GB82 WEST 1234 5698 7654 32, thanks"),
        "IBAN: [iban], thanks"
    );
    // A wrong check digit: left alone.
    assert_eq!(
        masked(&m, "pay DE89370400440532013001 now"),
        "pay DE89370400440532013001 now"
    );
    // The pattern swallows the next word as a last group; the check finds the IBAN before it.
    assert_eq!(
        masked(&m, "DE89 3704 0044 0532 0130 00 BIC COBADEFFXXX"),
        "[iban] BIC COBADEFFXXX"
    );
}

#[test]
fn overlapping_matches_are_masked_once_leftmost_first() {
    let m = all();
    // The IBAN's digits hold a run a card pattern could see; the IBAN starts first and wins.
    let mut hits = Hits::default();
    let out = m.mask("DE89 3704 0044 0532 0130 00", &mut hits);
    assert_eq!(out, "[iban]");
    assert_eq!(m.counts(&hits).collect::<Vec<_>>(), vec![("iban", 1)]);
    // A JWT after `Bearer` is one bearer token, not a bearer token and a JWT.
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
    assert_eq!(
        masked(&m, &format!("Authorization: Bearer {jwt}")),
        "Authorization: [bearer_token]"
    );
    assert_eq!(masked(&m, &format!("token={jwt}")), "token=[jwt]");
}

#[test]
fn secrets_by_shape_are_masked() {
    let m = all();
    let ghp = format!("ghp_{}", "a1B2c3D4e5".repeat(4));
    let cases = [
        ("AKIAIOSFODNN7EXAMPLE", "[aws_access_key]"),
        (ghp.as_str(), "[github_token]"),
        (
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
            "[github_token]",
        ),
        ("xoxb-123456789012-abcdefghijkl", "[slack_token]"),
        ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "[stripe_key]"),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
            "[private_key]",
        ),
    ];
    for (secret, mask) in cases {
        assert_eq!(
            masked(&m, &format!("key: {secret} end")),
            format!("key: {mask} end"),
            "{secret}"
        );
    }
    // Look-alikes stay: too short, wrong prefix.
    for text in ["AKIA1234", "ghp_short", "sk_test_4eC39HqLyjWDarjtT1zdp7dc"] {
        assert_eq!(masked(&m, text), text);
    }
}

#[test]
fn e_mails_and_phone_numbers_are_masked_in_non_ascii_text() {
    let m = all();
    assert_eq!(
        masked(
            &m,
            "Grüße von Zoë <zoë.ñ@example.com> — Tel. +41 44 668 18 00 ✓"
        ),
        "Grüße von Zoë <[email]> — Tel. [phone] ✓"
    );
    assert_eq!(
        masked(&m, "écrivez à jean.dupont@exemple.fr, merci"),
        "écrivez à [email], merci"
    );
    assert_eq!(masked(&m, "call +1-202-555-0173."), "call [phone].");
    // Too few digits for a phone number; a version number is no phone number.
    assert_eq!(masked(&m, "room +12 3"), "room +12 3");
}

#[test]
fn nested_json_strings_are_masked_and_keys_are_not() {
    let m = all();
    let mut value = json!({
        "user": {"email": "ann@example.org", "cards": ["4012 8888 8888 1881", 4111111111111111_u64]},
        "notes": [[{"text": "reach me at bob@example.net"}]],
        "ann@example.org": true,
    });
    let mut hits = Hits::default();
    m.mask_value(&mut value, &mut hits);
    assert_eq!(
        value,
        json!({
            "user": {"email": "[email]", "cards": ["[card]", 4111111111111111_u64]},
            "notes": [[{"text": "reach me at [email]"}]],
            "ann@example.org": true,
        })
    );
    let mut counts: Vec<_> = m.counts(&hits).collect();
    counts.sort();
    assert_eq!(counts, vec![("card", 1), ("email", 2)]);
}

#[test]
fn operator_patterns_and_replacements_apply() {
    let config = MaskConfig {
        detectors: vec![Detector::Email],
        patterns: vec![MaskPattern {
            name: "ticket".into(),
            regex: r"TCK-[0-9]{4,}".into(),
            replacement: Some("<ticket>".into()),
        }],
        replacement: "***{kind}***".into(),
        ..MaskConfig::default()
    };
    let m = Masker::new(&config).unwrap();
    assert_eq!(
        masked(&m, "TCK-12345 by a@b.io, card 4111111111111111"),
        "<ticket> by ***email***, card 4111111111111111"
    );
    let bad = MaskConfig {
        patterns: vec![MaskPattern {
            name: "broken".into(),
            regex: "(".into(),
            replacement: None,
        }],
        ..MaskConfig::default()
    };
    assert!(Masker::new(&bad).unwrap_err().contains("pattern `broken`"));
}

#[test]
fn a_text_without_a_match_is_borrowed() {
    let m = all();
    let text = "nothing to see here: 42, 2026-12-07, v1.2.3".repeat(50);
    assert!(matches!(
        m.mask(&text, &mut Hits::default()),
        Cow::Borrowed(_)
    ));
}

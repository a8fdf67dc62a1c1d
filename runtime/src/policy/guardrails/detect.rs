//! The masking engine: the built-in detectors and the operator's patterns, compiled into one
//! [`RegexSet`] (one pass tells which of them occur in a text; only those are searched again
//! for their positions), each match checked where a checksum exists (Luhn for cards with
//! `luhn3`, ISO 13616 mod-97 for IBANs with `iban_validate`), overlaps resolved leftmost
//! first (then longest), and every kept match replaced.
//!
//! The detectors' shapes are ours (no maintained crate lists them as Rust patterns):
//!
//! | kind | shape |
//! | --- | --- |
//! | `email` | `local@domain.tld` (letters of any script in the local part and domain) |
//! | `phone` | `+` and 8 to 15 digits, in groups separated by spaces, dots, dashes or `/`, area code possibly in parentheses |
//! | `iban` | two letters, two check digits, 11 to 30 letters or digits (in groups of four or not), mod-97 valid |
//! | `card` | 13 to 19 digits (groups separated by one space or dash), Luhn valid |
//! | `aws_access_key` | `AKIA`/`ASIA`/`ABIA`/`ACCA` and 16 upper-case letters or digits |
//! | `github_token` | `ghp_`/`gho_`/`ghu_`/`ghs_`/`ghr_` and 36+ characters, `github_pat_` and 22+ |
//! | `slack_token` | `xoxa-`/`xoxb-`/`xoxp-`/`xoxo-`/`xoxs-`/`xoxr-` and 10+ characters |
//! | `stripe_key` | `sk_live_`/`rk_live_` and 16+ characters |
//! | `jwt` | three base64url segments, the first two starting `eyJ` (`{"`) |
//! | `private_key` | a PEM block from `-----BEGIN … PRIVATE KEY-----` to its `END` line |
//! | `bearer_token` | `Bearer` and a token of 16+ characters |

use std::borrow::Cow;
use std::sync::Arc;

use regex::{Regex, RegexSet};
use serde_json::Value;
use toolgate_model::config::{Detector, MaskConfig};

/// What a match must pass besides its pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    None,
    /// Luhn over the digits (13 to 19 of them).
    Luhn,
    /// ISO 13616 (country, length, mod 97) over the letters and digits.
    Iban,
    /// 8 to 15 digits (E.164).
    Phone,
}

/// The built-in patterns: (kind, pattern, check). ASCII word boundaries (`(?-u:\b)`) keep the
/// set on the fast DFA whatever the text's script.
fn builtin(detector: Detector) -> &'static [(&'static str, &'static str, Check)] {
    match detector {
        Detector::Email => &[(
            "email",
            r"[\p{L}\p{N}._%+\-]+@[\p{L}\p{N}](?:[\p{L}\p{N}\-]*[\p{L}\p{N}])?(?:\.[\p{L}\p{N}](?:[\p{L}\p{N}\-]*[\p{L}\p{N}])?)*\.[A-Za-z]{2,24}(?-u:\b)",
            Check::None,
        )],
        Detector::Phone => &[(
            "phone",
            r"\+[1-9](?:[ ./\-]?\(?[0-9]{1,4}\)?){2,7}(?-u:\b)",
            Check::Phone,
        )],
        Detector::Iban => &[(
            "iban",
            r"(?-u:\b)[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?(?-u:\b)",
            Check::Iban,
        )],
        Detector::Card => &[(
            "card",
            r"(?-u:\b)[0-9](?:[ \-]?[0-9]){12,18}(?-u:\b)",
            Check::Luhn,
        )],
        Detector::Secrets => &[
            (
                "aws_access_key",
                r"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?-u:\b)",
                Check::None,
            ),
            (
                "github_token",
                r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})(?-u:\b)",
                Check::None,
            ),
            (
                "slack_token",
                r"(?-u:\b)xox[abposr]-[A-Za-z0-9\-]{10,}",
                Check::None,
            ),
            (
                "stripe_key",
                r"(?-u:\b)[rs]k_live_[A-Za-z0-9]{16,}",
                Check::None,
            ),
            (
                "jwt",
                r"(?-u:\b)eyJ[A-Za-z0-9_\-]{4,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{8,}",
                Check::None,
            ),
            (
                "private_key",
                r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)-----END [A-Z0-9 ]*PRIVATE KEY-----",
                Check::None,
            ),
            (
                "bearer_token",
                r"(?i:bearer)[ \t]+[A-Za-z0-9\-._~+/]{16,}=*",
                Check::None,
            ),
        ],
    }
}

/// One pattern of a [`Masker`].
#[derive(Debug)]
struct Kind {
    name: Arc<str>,
    regex: Regex,
    check: Check,
    replacement: String,
}

/// The detectors and patterns of one `mask`, compiled.
#[derive(Debug)]
pub(crate) struct Masker {
    set: RegexSet,
    kinds: Vec<Kind>,
}

/// How many matches of each kind (by index in the masker) one text or value had.
#[derive(Debug, Default)]
pub(crate) struct Hits(Vec<(usize, u64)>);

impl Hits {
    fn add(&mut self, kind: usize) {
        match self.0.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += 1,
            None => self.0.push((kind, 1)),
        }
    }

    /// Whether nothing was masked.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Masker {
    /// Compiles `config`.
    ///
    /// # Errors
    /// A message naming the pattern whose regular expression does not compile.
    pub(crate) fn new(config: &MaskConfig) -> Result<Self, String> {
        let mut kinds = Vec::new();
        let replace = |template: &str, name: &str| template.replace("{kind}", name);
        let mut detectors = config.detectors.clone();
        detectors.dedup();
        for d in detectors {
            for (name, pattern, check) in builtin(d) {
                kinds.push(Kind {
                    name: Arc::from(*name),
                    regex: Regex::new(pattern).map_err(|e| format!("detector `{name}`: {e}"))?,
                    check: *check,
                    replacement: replace(&config.replacement, name),
                });
            }
        }
        for p in &config.patterns {
            let regex = Regex::new(&p.regex).map_err(|e| {
                format!("pattern `{}`: not a valid regular expression: {e}", p.name)
            })?;
            if regex.is_match("") {
                return Err(format!("pattern `{}` matches the empty text", p.name));
            }
            let template = p.replacement.as_deref().unwrap_or(&config.replacement);
            kinds.push(Kind {
                name: Arc::from(p.name.as_str()),
                regex,
                check: Check::None,
                replacement: replace(template, &p.name),
            });
        }
        let set = RegexSet::new(kinds.iter().map(|k| k.regex.as_str()))
            .map_err(|e| format!("the patterns do not compile together: {e}"))?;
        Ok(Self { set, kinds })
    }

    /// Every kind that matched and how often.
    pub(crate) fn counts<'a>(&'a self, hits: &'a Hits) -> impl Iterator<Item = (&'a str, u64)> {
        hits.0.iter().map(|&(k, n)| (&*self.kinds[k].name, n))
    }

    /// `text` with every match masked; borrowed when nothing matched.
    pub(crate) fn mask<'t>(&self, text: &'t str, hits: &mut Hits) -> Cow<'t, str> {
        let matched = self.set.matches(text);
        if !matched.matched_any() {
            return Cow::Borrowed(text);
        }
        let mut spans: Vec<(usize, usize, usize)> = Vec::new();
        for k in matched.iter() {
            let kind = &self.kinds[k];
            for m in kind.regex.find_iter(text) {
                if let Some(end) = kind.accept(text, m.start(), m.end()) {
                    spans.push((m.start(), end, k));
                }
            }
        }
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        // Leftmost first, then longest, then the first kind listed; later overlapping spans
        // are dropped (a card number inside a masked IBAN is not masked twice).
        spans.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (start, end, k) in spans {
            if start < at {
                continue;
            }
            out.push_str(&text[at..start]);
            out.push_str(&self.kinds[k].replacement);
            hits.add(k);
            at = end;
        }
        out.push_str(&text[at..]);
        Cow::Owned(out)
    }

    /// Masks `s` in place; whether it changed.
    pub(crate) fn mask_string(&self, s: &mut String, hits: &mut Hits) -> bool {
        match self.mask(s, hits) {
            Cow::Borrowed(_) => false,
            Cow::Owned(masked) => {
                *s = masked;
                true
            }
        }
    }

    /// Masks every string of `value` at any depth (object keys are left alone).
    pub(crate) fn mask_value(&self, value: &mut Value, hits: &mut Hits) {
        match value {
            Value::String(s) => {
                self.mask_string(s, hits);
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.mask_value(v, hits)),
            Value::Object(map) => map.values_mut().for_each(|v| self.mask_value(v, hits)),
            _ => {}
        }
    }
}

impl Kind {
    /// Where a match at `start..end` ends once its check passed, if it passes: the whole
    /// match, or for an IBAN a shorter one ending at a group boundary (`… 0130 00 BIC` is
    /// matched with `BIC` as a last group).
    fn accept(&self, text: &str, start: usize, end: usize) -> Option<usize> {
        let found = &text[start..end];
        match self.check {
            Check::None => Some(end),
            Check::Luhn => {
                let digits: Vec<u8> = found.bytes().filter(u8::is_ascii_digit).collect();
                ((13..=19).contains(&digits.len()) && luhn3::valid(&digits)).then_some(end)
            }
            Check::Phone => {
                let n = found.bytes().filter(u8::is_ascii_digit).count();
                (8..=15).contains(&n).then_some(end)
            }
            Check::Iban => {
                let mut cut = found.len();
                loop {
                    let candidate: String = found[..cut]
                        .chars()
                        .filter(|c| !c.is_whitespace())
                        .collect();
                    if candidate.parse::<iban::Iban>().is_ok() {
                        return Some(start + cut);
                    }
                    cut = found[..cut].rfind(' ')?;
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "detect_tests.rs"]
mod tests;

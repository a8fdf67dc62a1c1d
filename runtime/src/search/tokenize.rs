//! Text → index terms: the one normalization both the index and every query go through.
//!
//! 1. Words are split at every character that is neither a letter nor a digit, and inside an
//!    identifier at case changes: `issues_create`, `issuesCreate`, `issues-create`,
//!    `github.issues.create` and `HTTPServer` (`http`, `server`) give the same words. Digits stay
//!    with their letters (`s3`, `oauth2`).
//! 2. Each word is folded: compatibility decomposition (NFKD: `ﬁ` → `fi`, full-width letters →
//!    ASCII), combining marks dropped (`é` → `e`, `ü` → `u`), a few letters that do not
//!    decompose spelled out (`ß` → `ss`, `æ` → `ae`, `ø` → `o`, `ł` → `l`, ...), lower case.
//! 3. English stop words (NLTK's list: `a`, `the`, `of`, ...) are dropped; the rest is stemmed
//!    with the English Snowball stemmer (`issues` and `issue` → `issu`), so a query need not
//!    match a description's inflection.
//! 4. Chinese and Japanese text (Han ideographs, hiragana, katakana), which puts no spaces
//!    between words, is cut into overlapping character bigrams (`读取文件` → `读取`, `取文`,
//!    `文件`); a lone character is its own term. A bigram index finds a word of two or more
//!    characters wherever it occurs, without a dictionary.
//!
//! Terms never contain a space (the index joins them with spaces, see `index.rs`).

use std::collections::HashSet;
use std::sync::LazyLock;

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// The English stop words, as folded terms.
static STOP_WORDS: LazyLock<HashSet<&'static str>> = LazyLock::new(|| {
    stop_words::lookup("en")
        .unwrap_or_default()
        .iter()
        .copied()
        .collect()
});

static STEMMER: LazyLock<rust_stemmers::Stemmer> =
    LazyLock::new(|| rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English));

/// The terms of `text`, in order (repeats kept: term frequency counts), appended to `out`;
/// at most `limit` terms in `out` in all.
pub(crate) fn terms_into(text: &str, out: &mut Vec<String>, limit: usize) {
    let mut word = String::new();
    let mut cjk = String::new();
    let mut prev: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if out.len() >= limit {
            return;
        }
        if is_cjk(c) {
            flush_word(&mut word, out, limit);
            cjk.push(c);
            prev = None;
            continue;
        }
        flush_cjk(&mut cjk, out, limit);
        if !c.is_alphanumeric() {
            flush_word(&mut word, out, limit);
            prev = None;
            continue;
        }
        if let Some(p) = prev {
            // `issuesCreate` → issues | Create; `HTTPServer` → HTTP | Server.
            let lower_to_upper = (p.is_lowercase() || p.is_numeric()) && c.is_uppercase();
            let acronym_end = p.is_uppercase()
                && c.is_uppercase()
                && chars.peek().is_some_and(|n| n.is_lowercase());
            if lower_to_upper || acronym_end {
                flush_word(&mut word, out, limit);
            }
        }
        word.push(c);
        prev = Some(c);
    }
    flush_word(&mut word, out, limit);
    flush_cjk(&mut cjk, out, limit);
}

/// The terms of `text` (see [`terms_into`]), at most `limit`.
pub(crate) fn terms(text: &str, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    terms_into(text, &mut out, limit);
    out
}

/// Folds, filters and stems the word collected so far, then clears it.
fn flush_word(word: &mut String, out: &mut Vec<String>, limit: usize) {
    if word.is_empty() {
        return;
    }
    let folded = fold(word);
    word.clear();
    if folded.is_empty() || out.len() >= limit || STOP_WORDS.contains(folded.as_str()) {
        return;
    }
    let stemmed = if folded.is_ascii() {
        STEMMER.stem(&folded).into_owned()
    } else {
        folded
    };
    if !stemmed.is_empty() {
        out.push(stemmed);
    }
}

/// Cuts the CJK run collected so far into bigrams, then clears it.
fn flush_cjk(run: &mut String, out: &mut Vec<String>, limit: usize) {
    if run.is_empty() {
        return;
    }
    // NFKC: half-width katakana as full-width, compatibility ideographs as the unified ones.
    let chars: Vec<char> = run.nfkc().filter(|c| is_cjk(*c)).collect();
    run.clear();
    if chars.len() == 1 {
        out.push(chars[0].to_string());
        return;
    }
    for pair in chars.windows(2) {
        if out.len() >= limit {
            return;
        }
        out.push(pair.iter().collect());
    }
}

/// `word` decomposed, without combining marks, with the letters that do not decompose spelled
/// out, in lower case, keeping only letters and digits.
pub(crate) fn fold(word: &str) -> String {
    let mut folded = String::with_capacity(word.len());
    for c in word.nfkd().filter(|c| !is_combining_mark(*c)) {
        match spelled(c) {
            Some(s) => folded.push_str(s),
            None => folded.extend(c.to_lowercase().filter(|c| c.is_alphanumeric())),
        }
    }
    folded
}

/// Latin letters that Unicode does not decompose into a base letter and a mark.
fn spelled(c: char) -> Option<&'static str> {
    Some(match c {
        'ß' | 'ẞ' => "ss",
        'æ' | 'Æ' => "ae",
        'œ' | 'Œ' => "oe",
        'ø' | 'Ø' => "o",
        'ł' | 'Ł' => "l",
        'đ' | 'Đ' | 'ð' | 'Ð' => "d",
        'þ' | 'Þ' => "th",
        'ı' => "i",
        _ => return None,
    })
}

/// Whether `c` is written without spaces between words: Han ideographs (CJK unified, their
/// extensions and compatibility forms), hiragana and katakana (with the prolonged sound mark
/// and half-width forms).
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{3040}'..='\u{30FF}'   // hiragana, katakana
        | '\u{31F0}'..='\u{31FF}' // katakana phonetic extensions
        | '\u{3400}'..='\u{4DBF}' // CJK extension A
        | '\u{4E00}'..='\u{9FFF}' // CJK unified ideographs
        | '\u{F900}'..='\u{FAFF}' // CJK compatibility ideographs
        | '\u{FF66}'..='\u{FF9F}' // half-width katakana
        | '\u{20000}'..='\u{3134F}' // CJK extensions B–G
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(text: &str) -> Vec<String> {
        terms(text, usize::MAX)
    }

    #[test]
    fn identifiers_split_into_the_same_words_in_every_style() {
        let expected = ["issu", "creat"];
        for name in [
            "issues_create",
            "issuesCreate",
            "IssuesCreate",
            "issues-create",
            "issues.create",
            "ISSUES_CREATE",
        ] {
            assert_eq!(t(name), expected, "{name}");
        }
        assert_eq!(t("github.issues_create"), ["github", "issu", "creat"]);
        assert_eq!(t("HTTPServer"), ["http", "server"]);
        assert_eq!(t("getS3Object"), ["get", "s3", "object"]);
        assert_eq!(t("oauth2_token"), ["oauth2", "token"]);
    }

    #[test]
    fn accents_and_umlauts_fold_to_their_base_letters() {
        assert_eq!(t("Müller"), t("muller"));
        assert_eq!(t("Crème brûlée"), t("creme brulee"));
        assert_eq!(fold("Straße"), "strasse");
        assert_eq!(fold("Øre"), "ore");
        assert_eq!(fold("ＡＢＣ"), "abc", "full-width letters");
        assert_eq!(t("löschen"), t("loschen"));
    }

    #[test]
    fn stop_words_are_dropped_and_words_stemmed() {
        assert_eq!(t("create a github issue"), ["creat", "github", "issu"]);
        assert!(t("the of and to").is_empty());
        assert!(t("  ,;- !").is_empty());
        assert_eq!(t("Creating issues"), t("create issue"));
    }

    #[test]
    fn chinese_and_japanese_are_cut_into_bigrams() {
        assert_eq!(t("读取文件"), ["读取", "取文", "文件"]);
        assert_eq!(t("文"), ["文"]);
        // Script changes end a run; Latin words around it are words.
        assert_eq!(t("用jq过滤"), ["用", "jq", "过滤"]);
        assert_eq!(
            t("ファイルを読む"),
            ["ファ", "ァイ", "イル", "ルを", "を読", "読む"]
        );
        // Half-width katakana read as full-width.
        assert_eq!(t("ﾌｧｲﾙ"), t("ファイル"));
    }

    #[test]
    fn the_limit_bounds_the_terms() {
        assert_eq!(terms("alpha beta gamma delta", 2).len(), 2);
        assert_eq!(terms("一二三四五六", 3).len(), 3);
        assert!(terms("alpha", 0).is_empty());
    }

    #[test]
    fn odd_input_gives_terms_or_nothing_but_never_panics() {
        for text in [
            "",
            "\u{0}",
            "\u{301}\u{301}",
            "🍕🍕",
            "a\u{200d}b",
            "İstanbul",
            "ǅungla",
            "x".repeat(10_000).as_str(),
        ] {
            let _ = t(text);
        }
    }
}

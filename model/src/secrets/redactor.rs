//! The redactor: one automaton over every form of every remembered secret, rebuilt when the
//! list changes.

use std::borrow::Cow;
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};

use aho_corasick::{AhoCorasick, MatchKind};

use super::REDACTED;
use super::forms::forms;
use super::registry::{GENERATION, any, lock};

/// Masks a set of secrets (in all their [`forms`]) in text, keeping a set of public names as
/// they are. Matches are leftmost-longest: of two overlapping secrets the one starting first
/// wins, and of two starting together the longer (so that a secret inside a longer one, or a
/// form inside a longer form, leaves nothing behind); a public name that is longer than a secret
/// at the same place keeps that place as it is.
#[derive(Debug)]
pub struct Redactor {
    matcher: AhoCorasick,
    /// By pattern: whether it is a public name (kept) rather than a secret's form (masked).
    public: Vec<bool>,
    /// The longest secret form, in bytes.
    longest: usize,
}

impl Redactor {
    /// A redactor for `secrets` (empty ones ignored), never masking `public`; `None` when there
    /// is no secret.
    pub fn new<S: AsRef<str>, P: AsRef<str>>(
        secrets: impl IntoIterator<Item = S>,
        public: impl IntoIterator<Item = P>,
    ) -> Option<Self> {
        let public: Vec<String> = public
            .into_iter()
            .map(|p| p.as_ref().to_string())
            .filter(|p| !p.is_empty())
            .collect();
        let mut patterns = public.clone();
        let mut kinds = vec![true; public.len()];
        let mut longest = 0;
        let mut all_forms: Vec<String> = secrets
            .into_iter()
            .flat_map(|s| forms(s.as_ref()))
            .filter(|f| !public.contains(f))
            .collect();
        all_forms.sort();
        all_forms.dedup();
        if all_forms.is_empty() {
            return None;
        }
        for form in all_forms {
            longest = longest.max(form.len());
            patterns.push(form);
            kinds.push(false);
        }
        let matcher = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&patterns)
            .ok()?;
        Some(Self {
            matcher,
            public: kinds,
            longest,
        })
    }

    /// `text` with every secret form replaced by [`REDACTED`]; borrowed when nothing was.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out: Option<String> = None;
        let mut copied = 0;
        for m in self.matcher.find_iter(text) {
            if self.public[m.pattern().as_usize()] {
                continue;
            }
            let out = out.get_or_insert_with(|| String::with_capacity(text.len()));
            out.push_str(&text[copied..m.start()]);
            out.push_str(REDACTED);
            copied = m.end();
        }
        match out {
            None => Cow::Borrowed(text),
            Some(mut out) => {
                out.push_str(&text[copied..]);
                Cow::Owned(out)
            }
        }
    }

    /// The longest secret form it masks, in bytes: a text cut anywhere can hold at most this
    /// many bytes minus one of a secret it no longer holds whole.
    pub fn longest(&self) -> usize {
        self.longest
    }
}

/// The redactor of the process's remembered secrets, built once per change of the list; `None`
/// while no secret is remembered.
static CURRENT: RwLock<Option<(u64, Option<Arc<Redactor>>)>> = RwLock::new(None);

/// The redactor of every secret [remembered](super::remember) so far (and the public names);
/// `None` when there is none.
pub fn current() -> Option<Arc<Redactor>> {
    if !any() {
        return None;
    }
    let generation = GENERATION.load(Ordering::Acquire);
    if let Some((built, redactor)) = &*CURRENT.read().unwrap_or_else(|p| p.into_inner())
        && *built == generation
    {
        return redactor.clone();
    }
    let (generation, redactor) = {
        let registry = lock();
        let generation = GENERATION.load(Ordering::Acquire);
        let redactor = Redactor::new(registry.all_secrets(), &registry.public).map(Arc::new);
        (generation, redactor)
    };
    *CURRENT.write().unwrap_or_else(|p| p.into_inner()) = Some((generation, redactor.clone()));
    redactor
}

/// `text` with every remembered secret, in every [form](forms), replaced by [`REDACTED`];
/// borrowed when nothing was (and without looking at it while no secret is remembered).
pub fn redact(text: &str) -> Cow<'_, str> {
    match current() {
        Some(r) => r.redact(text),
        None => Cow::Borrowed(text),
    }
}

/// [`redact`] in place; whether anything was masked.
pub fn redact_in_place(text: &mut String) -> bool {
    let Some(r) = current() else {
        return false;
    };
    match r.redact(text) {
        Cow::Borrowed(_) => false,
        Cow::Owned(clean) => {
            *text = clean;
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_is_masked_and_public_names_are_kept() {
        let r = Redactor::new([r#"s3cr"et\x"#, "github"], ["github-mcp"]).unwrap();
        assert_eq!(
            r.redact(r#"raw s3cr"et\x json "s3cr\"et\\x" pct s3cr%22et%5Cx"#),
            r#"raw [redacted] json "[redacted]" pct [redacted]"#
        );
        // Debug of a JSON text: escaped twice.
        assert_eq!(
            r.redact(r#"{\"k\":\"s3cr\\\"et\\\\x\"}"#),
            r#"{\"k\":\"[redacted]\"}"#
        );
        assert_eq!(
            r.redact("server `github-mcp` and github"),
            "server `github-mcp` and [redacted]"
        );
        assert!(matches!(r.redact("nothing here"), Cow::Borrowed(_)));
        assert!(Redactor::new([""], ["x"]).is_none());
    }

    #[test]
    fn a_secret_equal_to_a_public_name_is_not_masked() {
        let r = Redactor::new(["reports", "other-secret"], ["reports"]).unwrap();
        assert_eq!(
            r.redact("server `reports`: other-secret"),
            "server `reports`: [redacted]"
        );
    }

    #[test]
    fn the_longer_of_two_overlapping_secrets_goes_whole() {
        let r = Redactor::new(["abcdef", "abcdefgh-more"], Vec::<String>::new()).unwrap();
        assert_eq!(
            r.redact("x abcdefgh-more y abcdef"),
            "x [redacted] y [redacted]"
        );
        assert_eq!(r.longest(), "abcdefgh-more".len());
    }
}

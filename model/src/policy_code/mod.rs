//! Policy as code: `policy.rules` entries that are a Rego policy (`rego`, `rego_file`; the
//! `regorus` interpreter, cargo feature `rego`) or a CEL expression (`cel`, `cel_file`; the `cel`
//! crate, cargo feature `cel`), compiled once ([`CompiledCode::compile`]) and asked for a
//! [`Decision`] on each call ([`CompiledCode::decide`]).
//!
//! The input a rule sees is one JSON document:
//!
//! ```json
//! {"caller": {"id": "ann", "roles": ["admin"], "claims": {}},
//!  "tool": {"name": "fetch", "source": "local", "category": null, "tags": [], "annotations": {}},
//!  "arguments": {"url": "https://example.com"}}
//! ```
//!
//! (Rego reads it as `input`, CEL as the variables `caller`, `tool` and `arguments`.)
//!
//! * A Rego policy declares `allow` (the call is refused unless it is `true`), or `deny` (a set
//!   of messages; any message refuses the call and is shown), or both (both must hold).
//! * A CEL expression evaluates to a boolean: `true` allows, `false` refuses.
//! * Both get `url_host(text)`: the host of an absolute URL (lower case, without brackets or a
//!   trailing dot), as the argument rules read it; `null` when the text is not an absolute URL
//!   with a host.
//!
//! A rule *needs the arguments* when its text names `arguments` (outside a Rego comment; for CEL,
//! when the expression references the variable): such a rule is decided at call time only.

use std::path::Path;

use crate::config::{AccessRule, Diagnostic, LoadedConfig, Location};

#[cfg(feature = "cel")]
mod cel_rule;
#[cfg(feature = "rego")]
mod rego_rule;

/// The language of a policy-as-code rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    /// A Rego policy (Open Policy Agent's language), evaluated by `regorus`.
    Rego,
    /// A CEL (Common Expression Language) expression, evaluated by the `cel` crate.
    Cel,
}

impl Language {
    /// The language's name for messages: `Rego`, `CEL`.
    pub fn name(self) -> &'static str {
        match self {
            Language::Rego => "Rego",
            Language::Cel => "CEL",
        }
    }

    /// The cargo feature that brings the language's interpreter: `rego`, `cel`.
    pub fn feature(self) -> &'static str {
        match self {
            Language::Rego => "rego",
            Language::Cel => "cel",
        }
    }

    /// Whether this build has the language's interpreter.
    pub fn available(self) -> bool {
        match self {
            Language::Rego => cfg!(feature = "rego"),
            Language::Cel => cfg!(feature = "cel"),
        }
    }
}

/// Where a code rule's text is given: the key of the rule (`rego`, `rego_file`, `cel`,
/// `cel_file`) and its value (the text, or the file's path).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeKey<'a> {
    /// The language.
    pub language: Language,
    /// The key: `rego`, `rego_file`, `cel` or `cel_file`.
    pub key: &'static str,
    /// The key's value: the policy text, or a path relative to the tools.yaml.
    pub value: &'a str,
}

impl CodeKey<'_> {
    /// Whether the value is a file's path (`rego_file`, `cel_file`).
    pub fn is_file(&self) -> bool {
        self.key.ends_with("_file")
    }
}

impl AccessRule {
    /// The code keys the rule gives (`rego`, `rego_file`, `cel`, `cel_file`), in that order;
    /// empty for a built-in rule (a valid rule gives at most one).
    pub fn code_keys(&self) -> Vec<CodeKey<'_>> {
        [
            (Language::Rego, "rego", &self.rego),
            (Language::Rego, "rego_file", &self.rego_file),
            (Language::Cel, "cel", &self.cel),
            (Language::Cel, "cel_file", &self.cel_file),
        ]
        .into_iter()
        .filter_map(|(language, key, value)| {
            value.as_deref().map(|value| CodeKey {
                language,
                key,
                value,
            })
        })
        .collect()
    }

    /// The rule's code key, when it is a Rego or CEL rule.
    pub fn code(&self) -> Option<CodeKey<'_>> {
        self.code_keys().into_iter().next()
    }
}

/// A compile error in a policy's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeError {
    /// What is wrong, one line.
    pub message: String,
    /// Where in the policy's text (1-based line and column), when the parser says.
    pub location: Option<Location>,
}

impl std::fmt::Display for CodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.location {
            Some(at) => write!(
                f,
                "line {}, column {}: {}",
                at.line, at.column, self.message
            ),
            None => f.write_str(&self.message),
        }
    }
}

/// What a rule decided about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The rule lets the call through.
    Allow,
    /// The rule refuses the call, with the reason the policy gave (Rego `deny` messages joined
    /// with `; `, else the rule's `reason`), if any.
    Deny(Option<String>),
}

/// The longest a Rego evaluation may run when the rule gives no `timeout_ms`.
pub const DEFAULT_TIME_LIMIT: std::time::Duration = std::time::Duration::from_millis(100);

/// One compiled Rego or CEL rule: cheap to share (`Send + Sync`), evaluated by
/// [`decide`](Self::decide).
pub struct CompiledCode {
    language: Language,
    needs_arguments: bool,
    reason: Option<String>,
    inner: Inner,
}

enum Inner {
    #[cfg(feature = "rego")]
    Rego(Box<rego_rule::RegoRule>),
    #[cfg(feature = "cel")]
    Cel(cel_rule::CelRule),
    /// Never built: keeps the enum inhabited-by-type when both features are off.
    #[allow(dead_code)]
    None,
}

impl Inner {
    fn compile(
        language: Language,
        text: &str,
        name: &str,
        time_limit: std::time::Duration,
    ) -> Result<(Self, bool), CodeError> {
        let _ = (text, name, time_limit);
        match language {
            #[cfg(feature = "rego")]
            Language::Rego => {
                let rule = rego_rule::RegoRule::compile(text, name, time_limit)?;
                Ok((Inner::Rego(Box::new(rule)), names_arguments(text, '#')))
            }
            #[cfg(feature = "cel")]
            Language::Cel => {
                let rule = cel_rule::CelRule::compile(text)?;
                let needs = rule.needs_arguments();
                Ok((Inner::Cel(rule), needs))
            }
            #[allow(unreachable_patterns)]
            other => Err(CodeError {
                message: missing_feature(other),
                location: None,
            }),
        }
    }

    fn decide(&self, language: Language, input: &serde_json::Value) -> Result<Decision, String> {
        let _ = input;
        match self {
            #[cfg(feature = "rego")]
            Inner::Rego(rule) => rule.decide(input),
            #[cfg(feature = "cel")]
            Inner::Cel(rule) => rule.decide(input),
            Inner::None => Err(missing_feature(language)),
        }
    }
}

impl std::fmt::Debug for CompiledCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledCode")
            .field("language", &self.language)
            .field("needs_arguments", &self.needs_arguments)
            .finish_non_exhaustive()
    }
}

impl CompiledCode {
    /// Compiles `text` in `language`; `name` names it in the interpreter's own messages (a
    /// file's path, `rule 2`). `reason` is shown when the rule refuses without a message of its
    /// own; `time_limit` bounds each Rego evaluation (CEL has no loops: bounded by its input).
    ///
    /// # Errors
    /// A [`CodeError`] with the line and column inside `text`; or, when this build lacks the
    /// language's feature, one saying which feature to turn on.
    pub fn compile(
        language: Language,
        text: &str,
        name: &str,
        reason: Option<String>,
        time_limit: std::time::Duration,
    ) -> Result<Self, CodeError> {
        let (inner, needs_arguments) = Inner::compile(language, text, name, time_limit)?;
        Ok(Self {
            language,
            needs_arguments,
            reason,
            inner,
        })
    }

    /// The rule's language.
    pub fn language(&self) -> Language {
        self.language
    }

    /// Whether the rule reads the call's arguments (then it is decided at call time only, and
    /// does not hide tools from listings).
    pub fn needs_arguments(&self) -> bool {
        self.needs_arguments
    }

    /// The rule's decision on `input` (`{caller, tool, arguments}`, see the module docs).
    ///
    /// # Errors
    /// Why the rule could not decide (its time limit ran out, a Rego runtime error, a CEL
    /// expression that did not give a boolean); the caller treats it as a refusal.
    pub fn decide(&self, input: &serde_json::Value) -> Result<Decision, String> {
        let decision = self.inner.decide(self.language, input)?;
        Ok(match decision {
            Decision::Deny(None) => Decision::Deny(self.reason.clone()),
            d => d,
        })
    }
}

/// The message for a rule whose language this build lacks.
pub fn missing_feature(language: Language) -> String {
    format!(
        "this is a {} rule, and this build of toolgate has no {} interpreter: build it with the cargo feature `{}`",
        language.name(),
        language.name(),
        language.feature()
    )
}

/// Reads the text of `key` (a file relative to `base`, or the inline text).
///
/// # Errors
/// The I/O error's message, naming the file.
pub fn read_text(key: &CodeKey<'_>, base: &Path) -> Result<String, String> {
    if !key.is_file() {
        return Ok(key.value.to_string());
    }
    let path = base.join(key.value);
    std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "cannot read the {} policy `{}`: {e}",
            key.language.name(),
            path.display()
        )
    })
}

#[cfg(any(feature = "rego", feature = "cel"))]
/// The host of `text` as the argument rules read it (lower case, no brackets, no trailing
/// dot), or `None` when it is not an absolute URL with a host.
pub fn url_host(text: &str) -> Option<String> {
    let url = url::Url::parse(text).ok()?;
    let host = url.host_str()?;
    Some(
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .trim_end_matches('.')
            .to_ascii_lowercase(),
    )
}

/// Whether `text` names `arguments` as a word, outside comments starting with `comment`
/// (outside a string).
#[cfg_attr(not(feature = "rego"), allow(dead_code))]
fn names_arguments(text: &str, comment: char) -> bool {
    text.lines().any(|line| {
        let mut in_string = false;
        let mut escaped = false;
        let mut end = line.len();
        for (i, c) in line.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' if in_string => escaped = true,
                '"' => in_string = !in_string,
                c if c == comment && !in_string => {
                    end = i;
                    break;
                }
                _ => {}
            }
        }
        let code = &line[..end];
        code.match_indices("arguments").any(|(i, w)| {
            let before = code[..i].chars().next_back();
            let after = code[i + w.len()..].chars().next();
            let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            !word(before) && !word(after)
        })
    })
}

/// The checks of one `policy.rules` entry that gives `rego`, `rego_file`, `cel`, `cel_file`,
/// `reason` or `timeout_ms` (the `index`-th): one code key, not mixed with `roles` / `deny`, and
/// a text that compiles (errors at the key's line in tools.yaml, with the line and column in the
/// policy).
pub(crate) fn check_rule(cfg: &LoadedConfig, index: usize, rule: &AccessRule) -> Vec<Diagnostic> {
    let at = format!("/policy/rules/{index}");
    let keys = rule.code_keys();
    let Some(code) = keys.first() else {
        return vec![
            cfg.error_at(
                &at,
                "`reason` and `timeout_ms` belong to a rego or cel rule, and this rule has neither",
            )
            .with_hint("add rego, rego_file, cel or cel_file, or remove them"),
        ];
    };
    let mut errors = Vec::new();
    if keys.len() > 1 {
        let names: Vec<&str> = keys.iter().map(|k| k.key).collect();
        errors.push(cfg.error_at(
            &format!("{at}/{}", keys[1].key),
            format!(
                "a rule gives one policy, and this one gives {}",
                names.join(" and ")
            ),
        ));
    }
    if !rule.roles.is_empty() || rule.deny {
        errors.push(
            cfg.error_at(
                &at,
                format!(
                    "a `{}` rule decides by itself: `roles` and `deny` do not go with it",
                    code.key
                ),
            )
            .with_hint("write the role check in the policy, or make it a rule of its own"),
        );
    }
    if rule.timeout_ms == Some(0) {
        errors.push(cfg.error_at(
            &format!("{at}/timeout_ms"),
            "`timeout_ms` must be at least 1",
        ));
    }
    if rule.timeout_ms.is_some() && code.language != Language::Rego {
        errors.push(cfg.error_at(
            &format!("{at}/timeout_ms"),
            "`timeout_ms` bounds a Rego policy; a CEL expression has no loops and needs none",
        ));
    }
    if !errors.is_empty() {
        return errors;
    }
    let pointer = format!("{at}/{}", code.key);
    let base = cfg.path.parent().unwrap_or(Path::new("."));
    let text = match read_text(code, base) {
        Ok(text) => text,
        Err(e) => return vec![cfg.error_at(&pointer, e)],
    };
    let name = if code.is_file() {
        code.value.to_string()
    } else {
        format!("policy.rules[{index}].{}", code.key)
    };
    if let Err(e) = CompiledCode::compile(code.language, &text, &name, None, rule.time_limit()) {
        let message = if !code.language.available() {
            e.message
        } else if code.is_file() {
            match e.location {
                Some(l) => format!(
                    "the {} policy does not compile: {}:{}:{}: {}",
                    code.language.name(),
                    code.value,
                    l.line,
                    l.column,
                    e.message
                ),
                None => format!(
                    "the {} policy `{}` does not compile: {}",
                    code.language.name(),
                    code.value,
                    e.message
                ),
            }
        } else {
            format!("the {} policy does not compile: {e}", code.language.name())
        };
        // A block scalar (`rego: |`) starts on the line after its key, its lines indented as
        // the first: the error's own line and column in tools.yaml.
        let at = match (e.location, code.is_file() || !text.contains('\n')) {
            (Some(inner), false) => {
                let start = cfg.locate(&pointer);
                Location::new(start.line + inner.line - 1, start.column + inner.column - 1)
            }
            _ => cfg.locate(&pointer),
        };
        let d = Diagnostic::error(&cfg.path, Some(at), message);
        return vec![if code.language.available() {
            d
        } else {
            d.with_hint(format!(
                "the toolgate binary has it by default; a library build needs `features = [\"{}\"]` on toolgate (and on toolgate-codegen in build-dependencies)",
                code.language.feature()
            ))
        }];
    }
    Vec::new()
}

#[cfg(test)]
mod tests;

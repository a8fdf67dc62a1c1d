//! `${ENV}` and `${file:...}` interpolation for values that may hold secrets.
//!
//! Syntax, checked when tools.yaml is loaded:
//! * `${NAME}`: the value of environment variable `NAME` (`[A-Za-z_][A-Za-z0-9_]*`); an error
//!   naming `NAME` when it is not set;
//! * `${NAME:-default}`: `default` when `NAME` is unset or empty (as in POSIX shells); the
//!   default is literal text and cannot contain `}`;
//! * `${file:/path/to/secret}`: the contents of that file (UTF-8), read at resolve time, with
//!   one trailing newline (`\n` or `\r\n`) removed: the form of Docker and Kubernetes secrets.
//!   The path is taken as written (relative paths against the process's working directory) and
//!   cannot contain `}`; an error naming the path when it cannot be read;
//! * `$$`: a literal `$`; a `$` not followed by `{` or `$` is literal too.
//!
//! Resolution happens at run time ([`Interpolated::resolve_as`]), never at build time: the
//! generated code and `TOOLS_YAML` only ever contain the raw text (the variable name or the file
//! path, never the secret). It is the one place configured secrets are resolved: what of the
//! value is a secret depends on the field it is configured in ([`Field`]), and every secret is
//! [remembered](crate::secrets::remember) as it is resolved, so that no output shows it.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::secrets::{self, Field};

/// A configuration string that may reference environment variables (`${NAME}`,
/// `${NAME:-default}`, `$$` for `$`) and files (`${file:/run/secrets/token}`). Holds the raw
/// text; [`resolve`](Self::resolve) substitutes the variables and file contents.
///
/// `Debug` shows the raw text only when it references a variable or a file (then the secret
/// itself is not in it); a plain literal, which might be a pasted secret, is shown as
/// `<redacted>`.
///
/// In YAML it is a plain string: `bearer_token: ${GITHUB_TOKEN}`.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(try_from = "String", into = "String")]
#[schemars(
    with = "String",
    description = "A string that may reference environment variables: `${NAME}`, \
                   `${NAME:-default}` (used when NAME is unset or empty), and files: \
                   `${file:/path}` (its contents, one trailing newline removed); `$$` is a \
                   literal `$`. Resolved at run time."
)]
pub struct Interpolated(String);

/// A resolved value that may be a secret: `Debug` and `Display` never show it; read it with
/// [`expose`](Self::expose).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value, for the one place that needs it (a header, an env var of a child process).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The value, consuming the wrapper.
    pub fn into_inner(self) -> String {
        self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Why an [`Interpolated`] value could not be parsed or resolved. Never contains a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InterpolationError {
    /// A referenced variable is not set (and has no `:-default`).
    #[error(
        "environment variable `{name}` is not set (referenced as `${{{name}}}`; \
         set it, or write `${{{name}:-default}}`)"
    )]
    Missing {
        /// The variable's name.
        name: String,
    },
    /// A referenced variable is set but not valid Unicode.
    #[error("environment variable `{name}` is not valid Unicode")]
    NotUnicode {
        /// The variable's name.
        name: String,
    },
    /// The text is not valid interpolation syntax.
    #[error("{0}")]
    Syntax(String),
    /// A `${file:...}` file cannot be read (or is not UTF-8). Names the path, never contents.
    #[error("cannot read secret file `{path}` (referenced as `${{file:{path}}}`): {message}")]
    File {
        /// The path as written.
        path: String,
        /// The OS error.
        message: String,
    },
}

/// One piece of an interpolated string.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece<'a> {
    Text(String),
    Var {
        name: &'a str,
        default: Option<&'a str>,
    },
    File(&'a str),
}

fn parse(raw: &str) -> Result<Vec<Piece<'_>>, InterpolationError> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut rest = raw;
    while let Some(i) = rest.find('$') {
        text.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            text.push('$');
            rest = tail;
        } else if let Some(body) = after.strip_prefix('{') {
            let end = body.find('}').ok_or_else(|| {
                InterpolationError::Syntax(format!(
                    "unterminated `${{` in `{raw}` (write `$$` for a literal `$`)"
                ))
            })?;
            let inner = &body[..end];
            if let Some(path) = inner.strip_prefix("file:") {
                if path.is_empty() {
                    return Err(InterpolationError::Syntax(format!(
                        "`${{file:}}` in `{raw}` names no file (write `${{file:/path}}`)"
                    )));
                }
                if !text.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut text)));
                }
                pieces.push(Piece::File(path));
                rest = &body[end + 1..];
                continue;
            }
            let (name, default) = match inner.split_once(":-") {
                Some((n, d)) => (n, Some(d)),
                None => (inner, None),
            };
            if !is_var_name(name) {
                return Err(InterpolationError::Syntax(format!(
                    "`${{{inner}}}` in `{raw}`: `{name}` is not a variable name \
                     (letters, digits and `_`, not starting with a digit); \
                     the only operator is `:-`"
                )));
            }
            if !text.is_empty() {
                pieces.push(Piece::Text(std::mem::take(&mut text)));
            }
            pieces.push(Piece::Var { name, default });
            rest = &body[end + 1..];
        } else {
            text.push('$');
            rest = after;
        }
    }
    text.push_str(rest);
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    Ok(pieces)
}

fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl Interpolated {
    /// Parses `raw`, checking its syntax.
    ///
    /// # Errors
    /// [`InterpolationError::Syntax`] for an unterminated `${` or a bad variable name.
    pub fn new(raw: impl Into<String>) -> Result<Self, InterpolationError> {
        let raw = raw.into();
        parse(&raw)?;
        Ok(Self(raw))
    }

    /// The text as written in tools.yaml.
    pub fn raw(&self) -> &str {
        &self.0
    }

    /// The names of the variables it references, in order (with repeats).
    pub fn variables(&self) -> Vec<&str> {
        parse(&self.0)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|p| match p {
                Piece::Var { name, .. } => Some(name),
                Piece::Text(_) | Piece::File(_) => None,
            })
            .collect()
    }

    /// The paths of the `${file:...}` references, in order.
    pub fn files(&self) -> Vec<&str> {
        parse(&self.0)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|p| match p {
                Piece::File(path) => Some(path),
                _ => None,
            })
            .collect()
    }

    /// Whether it references no variable and no file (a literal).
    pub fn is_literal(&self) -> bool {
        parse(&self.0)
            .unwrap_or_default()
            .iter()
            .all(|p| matches!(p, Piece::Text(_)))
    }

    /// [`resolve_as`](Self::resolve_as) for a value that may carry secrets by reference
    /// ([`Field::References`]: what its `${NAME}` and `${file:...}` references resolve to is
    /// remembered as a secret).
    ///
    /// # Errors
    /// As [`resolve_as`](Self::resolve_as).
    pub fn resolve(&self) -> Result<Secret, InterpolationError> {
        self.resolve_as(Field::References)
    }

    /// Substitutes the variables from the process environment and reads the `${file:...}`
    /// files; remembers what of the value is a secret in a field of kind `field`
    /// ([`secrets::remember`]): the whole value of a [`Field::Credential`], the resolved
    /// references of a [`Field::References`], the references named like a credential of a
    /// [`Field::Plain`]. Defaults (`${NAME:-default}`) are literal text.
    ///
    /// # Errors
    /// [`InterpolationError::Missing`] naming the first variable that is not set and has no
    /// default; [`InterpolationError::NotUnicode`]; [`InterpolationError::File`] naming a file
    /// that cannot be read.
    pub fn resolve_as(&self, field: Field) -> Result<Secret, InterpolationError> {
        self.try_resolve_with(field, |name| match std::env::var(name) {
            Ok(v) => Ok(Some(v)),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => Err(InterpolationError::NotUnicode {
                name: name.to_string(),
            }),
        })
    }

    /// Substitutes the variables with `lookup` (tests, or a source other than the environment);
    /// `${file:...}` files are read, and secrets remembered, as by [`resolve`](Self::resolve).
    ///
    /// # Errors
    /// [`InterpolationError::Missing`] naming the first variable `lookup` has no value for;
    /// [`InterpolationError::File`].
    pub fn resolve_with(
        &self,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Secret, InterpolationError> {
        self.try_resolve_with(Field::References, |name| Ok(lookup(name)))
    }

    fn try_resolve_with(
        &self,
        field: Field,
        lookup: impl Fn(&str) -> Result<Option<String>, InterpolationError>,
    ) -> Result<Secret, InterpolationError> {
        // A reference resolves to a secret unless the field is plain and its name says nothing.
        let secret_ref = |name: &str| field != Field::Plain || secrets::is_secret_name(name);
        let mut out = String::with_capacity(self.0.len());
        for piece in parse(&self.0)? {
            match piece {
                Piece::Text(t) => out.push_str(&t),
                Piece::File(path) => {
                    let text = read_secret_file(path)?;
                    if secret_ref(path) {
                        secrets::remember(&text);
                    }
                    out.push_str(&text);
                }
                Piece::Var { name, default } => match (lookup(name)?, default) {
                    (Some(v), Some(d)) if v.is_empty() => out.push_str(d),
                    (Some(v), _) => {
                        if secret_ref(name) {
                            secrets::remember(&v);
                        }
                        out.push_str(&v);
                    }
                    (None, Some(d)) => out.push_str(d),
                    (None, None) => {
                        return Err(InterpolationError::Missing {
                            name: name.to_string(),
                        });
                    }
                },
            }
        }
        if field == Field::Credential {
            secrets::remember(&out);
        }
        Ok(Secret(out))
    }
}

/// The contents of a `${file:...}` file, one trailing newline removed.
fn read_secret_file(path: &str) -> Result<String, InterpolationError> {
    let mut text = std::fs::read_to_string(path).map_err(|e| InterpolationError::File {
        path: path.to_string(),
        message: e.to_string(),
    })?;
    if text.ends_with('\n') {
        text.pop();
        if text.ends_with('\r') {
            text.pop();
        }
    }
    Ok(text)
}

impl TryFrom<String> for Interpolated {
    type Error = InterpolationError;
    fn try_from(raw: String) -> Result<Self, Self::Error> {
        Self::new(raw)
    }
}

impl From<Interpolated> for String {
    fn from(v: Interpolated) -> String {
        v.0
    }
}

impl fmt::Debug for Interpolated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_literal() {
            f.write_str("Interpolated(<redacted>)")
        } else {
            f.debug_tuple("Interpolated").field(&self.0).finish()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    fn resolve(raw: &str) -> Result<String, InterpolationError> {
        Interpolated::new(raw)?
            .resolve_with(env)
            .map(Secret::into_inner)
    }

    #[test]
    fn substitutes_defaults_and_escapes() {
        assert_eq!(resolve("Bearer ${TOKEN}").unwrap(), "Bearer s3cret");
        assert_eq!(resolve("${NOPE:-fallback}").unwrap(), "fallback");
        assert_eq!(resolve("${EMPTY:-fallback}").unwrap(), "fallback");
        assert_eq!(resolve("${TOKEN:-x}").unwrap(), "s3cret");
        assert_eq!(resolve("$${TOKEN} costs $5").unwrap(), "${TOKEN} costs $5");
        assert_eq!(resolve("a${TOKEN}b${TOKEN}").unwrap(), "as3cretbs3cret");
        assert_eq!(resolve("${NOPE:-}").unwrap(), "");
    }

    #[test]
    fn missing_variable_is_named() {
        let err = resolve("Bearer ${GITHUB_TOKEN}").unwrap_err();
        assert_eq!(
            err,
            InterpolationError::Missing {
                name: "GITHUB_TOKEN".into()
            }
        );
        let msg = err.to_string();
        assert!(msg.contains("`GITHUB_TOKEN` is not set"), "{msg}");
    }

    #[test]
    fn resolves_from_process_environment() {
        // PATH is set in every test environment; a long random name is not.
        assert!(Interpolated::new("${PATH}").unwrap().resolve().is_ok());
        let err = Interpolated::new("${TOOLGATE_SPEC_TEST_SURELY_UNSET_VAR}")
            .unwrap()
            .resolve()
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("TOOLGATE_SPEC_TEST_SURELY_UNSET_VAR")
        );
    }

    #[test]
    fn syntax_errors() {
        assert!(Interpolated::new("${OPEN").is_err());
        assert!(Interpolated::new("${1X}").is_err());
        assert!(Interpolated::new("${A-B}").is_err());
        assert!(Interpolated::new("${}").is_err());
    }

    #[test]
    fn reads_secret_files() {
        let dir = std::env::temp_dir().join(format!("toolgate-interp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("token");
        std::fs::write(&path, "s3cret-from-file\n\n").unwrap();
        let raw = format!("Bearer ${{file:{}}}", path.display());
        let v = Interpolated::new(raw.clone()).unwrap();
        assert!(!v.is_literal());
        assert!(v.variables().is_empty());
        assert_eq!(v.files(), vec![path.to_str().unwrap()]);
        // one trailing newline is removed, not more
        assert_eq!(resolve(&raw).unwrap(), "Bearer s3cret-from-file\n");
        std::fs::write(&path, "crlf\r\n").unwrap();
        assert_eq!(v.resolve().unwrap().expose(), "Bearer crlf");
        // Debug shows the reference, never the contents
        assert!(format!("{v:?}").contains("${file:"), "{v:?}");
        let missing = format!("${{file:{}}}", dir.join("nope").display());
        let err = resolve(&missing).unwrap_err();
        assert!(matches!(err, InterpolationError::File { .. }), "{err:?}");
        assert!(err.to_string().contains("nope"), "{err}");
        assert!(Interpolated::new("${file:}").is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn what_is_remembered_depends_on_the_field() {
        use crate::secrets::{Field, redact};
        let lookup = |name: &str| -> Result<Option<String>, InterpolationError> {
            Ok(match name {
                "HOME_DIR" => Some("/home/field-test-user".into()),
                "GITHUB_TOKEN" => Some("ghp-field-test-6d1c".into()),
                "OTHER" => Some("field-test-other-77a0".into()),
                _ => None,
            })
        };
        let resolve = |raw: &str, field: Field| {
            Interpolated::new(raw)
                .unwrap()
                .try_resolve_with(field, lookup)
                .unwrap()
        };
        // A credential: the whole value, literal or not, with and without its scheme.
        resolve("literal-credential-5e2b", Field::Credential);
        resolve("Bearer ${OTHER}", Field::Credential);
        assert_eq!(redact("literal-credential-5e2b"), "[redacted]");
        assert_eq!(redact("Bearer field-test-other-77a0"), "[redacted]");
        // A plain field: only references named like a credential.
        resolve("--dir=${HOME_DIR} --token=${GITHUB_TOKEN}", Field::Plain);
        assert_eq!(redact("/home/field-test-user"), "/home/field-test-user");
        assert_eq!(redact("ghp-field-test-6d1c"), "[redacted]");
        // A literal in a field that carries references is no secret.
        resolve("literal-plain-value-0c3d", Field::References);
        assert_eq!(
            redact("literal-plain-value-0c3d"),
            "literal-plain-value-0c3d"
        );
    }

    #[test]
    fn debug_never_shows_secrets() {
        let lit = Interpolated::new("sk-live-123").unwrap();
        assert_eq!(format!("{lit:?}"), "Interpolated(<redacted>)");
        let tpl = Interpolated::new("Bearer ${TOKEN}").unwrap();
        assert_eq!(format!("{tpl:?}"), "Interpolated(\"Bearer ${TOKEN}\")");
        let secret = tpl.resolve_with(env).unwrap();
        assert_eq!(
            format!("{secret:?} {secret}"),
            "Secret(<redacted>) <redacted>"
        );
        assert_eq!(tpl.variables(), vec!["TOKEN"]);
    }
}

//! Parsing the options of `#[tool(...)]` on a function and on its parameters.

use proc_macro2::{Span, TokenStream};
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::{Expr, ExprArray, Lit, LitStr};

/// Options of `#[tool(...)]` on the function.
#[derive(Default)]
pub struct ToolOptions {
    pub name: Option<LitStr>,
    pub description: Option<LitStr>,
    pub title: Option<LitStr>,
    pub category: Option<LitStr>,
    pub tags: Vec<LitStr>,
    pub version: Option<LitStr>,
    /// `timeout = ...` as written (milliseconds or a string like `"30s"`); checked by `valid`
    /// (so that a bad timeout is reported together with the other problems), read by `expand`
    /// through [`ToolOptions::timeout_ms`].
    pub timeout: Option<Lit>,
    pub dangerous: bool,
    pub requires_auth: bool,
    pub idempotent: bool,
    pub read_only: bool,
    pub blocking: Option<Span>,
    /// `extra = "reject" | "strip"`: checked by `valid`.
    pub extra: Option<LitStr>,
}

impl ToolOptions {
    pub fn parse(args: TokenStream) -> syn::Result<Self> {
        let mut o = Self::default();
        let parser = syn::meta::parser(|meta| o.parse_one(&meta));
        parser.parse2(args)?;
        Ok(o)
    }

    fn parse_one(&mut self, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        let key = meta
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        match key.as_str() {
            "name" => self.name = Some(meta.value()?.parse()?),
            "description" => self.description = Some(meta.value()?.parse()?),
            "title" => self.title = Some(meta.value()?.parse()?),
            "category" => self.category = Some(meta.value()?.parse()?),
            "version" => self.version = Some(meta.value()?.parse()?),
            "tags" => self.tags = parse_str_list(meta)?,
            "extra" => self.extra = Some(meta.value()?.parse()?),
            "timeout" | "timeout_ms" => self.timeout = Some(meta.value()?.parse()?),
            "dangerous" => self.dangerous = parse_flag(meta)?,
            "requires_auth" => self.requires_auth = parse_flag(meta)?,
            "idempotent" => self.idempotent = parse_flag(meta)?,
            "read_only" => self.read_only = parse_flag(meta)?,
            "blocking" => {
                if parse_flag(meta)? {
                    self.blocking = Some(
                        meta.path
                            .get_ident()
                            .map_or_else(Span::call_site, |i| i.span()),
                    );
                }
            }
            _ => {
                return Err(meta.error(format!(
                    "unknown #[tool] option `{}`; expected one of: name, description, title, category, tags, version, timeout, dangerous, requires_auth, idempotent, read_only, blocking, extra",
                    quote::ToTokens::to_token_stream(&meta.path)
                )));
            }
        }
        Ok(())
    }

    /// `extra = "strip"`: unknown argument keys are removed instead of refused.
    pub fn strips_extra(&self) -> bool {
        self.extra.as_ref().is_some_and(|e| e.value() == "strip")
    }

    /// The timeout in milliseconds, if one is set.
    ///
    /// # Errors
    /// A malformed timeout, with the span of its value.
    pub fn timeout_ms(&self) -> syn::Result<Option<u64>> {
        self.timeout.as_ref().map(parse_timeout).transpose()
    }
}

/// `flag` or `flag = true|false`.
fn parse_flag(meta: &ParseNestedMeta<'_>) -> syn::Result<bool> {
    if meta.input.peek(syn::Token![=]) {
        let b: syn::LitBool = meta.value()?.parse()?;
        Ok(b.value)
    } else {
        Ok(true)
    }
}

/// `tags = ["a", "b"]` or `tags("a", "b")`.
fn parse_str_list(meta: &ParseNestedMeta<'_>) -> syn::Result<Vec<LitStr>> {
    let mut out = Vec::new();
    if meta.input.peek(syn::Token![=]) {
        let arr: ExprArray = meta.value()?.parse()?;
        for e in arr.elems {
            match e {
                Expr::Lit(syn::ExprLit {
                    lit: Lit::Str(s), ..
                }) => out.push(s),
                other => return Err(syn::Error::new_spanned(other, "expected a string literal")),
            }
        }
    } else {
        meta.parse_nested_meta(|_| Err(meta.error("expected `tags = [\"a\", \"b\"]`")))?;
    }
    Ok(out)
}

/// `timeout = 5000` (milliseconds) or `timeout = "500ms" | "30s" | "2m" | "1h"`.
fn parse_timeout(lit: &Lit) -> syn::Result<u64> {
    let ms = match lit {
        Lit::Int(i) => i.base10_parse::<u64>()?,
        Lit::Str(s) => {
            let text = s.value();
            let t = text.trim();
            let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
            let (num, unit) = t.split_at(split);
            let n: u64 = num.parse().map_err(|_| {
                syn::Error::new(
                    s.span(),
                    format!("invalid timeout `{text}`: expected e.g. \"500ms\", \"30s\", \"2m\""),
                )
            })?;
            let factor = match unit.trim() {
                "ms" => 1,
                "s" => 1000,
                "" => {
                    return Err(syn::Error::new(
                        s.span(),
                        format!(
                            "timeout `{text}` has no unit: write e.g. \"{t}s\" or \"{t}ms\" (a bare integer, without quotes, is milliseconds)"
                        ),
                    ));
                }
                "m" | "min" => 60_000,
                "h" => 3_600_000,
                other => {
                    return Err(syn::Error::new(
                        s.span(),
                        format!("unknown timeout unit `{other}`: use ms, s, m or h"),
                    ));
                }
            };
            n.checked_mul(factor)
                .ok_or_else(|| syn::Error::new(s.span(), "timeout is too large"))?
        }
        other => {
            return Err(syn::Error::new_spanned(
                other,
                "expected milliseconds or a string like \"30s\"",
            ));
        }
    };
    if ms == 0 {
        return Err(syn::Error::new_spanned(
            lit,
            "a timeout of 0 would fail every call; give a positive duration, e.g. \"30s\"",
        ));
    }
    Ok(ms)
}

/// Options of `#[tool(...)]` on an argument parameter.
#[derive(Default)]
pub struct ParamOptions {
    pub default: Option<Expr>,
    pub rename: Option<LitStr>,
}

impl ParamOptions {
    pub fn parse_into(&mut self, attr: &syn::Attribute) -> syn::Result<()> {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("default") {
                self.default = Some(meta.value()?.parse()?);
                Ok(())
            } else if meta.path.is_ident("rename") {
                self.rename = Some(meta.value()?.parse()?);
                Ok(())
            } else {
                Err(meta.error(
                    "unknown parameter option; expected `default = <expr>` or `rename = \"name\"`",
                ))
            }
        })
    }
}

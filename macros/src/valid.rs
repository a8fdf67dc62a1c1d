//! Checks on the model. Every error carries the span of what the user wrote wrong.

use std::collections::HashMap;

use syn::Type;

use crate::ast::{Param, ToolFn};

pub fn check(tool: &ToolFn) -> syn::Result<()> {
    let mut errors = Errors::default();
    let sig = &tool.item.sig;
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.add(syn::Error::new_spanned(
            &sig.generics,
            "#[tool] functions cannot be generic: the dispatch table calls one concrete function per tool; write a non-generic wrapper",
        ));
    }
    if let Some(u) = &sig.unsafety {
        errors.add(syn::Error::new_spanned(
            u,
            "#[tool] functions cannot be `unsafe`",
        ));
    }
    if let Some(v) = &sig.variadic {
        errors.add(syn::Error::new_spanned(
            v,
            "#[tool] functions cannot be variadic",
        ));
    }
    if let Some(abi) = &sig.abi {
        errors.add(syn::Error::new_spanned(
            abi,
            "#[tool] functions cannot have an `extern` ABI",
        ));
    }
    if let Err(msg) = check_name(&tool.name) {
        errors.add(syn::Error::new(tool.name_span, msg));
    }
    if let Err(e) = tool.options.timeout_ms() {
        errors.add(e);
    }
    if let Some(e) = &tool.options.extra
        && !matches!(e.value().as_str(), "reject" | "strip")
    {
        errors.add(syn::Error::new(
            e.span(),
            format!(
                "`extra = \"{}\"` is not an option: expected \"reject\" (the default: unknown argument keys are an error) or \"strip\" (they are removed, with a warning)",
                e.value()
            ),
        ));
    }
    if let Some(v) = &tool.options.version
        && let Err(e) = semver::Version::parse(&v.value())
    {
        errors.add(syn::Error::new(
            v.span(),
            format!(
                "`{}` is not a semantic version ({e}); expected MAJOR.MINOR.PATCH, e.g. \"1.2.0\"",
                v.value()
            ),
        ));
    }
    if let (Some(span), Some(_)) = (tool.options.blocking, &sig.asyncness) {
        errors.add(syn::Error::new(
            span,
            "`blocking` is for synchronous functions (they run on the blocking thread pool); an `async fn` must not block",
        ));
    }
    if let Some(ReturnImpl(ty)) = return_impl(&tool.item.sig.output) {
        errors.add(syn::Error::new_spanned(
            ty,
            "#[tool] functions must return a concrete type (`impl Trait` cannot be serialized or described)",
        ));
    }
    let mut contexts = 0;
    let mut seen: HashMap<&str, ()> = HashMap::new();
    for p in &tool.params {
        match p {
            Param::Context { span, .. } => {
                contexts += 1;
                if contexts > 1 {
                    errors.add(syn::Error::new(
                        *span,
                        "a #[tool] function takes at most one `&ToolContext`",
                    ));
                }
            }
            Param::State { .. } => {}
            Param::Arg(a) => {
                if let Some(span) = a.bad_pattern {
                    errors.add(syn::Error::new(
                        span,
                        "argument parameters must be plain names (`name: Type`); destructuring patterns are only for `State(x): State<T>`",
                    ));
                }
                if let Some(msg) = unsupported_arg_type(&a.ty) {
                    errors.add(syn::Error::new_spanned(&a.ty, msg));
                }
                if seen.insert(a.json_name.as_str(), ()).is_some() {
                    errors.add(syn::Error::new(
                        a.json_name_span,
                        format!("duplicate argument name `{}`: every argument of a tool needs its own name", a.json_name),
                    ));
                }
            }
        }
    }
    errors.finish()
}

/// The exported-name rule `^[a-zA-Z0-9_-]{1,64}$` (OpenAI and Anthropic).
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("tool name is empty; names must match ^[a-zA-Z0-9_-]{1,64}$".into());
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(format!(
            "tool name `{name}` contains {c:?}; names must match ^[a-zA-Z0-9_-]{{1,64}}$ (the OpenAI and Anthropic rule)"
        ));
    }
    let len = name.chars().count();
    if len > 64 {
        return Err(format!(
            "tool name `{name}` is {len} characters long; names must match ^[a-zA-Z0-9_-]{{1,64}}$ (the OpenAI and Anthropic rule); set a shorter one with #[tool(name = \"...\")]"
        ));
    }
    Ok(())
}

struct ReturnImpl<'a>(&'a Type);

fn return_impl(ret: &syn::ReturnType) -> Option<ReturnImpl<'_>> {
    match ret {
        syn::ReturnType::Type(_, ty) if matches!(**ty, Type::ImplTrait(_)) => Some(ReturnImpl(ty)),
        _ => None,
    }
}

fn unsupported_arg_type(ty: &Type) -> Option<&'static str> {
    match ty {
        Type::Reference(_) => Some(
            "tool arguments are decoded from JSON and must be owned types (e.g. `String` instead of `&str`, `Vec<T>` instead of `&[T]`); only `&ToolContext` may be borrowed",
        ),
        Type::ImplTrait(_) => Some(
            "tool arguments need a concrete type that can be deserialized and described (not `impl Trait`)",
        ),
        Type::TraitObject(_) => Some(
            "tool arguments need a concrete type that can be deserialized and described (not `dyn Trait`)",
        ),
        Type::Ptr(_) => Some("tool arguments cannot be raw pointers"),
        Type::BareFn(_) => {
            Some("tool arguments cannot be function pointers: they are decoded from JSON")
        }
        Type::Infer(_) => Some("tool arguments need an explicit type"),
        _ => None,
    }
}

#[derive(Default)]
struct Errors(Option<syn::Error>);

impl Errors {
    fn add(&mut self, e: syn::Error) {
        match &mut self.0 {
            Some(a) => a.combine(e),
            None => self.0 = Some(e),
        }
    }
    fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}

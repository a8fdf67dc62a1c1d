//! The model of a `#[tool]` function, built from the parsed `syn::ItemFn`.

use proc_macro2::Span;
use syn::{Attribute, FnArg, GenericArgument, Ident, ItemFn, Pat, PathArguments, ReturnType, Type};

use crate::attr::{ParamOptions, ToolOptions};

/// A `#[tool]` function.
pub struct ToolFn {
    /// The function, with the attributes we consume removed from its parameters.
    pub item: ItemFn,
    pub options: ToolOptions,
    /// The tool name (option `name`, else the function name) and the span to blame for it.
    pub name: String,
    pub name_span: Span,
    /// The doc comment lines of the function.
    pub docs: Vec<String>,
    pub params: Vec<Param>,
    pub ret: Return,
}

/// One parameter, by role.
#[allow(clippy::large_enum_variant)] // a handful per function, built once per expansion
pub enum Param {
    /// `&ToolContext` (or an owned `ToolContext`).
    Context { by_ref: bool, span: Span },
    /// `State<T>`: `ty` is `T`.
    State { ty: Type },
    /// An argument of the input schema.
    Arg(ArgParam),
}

/// An argument parameter.
pub struct ArgParam {
    pub ident: Ident,
    /// The JSON name (after `rename`).
    pub json_name: String,
    pub json_name_span: Span,
    pub ty: Type,
    /// `#[doc]`, `#[serde]` and `#[schemars]` attributes, moved to the generated field.
    pub field_attrs: Vec<Attribute>,
    pub default: Option<syn::Expr>,
    /// The parameter's `#[serde(...)]` attributes decode it without `ty: Deserialize`
    /// (`with`, `deserialize_with`, `skip`, `skip_deserializing`), so that bound is not required.
    pub custom_deserialize: bool,
    /// Set when the parameter is not a plain identifier pattern.
    pub bad_pattern: Option<Span>,
}

/// The return type, by shape.
#[allow(clippy::large_enum_variant)] // one per function
pub enum Return {
    /// No return type: `()`.
    Unit,
    /// `T`.
    Plain(Type),
    /// `Result<T, E>` (or a one-argument `Result<T>` alias): `ok` is `T`, `err` is `E` when
    /// written.
    Result { ok: Type, err: Option<Type> },
}

impl ToolFn {
    pub fn from_item(mut item: ItemFn, options: ToolOptions) -> syn::Result<Self> {
        let fn_name = item.sig.ident.unraw().to_string();
        let (name, name_span) = match &options.name {
            Some(lit) => (lit.value(), lit.span()),
            None => (fn_name, item.sig.ident.span()),
        };
        let docs = doc_lines(&item.attrs);
        let mut params = Vec::new();
        let mut errors: Option<syn::Error> = None;
        for input in &mut item.sig.inputs {
            match input {
                FnArg::Receiver(r) => push(
                    &mut errors,
                    syn::Error::new_spanned(
                        &*r,
                        "#[tool] functions cannot take `self`: make it a free function and pass shared data as `State<T>`",
                    ),
                ),
                FnArg::Typed(pt) => match Param::from_pat_type(pt) {
                    Ok(p) => params.push(p),
                    Err(e) => push(&mut errors, e),
                },
            }
        }
        if let Some(e) = errors {
            return Err(e);
        }
        let ret = match &item.sig.output {
            ReturnType::Default => Return::Unit,
            ReturnType::Type(_, ty) => match result_ok_type(ty) {
                Some((ok, err)) => Return::Result { ok, err },
                None => Return::Plain((**ty).clone()),
            },
        };
        Ok(Self {
            item,
            options,
            name,
            name_span,
            docs,
            params,
            ret,
        })
    }

    /// Argument parameters, in order.
    pub fn args(&self) -> impl Iterator<Item = &ArgParam> {
        self.params.iter().filter_map(|p| match p {
            Param::Arg(a) => Some(a),
            _ => None,
        })
    }

    /// The lone argument parameter named `args`, whose type *is* the arguments object.
    pub fn flat_args(&self) -> Option<&ArgParam> {
        let mut args = self.args();
        match (args.next(), args.next()) {
            (Some(a), None) if a.ident == "args" && a.default.is_none() => Some(a),
            _ => None,
        }
    }

    /// The `T` of every `State<T>` parameter.
    pub fn state_types(&self) -> impl Iterator<Item = &Type> {
        self.params.iter().filter_map(|p| match p {
            Param::State { ty } => Some(ty),
            _ => None,
        })
    }
}

fn push(acc: &mut Option<syn::Error>, e: syn::Error) {
    match acc {
        Some(a) => a.combine(e),
        None => *acc = Some(e),
    }
}

impl Param {
    fn from_pat_type(pt: &mut syn::PatType) -> syn::Result<Self> {
        if let Some((by_ref, span)) = context_type(&pt.ty) {
            pt.attrs.retain(|a| !is_ours(a));
            return Ok(Self::Context { by_ref, span });
        }
        if let Some(ty) = state_inner(&pt.ty) {
            pt.attrs.retain(|a| !is_ours(a));
            return Ok(Self::State { ty });
        }
        let mut opts = ParamOptions::default();
        let mut field_attrs = Vec::new();
        let mut kept = Vec::new();
        for a in pt.attrs.drain(..) {
            if a.path().is_ident("tool") {
                opts.parse_into(&a)?;
            } else if a.path().is_ident("doc")
                || a.path().is_ident("serde")
                || a.path().is_ident("schemars")
            {
                field_attrs.push(a);
            } else {
                kept.push(a);
            }
        }
        pt.attrs = kept;
        let (ident, bad_pattern) = match &*pt.pat {
            Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                (pi.ident.clone(), None)
            }
            other => (
                Ident::new("__toolgate_bad_pattern", Span::call_site()),
                Some(syn::spanned::Spanned::span(other)),
            ),
        };
        let custom_deserialize = field_attrs.iter().any(decodes_without_deserialize);
        let (json_name, json_name_span) = match &opts.rename {
            Some(l) => (l.value(), l.span()),
            None => (ident.unraw().to_string(), ident.span()),
        };
        Ok(Self::Arg(ArgParam {
            ident,
            json_name,
            json_name_span,
            ty: (*pt.ty).clone(),
            field_attrs,
            default: opts.default,
            custom_deserialize,
            bad_pattern,
        }))
    }
}

/// `#[serde(with = ..)]`, `deserialize_with`, `skip` or `skip_deserializing`: serde decodes (or
/// skips) the field without `Deserialize` on its type.
fn decodes_without_deserialize(attr: &Attribute) -> bool {
    if !attr.path().is_ident("serde") {
        return false;
    }
    let mut found = false;
    // Malformed serde attributes are serde's to report; here they only mean "not found".
    let _ = attr.parse_nested_meta(|meta| {
        if ["with", "deserialize_with", "skip", "skip_deserializing"]
            .iter()
            .any(|k| meta.path.is_ident(k))
        {
            found = true;
        }
        if meta.input.peek(syn::Token![=]) {
            let _: syn::Expr = meta.value()?.parse()?;
        } else if meta.input.peek(syn::token::Paren) {
            let _: proc_macro2::Group = meta.input.parse()?;
        }
        Ok(())
    });
    found
}

trait Unraw {
    fn unraw(&self) -> Ident;
}
impl Unraw for Ident {
    fn unraw(&self) -> Ident {
        syn::ext::IdentExt::unraw(self)
    }
}

fn is_ours(a: &Attribute) -> bool {
    a.path().is_ident("tool") || a.path().is_ident("doc")
}

fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(tp) if tp.qself.is_none() => tp.path.segments.last(),
        Type::Group(g) => last_segment(&g.elem),
        Type::Paren(p) => last_segment(&p.elem),
        _ => None,
    }
}

/// `&ToolContext` → `(true, span)`, `ToolContext` → `(false, span)`.
fn context_type(ty: &Type) -> Option<(bool, Span)> {
    match ty {
        Type::Reference(r) if r.mutability.is_none() => {
            context_type(&r.elem).map(|(_, s)| (true, s))
        }
        _ => last_segment(ty)
            .filter(|s| s.ident == "ToolContext" && s.arguments.is_none())
            .map(|s| (false, s.ident.span())),
    }
}

/// `State<T>` → `T`.
fn state_inner(ty: &Type) -> Option<Type> {
    let seg = last_segment(ty).filter(|s| s.ident == "State")?;
    first_type_arg(&seg.arguments)
}

fn first_type_arg(args: &PathArguments) -> Option<Type> {
    match args {
        PathArguments::AngleBracketed(a) => a.args.iter().find_map(|g| match g {
            GenericArgument::Type(t) => Some(t.clone()),
            _ => None,
        }),
        _ => None,
    }
}

/// `Result<T, E>` → `(T, Some(E))`, `xx::Result<T>` → `(T, None)`.
fn result_ok_type(ty: &Type) -> Option<(Type, Option<Type>)> {
    let seg = last_segment(ty).filter(|s| s.ident == "Result")?;
    let ok = first_type_arg(&seg.arguments)?;
    let err = match &seg.arguments {
        PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter_map(|g| match g {
                GenericArgument::Type(t) => Some(t.clone()),
                _ => None,
            })
            .nth(1),
        _ => None,
    };
    Some((ok, err))
}

fn doc_lines(attrs: &[Attribute]) -> Vec<String> {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

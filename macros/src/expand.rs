//! Writing the items `#[tool]` adds next to the function (see docs/internals.md).

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{LitStr, Type};

use crate::ast::{ArgParam, Param, Return, ToolFn};

pub fn expand(tool: &ToolFn) -> TokenStream {
    let item = &tool.item;
    let fn_ident = &item.sig.ident;
    let base = syn::ext::IdentExt::unraw(fn_ident);
    let vis = &item.vis;
    let tool_ident = format_ident!("__tool_{}", base);
    let args_ident = format_ident!("__ToolArgs_{}", base);
    let name = &tool.name;
    let tg = quote!(::toolgate::__private);

    let (args_ty, args_struct, default_fns) = match tool.flat_args() {
        Some(a) => (
            a.ty.to_token_stream(),
            TokenStream::new(),
            TokenStream::new(),
        ),
        None => {
            let (s, d) = args_struct(tool, &args_ident);
            (args_ident.to_token_stream(), s, d)
        }
    };
    let args_ty_spanned = match tool.flat_args() {
        Some(a) => quote_spanned!(a.ty.span()=> #args_ty),
        None => args_ty.clone(),
    };

    // A lone `args` parameter whose type is not an object (an enum, a string) is wrapped as
    // `{"args": T}`, decided once from its schema.
    let (input_schema, wrapped, flat_fn) = if tool.flat_args().is_some() {
        (
            quote!(#tg::flat_input_schema::<#args_ty_spanned>().0),
            quote!(Self::__flat_wrapped()),
            quote! {
                #[doc(hidden)]
                fn __flat_wrapped() -> bool {
                    static WRAPPED: ::std::sync::OnceLock<bool> = ::std::sync::OnceLock::new();
                    *WRAPPED.get_or_init(|| #tg::flat_input_schema::<#args_ty_spanned>().1)
                }
            },
        )
    } else {
        (
            quote!(#tg::input_schema::<#args_ty_spanned>()),
            quote!(false),
            TokenStream::new(),
        )
    };

    // One `T: Deserialize` check per argument type, spanned at the type: the one error a user sees
    // for an argument that cannot be decoded (the args struct's derive defers to it, see
    // `args_struct`).
    let arg_checks = tool
        .args()
        .filter(|a| !a.custom_deserialize || tool.flat_args().is_some())
        .map(|a| {
            let ty = &a.ty;
            quote_spanned! {ty.span()=>
                const _: () = ::toolgate::__private::assert_argument::<#ty>();
            }
        });

    let ok_ty: Type = match &tool.ret {
        Return::Unit => syn::parse_quote!(()),
        Return::Plain(t) | Return::Result { ok: t, .. } => t.clone(),
    };

    // The result type must be `Serialize`: one check, spanned at the type the user wrote (the
    // conversion itself falls back quietly, see `ViaUnserializable`).
    let return_check = match &tool.ret {
        Return::Unit => TokenStream::new(),
        Return::Plain(t) | Return::Result { ok: t, .. } => quote_spanned! {t.span()=>
            const _: () = ::toolgate::__private::assert_return::<#t>();
        },
    };

    let description = match &tool.options.description {
        Some(d) => quote!(::std::string::String::from(#d)),
        None => {
            let lines = tool
                .docs
                .iter()
                .map(|l| LitStr::new(l, proc_macro2::Span::call_site()));
            quote!(#tg::doc_text(&[#(#lines),*]))
        }
    };
    let descriptor = descriptor_fields(tool);

    let state_bounds = tool.state_types().map(|t| quote!(+ #tg::Provides<#t>));
    let mut state_lets = Vec::new();
    let mut call_args = Vec::new();
    let blocking = tool.options.blocking.is_some();
    let flat = tool.flat_args().is_some();
    for (i, p) in tool.params.iter().enumerate() {
        match p {
            Param::Context { by_ref, .. } => {
                let ctx = if blocking {
                    quote!(&__ctx)
                } else {
                    quote!(&ctx)
                };
                call_args.push(if *by_ref {
                    ctx
                } else {
                    quote!(::core::clone::Clone::clone(#ctx))
                });
            }
            Param::State { ty } => {
                let v = format_ident!("__state_{}", i);
                state_lets.push(quote! {
                    let #v = ::toolgate::State(::std::sync::Arc::clone(<S as #tg::Provides<#ty>>::provide(__state)));
                });
                call_args.push(v.to_token_stream());
            }
            Param::Arg(a) if flat => {
                let _ = a;
                call_args.push(quote!(__args));
            }
            Param::Arg(a) => {
                let id = &a.ident;
                call_args.push(quote!(__args.#id));
            }
        }
    }
    let await_ = item.sig.asyncness.map(|_| quote!(.await));
    // A plain `fn` (not `async`, not `blocking`) runs inline: its result is ready at once.
    let inline = !blocking && item.sig.asyncness.is_none();
    let call = if blocking {
        quote! {
            {
                let __ctx = ::core::clone::Clone::clone(&ctx);
                #tg::tokio::task::spawn_blocking(move || #fn_ident(#(#call_args),*))
                    .await
                    .map_err(|e| #tg::join_error(#name, e))?
            }
        }
    } else {
        quote!(#fn_ident(#(#call_args),*) #await_)
    };
    let convert_ok = quote! {
        {
            #[allow(unused_imports)]
            use #tg::{ViaToolOutput as _, ViaSchema as _, ViaSerialize as _, ViaUnserializable as _};
            (&&&&#tg::OutTag::<#ok_ty>::new()).to_output()
        }
    };
    let convert = match &tool.ret {
        Return::Result { err, .. } => {
            // An error type that converts to nothing fails here; blame the `E` the user wrote.
            let to_tool_error = syn::Ident::new(
                "to_tool_error",
                err.as_ref()
                    .map_or_else(proc_macro2::Span::call_site, Spanned::span),
            );
            quote! {
                match __ret {
                    ::core::result::Result::Ok(v) => ::core::result::Result::Ok(#convert_ok(v, Self::__wrap())),
                    ::core::result::Result::Err(e) => ::core::result::Result::Err({
                        #[allow(unused_imports)]
                        use #tg::{ErrViaInto as _, ErrViaStd as _, ErrViaDisplay as _};
                        (&&&#tg::ErrTag::of(&e)).#to_tool_error()(e)
                    }),
                }
            }
        }
        _ => quote!(::core::result::Result::Ok(#convert_ok(__ret, Self::__wrap()))),
    };

    let body = if inline {
        quote! {
            let __args = match __decoded {
                ::core::result::Result::Ok(a) => a,
                ::core::result::Result::Err(e) => return ::toolgate::ToolFuture::err(e),
            };
            let __ret = #call;
            ::toolgate::ToolFuture::ready(#convert)
        }
    } else {
        quote! {
            ::toolgate::ToolFuture::new(async move {
                let __args = __decoded?;
                let __ret = #call;
                #convert
            })
        }
    };

    quote! {
        #item

        #args_struct
        #default_fns
        #(#arg_checks)*
        #return_check

        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        #vis struct #tool_ident;

        impl #tg::StaticTool for #tool_ident {
            const NAME: &'static str = #name;
            fn descriptor() -> ::toolgate::ToolDescriptor {
                ::toolgate::ToolDescriptor {
                    name: ::std::string::String::from(#name),
                    description: #description,
                    input_schema: #input_schema,
                    output_schema: Self::__output_schema().map(|(s, _)| s),
                    #descriptor
                }
            }
        }

        #[allow(private_bounds, private_interfaces, clippy::all)]
        impl #tool_ident {
            #[doc(hidden)]
            fn __output_schema() -> ::core::option::Option<(#tg::serde_json::Value, bool)> {
                #[allow(unused_imports)]
                use #tg::{ViaToolOutput as _, ViaSchema as _, ViaSerialize as _, ViaUnserializable as _};
                (&&&&#tg::OutTag::<#ok_ty>::new()).output_schema()
            }

            #flat_fn

            #[doc(hidden)]
            fn __wrap() -> ::core::option::Option<bool> {
                static WRAP: ::std::sync::OnceLock<::core::option::Option<bool>> = ::std::sync::OnceLock::new();
                *WRAP.get_or_init(|| Self::__output_schema().map(|(_, w)| w))
            }

            /// Decodes `args`, calls the function, converts its result (generated by `#[tool]`):
            /// a plain `fn` runs here and its result is ready; an `async` or `blocking` one
            /// runs in the returned future, which owns what it needs.
            #[allow(unused_variables, unused_mut)]
            pub fn invoke<S>(
                __state: &S,
                args: #tg::serde_json::Value,
                ctx: ::toolgate::ToolContext,
            ) -> ::toolgate::ToolFuture<'static>
            where
                S: ::core::marker::Sync #(#state_bounds)*,
            {
                let __decoded = {
                    #[allow(unused_imports)]
                    use #tg::{DecodeViaSerde as _, DecodeUnavailable as _};
                    (&&#tg::DecodeTag::<#args_ty_spanned>::new()).decode(#name, args, #wrapped)
                };
                #(#state_lets)*
                #body
            }
        }
    }
}

/// The descriptor fields after name/description/schemas.
fn descriptor_fields(tool: &ToolFn) -> TokenStream {
    let o = &tool.options;
    let opt_str = |l: &Option<LitStr>| match l {
        Some(l) => quote!(::core::option::Option::Some(::std::string::String::from(#l))),
        None => quote!(::core::option::Option::None),
    };
    let opt_true = |b: bool| {
        if b {
            quote!(::core::option::Option::Some(true))
        } else {
            quote!(::core::option::Option::None)
        }
    };
    let title = opt_str(&o.title);
    let category = opt_str(&o.category);
    let version = opt_str(&o.version);
    let tags = &o.tags;
    let read_only = opt_true(o.read_only);
    let idempotent = opt_true(o.idempotent || o.read_only);
    let destructive = opt_true(o.dangerous);
    // `valid::check` has reported a malformed timeout already.
    let timeout = match o.timeout_ms().ok().flatten() {
        Some(ms) => {
            quote!(::core::option::Option::Some(::core::time::Duration::from_millis(#ms)))
        }
        None => quote!(::core::option::Option::None),
    };
    let dangerous = o.dangerous;
    let requires_auth = o.requires_auth;
    let blocking = o.blocking.is_some();
    let extra = if o.strips_extra() {
        quote!(::toolgate::ExtraArguments::Strip)
    } else {
        quote!(::toolgate::ExtraArguments::Reject)
    };
    quote! {
        annotations: ::toolgate::ToolAnnotations {
            title: #title,
            read_only_hint: #read_only,
            destructive_hint: #destructive,
            idempotent_hint: #idempotent,
            ..::core::default::Default::default()
        },
        source: ::std::string::String::from("local"),
        category: #category,
        tags: ::std::vec![#(::std::string::String::from(#tags)),*],
        version: #version,
        timeout: #timeout,
        dangerous: #dangerous,
        requires_auth: #requires_auth,
        blocking: #blocking,
        extra_arguments: #extra,
    }
}

/// The generated arguments struct and the functions behind `#[tool(default = ...)]`.
fn args_struct(tool: &ToolFn, args_ident: &syn::Ident) -> (TokenStream, TokenStream) {
    let base = syn::ext::IdentExt::unraw(&tool.item.sig.ident);
    let mut fields = Vec::new();
    let mut default_fns = Vec::new();
    for a in tool.args() {
        let ArgParam {
            ident,
            json_name,
            ty,
            field_attrs,
            default,
            ..
        } = a;
        let mut attrs: Vec<TokenStream> =
            field_attrs.iter().map(ToTokens::to_token_stream).collect();
        if let Some(expr) = default {
            let f = format_ident!(
                "__toolgate_default_{}_{}",
                base,
                syn::ext::IdentExt::unraw(ident)
            );
            let fname = LitStr::new(&f.to_string(), f.span());
            default_fns.push(quote! {
                #[doc(hidden)]
                #[allow(non_snake_case)]
                fn #f() -> #ty { #expr }
            });
            attrs.push(quote!(#[serde(default = #fname)]));
        }
        if syn::ext::IdentExt::unraw(ident) != json_name {
            attrs.push(quote!(#[serde(rename = #json_name)]));
        }
        fields.push(quote_spanned! {ty.span()=>
            #(#attrs)*
            #ident: #ty
        });
    }
    // The derived `Deserialize` is bounded on every field type (`T: Deserialize<'de>`, not a
    // global bound, so the derive's body type-checks either way): a type that is not
    // `Deserialize` is reported once, by the check `expand` puts at the parameter's type, not
    // three times inside serde's generated code.
    let bounds = tool
        .args()
        .filter(|a| !a.custom_deserialize)
        .map(|a| {
            let ty = &a.ty;
            quote!(#ty: ::toolgate::__private::serde::Deserialize<'de>).to_string()
        })
        .collect::<Vec<_>>();
    let bound_attr = if bounds.is_empty() {
        TokenStream::new()
    } else {
        let bounds = LitStr::new(&bounds.join(", "), proc_macro2::Span::call_site());
        quote!(#[serde(bound(deserialize = #bounds))])
    };
    let s = quote! {
        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        #[derive(::toolgate::__private::serde::Deserialize, ::toolgate::__private::schemars::JsonSchema)]
        #[serde(crate = "::toolgate::__private::serde", deny_unknown_fields)]
        #bound_attr
        #[schemars(crate = "::toolgate::__private::schemars")]
        struct #args_ident {
            #(#fields,)*
        }
    };
    (s, quote!(#(#default_fns)*))
}

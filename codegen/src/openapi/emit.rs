//! The generated code of the OpenAPI sources compiled in: one `.source_with(..)` builder call per
//! source (the conversion embedded as JSON next to the generated file, the tools.yaml entry read
//! back from `TOOLS_YAML` at run time so that `${ENV}` secrets are resolved then, never baked
//! in), and the typed face: a module per source with one argument struct and one `async fn` per
//! tool, each calling the tool by name through `Toolset::call` so that every policy applies.

use std::collections::BTreeSet;

use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;
use serde_json::Value;

use super::OpenApiSourceInfo;

/// The `.source_with(..)` call that builds `source` when the toolset is built.
pub(crate) fn builder_call(source: &OpenApiSourceInfo) -> Result<TokenStream, String> {
    let id = &source.id;
    let file = source.json_file();
    let hook = match &source.entry.hook {
        Some(path) => {
            let path: syn::Path =
                syn::parse_str(path).map_err(|e| format!("`{path}` is not a Rust path: {e}"))?;
            // A `static` (or `const`) implementing `OpenApiHook`; `&'static T` implements it
            // too, and the runtime takes an `Arc<dyn OpenApiHook>`.
            Some(quote!(.hook(::std::sync::Arc::new(&#path))))
        }
        None => None,
    };
    Ok(quote! {
        .source_with(|_| {
            let conversion = ::toolgate::__private::embedded_openapi(#id, ::core::include_str!(#file))?;
            let entry = __toolgate_openapi_entry(#id)?;
            let source = ::toolgate::OpenApiSource::builder(#id, conversion)
                .config(&entry)
                #hook
                .build()?;
            ::core::result::Result::Ok(
                ::std::sync::Arc::new(source) as ::std::sync::Arc<dyn ::toolgate::ToolSource>
            )
        })
    })
}

/// The items every file with a compiled OpenAPI source has: the lookup of an entry in
/// `TOOLS_YAML` (parsed once) and, with a typed source, the call the typed functions share.
pub(crate) fn shared_items(config_name: &str, typed: bool) -> TokenStream {
    let call = typed.then(|| {
        quote! {
            /// What every typed OpenAPI function does: the arguments as JSON, then
            /// `Toolset::call` by the tool's full name (every policy applies).
            #[doc(hidden)]
            pub async fn __toolgate_typed_call(
                toolset: &::toolgate::Toolset,
                name: &'static str,
                args: ::core::result::Result<::toolgate::serde_json::Value, ::toolgate::serde_json::Error>,
            ) -> ::core::result::Result<::toolgate::ToolOutput, ::toolgate::ToolError> {
                match args {
                    ::core::result::Result::Ok(args) => toolset.call(name, args).await,
                    ::core::result::Result::Err(e) => ::core::result::Result::Err(
                        ::toolgate::ToolError::internal(::std::format!("`{name}`: the arguments cannot be serialized: {e}")),
                    ),
                }
            }
        }
    });
    quote! {
        /// The `tools.openapi` entry `id` of `TOOLS_YAML`, read at run time (its `${ENV}`
        /// secrets are resolved by the source, never at build time).
        #[doc(hidden)]
        fn __toolgate_openapi_entry(
            id: &str,
        ) -> ::core::result::Result<::toolgate::model::config::OpenApiSource, ::toolgate::BuildError> {
            static CONFIG: ::std::sync::OnceLock<
                ::core::result::Result<::toolgate::model::config::ToolsConfig, ::std::string::String>,
            > = ::std::sync::OnceLock::new();
            let config = CONFIG.get_or_init(|| {
                ::toolgate::model::config::ToolsConfig::from_yaml_str(TOOLS_YAML, ::std::path::Path::new(#config_name))
                    .map(|loaded| loaded.config)
                    .map_err(|e| e.to_string())
            });
            let fail = |message: ::std::string::String| ::toolgate::BuildError::Source {
                source_id: ::std::string::String::from(id),
                message,
            };
            match config {
                ::core::result::Result::Ok(config) => config
                    .tools
                    .openapi
                    .iter()
                    .find(|entry| entry.id == id)
                    .cloned()
                    .ok_or_else(|| fail(::std::format!("no `tools.openapi` entry `{id}` in the embedded tools.yaml"))),
                ::core::result::Result::Err(e) => ::core::result::Result::Err(fail(e.clone())),
            }
        }
        #call
    }
}

/// The typed modules of the sources with `typed: true`.
pub(crate) fn typed_modules(sources: &[OpenApiSourceInfo]) -> Vec<TokenStream> {
    let mut modules = Names::default();
    sources
        .iter()
        .filter(|s| s.typed())
        .map(|s| {
            let module = modules.take(&snake_case(&s.id));
            typed_module(s, &module)
        })
        .collect()
}

fn typed_module(source: &OpenApiSourceInfo, module: &str) -> TokenStream {
    let c = &source.conversion;
    let doc = format!(
        " Typed calls to the tools of the OpenAPI source `{}` ({} {}): one argument struct and \
         one function per operation, each calling the tool through `Toolset::call`.",
        source.id,
        one_line(&c.title, 120),
        c.version
    );
    let mut types = Names::default();
    let mut fns = Names::default();
    let items = c.tools.iter().map(|op| {
        let full = source.full_name(op);
        let ty = ident(&types.take(&format!("{}Args", upper_camel(&op.name))));
        let func = ident(&fns.take(&snake_case(&op.name)));
        let fields = fields(&op.input_schema);
        let summary = one_line(&op.description, 300);
        let struct_doc = format!(" The arguments of `{full}` ({} `{}`).", op.method, op.path);
        let mut fn_doc = vec![format!(" `{} {}`", op.method, op.path)];
        if !summary.is_empty() {
            fn_doc.push(String::new());
            fn_doc.push(format!(" {summary}"));
        }
        if op.deprecated {
            fn_doc.push(String::new());
            fn_doc.push(" Deprecated by the API.".to_string());
        }
        fn_doc.push(String::new());
        fn_doc.push(format!(" Calls `{full}` through `Toolset::call`: every policy of the toolset applies."));
        quote! {
            #[doc = #struct_doc]
            #[derive(Debug, Clone, Default, ::toolgate::serde::Serialize)]
            #[serde(crate = "::toolgate::serde")]
            pub struct #ty {
                #(#fields)*
            }
            #(#[doc = #fn_doc])*
            ///
            /// # Errors
            /// The tool's `ToolError` (invalid arguments, policy, network, upstream...).
            pub async fn #func(
                toolset: &::toolgate::Toolset,
                args: #ty,
            ) -> ::core::result::Result<::toolgate::ToolOutput, ::toolgate::ToolError> {
                super::__toolgate_typed_call(toolset, #full, ::toolgate::serde_json::to_value(args)).await
            }
        }
    });
    let module = ident(module);
    quote! {
        #[doc = #doc]
        #[allow(dead_code, clippy::all, clippy::pedantic, clippy::nursery)]
        pub mod #module {
            #(#items)*
        }
    }
}

/// The struct fields of an input schema's top-level properties.
fn fields(schema: &Value) -> Vec<TokenStream> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let required: BTreeSet<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut names = Names::default();
    props
        .iter()
        .map(|(wire, prop)| {
            let name = names.take(&snake_case(wire));
            let field = ident(&name);
            let (ty, nullable) = rust_type(prop);
            let is_required = required.contains(wire.as_str());
            let mut attrs = Vec::new();
            if name.trim_start_matches("r#") != wire {
                attrs.push(quote!(rename = #wire));
            }
            let ty = if is_required && !nullable {
                ty
            } else {
                if !is_required {
                    attrs.push(quote!(
                        skip_serializing_if = "::core::option::Option::is_none"
                    ));
                }
                quote!(::core::option::Option<#ty>)
            };
            let serde = (!attrs.is_empty()).then(|| quote!(#[serde(#(#attrs),*)]));
            let mut doc = prop
                .get("description")
                .and_then(Value::as_str)
                .map(|d| one_line(d, 200))
                .unwrap_or_default();
            if doc.is_empty() {
                doc = format!("`{wire}`");
            }
            if is_required {
                doc.push_str(" (required)");
            }
            let doc = format!(" {doc}");
            quote! {
                #[doc = #doc]
                #serde
                pub #field: #ty,
            }
        })
        .collect()
}

/// The Rust type of a property, and whether it admits `null`.
fn rust_type(prop: &Value) -> (TokenStream, bool) {
    let value = quote!(::toolgate::serde_json::Value);
    let (ty, nullable) = match prop.get("type") {
        Some(Value::String(t)) => (Some(t.as_str()), false),
        Some(Value::Array(ts)) => {
            let non_null: Vec<&str> = ts
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null")
                .collect();
            match non_null.as_slice() {
                [t] if non_null.len() + 1 == ts.len() => (Some(*t), true),
                [t] => (Some(*t), false),
                _ => (None, false),
            }
        }
        _ => (None, false),
    };
    let scalar = |t: &str| match t {
        "string" => Some(quote!(::std::string::String)),
        "integer" => Some(quote!(i64)),
        "number" => Some(quote!(f64)),
        "boolean" => Some(quote!(bool)),
        _ => None,
    };
    let ty = match ty {
        Some("array") => prop
            .get("items")
            .and_then(|i| match i.get("type") {
                Some(Value::String(t)) => scalar(t),
                _ => None,
            })
            .map_or_else(|| value.clone(), |t| quote!(::std::vec::Vec<#t>)),
        Some(t) => scalar(t).unwrap_or_else(|| value.clone()),
        None => value.clone(),
    };
    (ty, nullable)
}

/// Unique names: a second `x` is `x_2` (`X2` for types).
#[derive(Default)]
struct Names(BTreeSet<String>);

impl Names {
    fn take(&mut self, base: &str) -> String {
        let mut name = base.to_string();
        let mut n = 2;
        while self.0.contains(&name) {
            name = if base.starts_with(|c: char| c.is_ascii_uppercase()) {
                format!("{base}{n}")
            } else {
                format!("{}_{n}", base.trim_start_matches("r#"))
            };
            n += 1;
        }
        self.0.insert(name.clone());
        name
    }
}

const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "dyn", "else", "enum", "extern", "false",
    "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "static", "struct", "trait", "true", "type", "unsafe", "use", "where",
    "while", "abstract", "become", "box", "do", "final", "macro", "override", "priv", "try",
    "typeof", "unsized", "virtual", "yield",
];

/// Words split at `_`, `-`, other punctuation and camelCase boundaries (`getHTTPServer` →
/// `get`, `HTTP`, `Server`).
fn words(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut words = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_ascii_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if c.is_ascii_uppercase() && !cur.is_empty() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(char::is_ascii_lowercase);
            if prev.is_ascii_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_ascii_uppercase() && next_lower)
            {
                words.push(std::mem::take(&mut cur));
            }
        }
        cur.push(c);
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// A snake_case identifier (raw when it is a keyword).
pub(crate) fn snake_case(s: &str) -> String {
    let mut out = words(s)
        .iter()
        .map(|w| w.to_ascii_lowercase())
        .collect::<Vec<_>>()
        .join("_");
    if out.is_empty() {
        out = "arg".to_string();
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out = format!("n{out}");
    }
    match out.as_str() {
        "self" | "super" | "crate" | "_" => format!("{out}_"),
        k if KEYWORDS.contains(&k) => format!("r#{out}"),
        _ => out,
    }
}

/// An UpperCamelCase identifier.
pub(crate) fn upper_camel(s: &str) -> String {
    let mut out: String = words(s)
        .iter()
        .map(|w| {
            let mut cs = w.chars();
            cs.next().map_or_else(String::new, |f| {
                f.to_ascii_uppercase()
                    .to_string()
                    .chars()
                    .chain(cs.map(|c| c.to_ascii_lowercase()))
                    .collect()
            })
        })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) || out == "Self" {
        out = format!("T{out}");
    }
    out
}

fn ident(name: &str) -> Ident {
    match name.strip_prefix("r#") {
        Some(raw) => Ident::new_raw(raw, Span::call_site()),
        None => Ident::new(name, Span::call_site()),
    }
}

/// The first paragraph of `text` on one line, at most `max` characters: whitespace collapsed
/// (no indented line a doc comment would take for a code block), code fences broken.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let para = text.trim().split("\n\n").next().unwrap_or("");
    let mut line = para.split_whitespace().collect::<Vec<_>>().join(" ");
    line = line.replace("```", "'''");
    if line.chars().count() > max {
        let cut = toolgate_model::text::cut(&line, max.saturating_sub(1));
        let kept = cut
            .trim_end_matches(toolgate_model::text::ELLIPSIS)
            .trim_end();
        line = format!("{kept}{}", toolgate_model::text::ELLIPSIS);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers() {
        assert_eq!(snake_case("getPetById"), "get_pet_by_id");
        assert_eq!(snake_case("repos/get-content"), "repos_get_content");
        assert_eq!(snake_case("getHTTPServer"), "get_http_server");
        assert_eq!(snake_case("type"), "r#type");
        assert_eq!(snake_case("self"), "self_");
        assert_eq!(snake_case("2fa"), "n2fa");
        assert_eq!(snake_case("X-Rate-Limit"), "x_rate_limit");
        assert_eq!(snake_case("$$"), "arg");
        assert_eq!(upper_camel("getPetById"), "GetPetById");
        assert_eq!(upper_camel("repos_get"), "ReposGet");
        assert_eq!(upper_camel("3d"), "T3d");
        let mut n = Names::default();
        assert_eq!(n.take("r#type"), "r#type");
        assert_eq!(n.take("r#type"), "type_2");
        assert_eq!(n.take("A"), "A");
        assert_eq!(n.take("A"), "A2");
    }

    #[test]
    fn doc_lines() {
        assert_eq!(one_line("Hello\n    world\n\nMore", 80), "Hello world");
        assert_eq!(one_line("a ```rust x``` b", 80), "a '''rust x''' b");
        assert_eq!(one_line("abcdef", 4), "abc…");
    }
}

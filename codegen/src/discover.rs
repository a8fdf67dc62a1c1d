//! Finding `#[tool]` functions: walk the crate's source folder, parse each `.rs` file with syn,
//! derive each file's module path from its place in the folder, and collect every free function
//! carrying `#[tool]`, `#[tool(...)]` or `#[toolgate::tool...]`.

use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::spanned::Spanned;
use toolgate_model::{Diagnostic, Location};

/// A `State<T>` parameter of a tool function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateParam {
    /// `T` as written (`crate::db::Db`, `Db`), whitespace-normalized.
    pub ty: String,
    /// The last path segment of `T` (`Db`), or [`ty`](Self::ty) when `T` is not a path.
    pub last: String,
}

/// A `#[tool]` function found in the source folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundTool {
    /// Its absolute path: `crate::builtin::files::read_file`.
    pub path: String,
    /// Its module: `crate::builtin::files`.
    pub module: String,
    /// The function's identifier: `read_file`.
    pub ident: String,
    /// The `name = "..."` option of the attribute, if any.
    pub attr_name: Option<String>,
    /// The `version = "..."` option of the attribute, if any.
    pub attr_version: Option<String>,
    /// Its `State<T>` parameters, in order.
    pub states: Vec<StateParam>,
    /// Whether it has any `pub` visibility (the generated table lives in another module).
    pub is_pub: bool,
    /// Whether the function has a doc comment or a `description = "..."` option.
    pub has_description: bool,
    /// The file it is in.
    pub file: PathBuf,
    /// Where its `fn` is.
    pub location: Location,
}

impl FoundTool {
    /// The tool's name before tools.yaml overrides: the attribute's `name`, else the fn ident.
    pub fn default_name(&self) -> &str {
        self.attr_name.as_deref().unwrap_or(&self.ident)
    }
}

/// Everything a scan of the source folder found.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    /// The `#[tool]` functions, sorted by path.
    pub tools: Vec<FoundTool>,
    /// Every other free function, by path (to tell "not a tool" from "does not exist").
    pub other_fns: Vec<String>,
    /// Every `.rs` file read.
    pub files: Vec<PathBuf>,
    /// Files that failed to parse, one error each.
    pub errors: Vec<Diagnostic>,
}

/// Scans every `.rs` file under `src_dir` (except `src/bin/`, whose files are other crates).
///
/// # Errors
/// The folder cannot be listed.
pub fn scan(src_dir: &Path) -> std::io::Result<Scan> {
    let mut files = Vec::new();
    collect_files(src_dir, src_dir, &mut files)?;
    files.sort();
    let mut scan = Scan::default();
    for file in files {
        let module = module_path(src_dir, &file);
        let text = match std::fs::read_to_string(&file) {
            Ok(t) => t,
            Err(e) => {
                scan.errors
                    .push(Diagnostic::error(&file, None, format!("cannot read: {e}")));
                scan.files.push(file);
                continue;
            }
        };
        match syn::parse_file(&text) {
            Ok(ast) => visit_items(&ast.items, &module, &file, &mut scan),
            Err(e) => {
                let start = e.span().start();
                scan.errors.push(Diagnostic::error(
                    &file,
                    Some(Location::new(start.line, start.column + 1)),
                    format!("cannot parse this file while looking for #[tool] functions: {e}"),
                ));
            }
        }
        scan.files.push(file);
    }
    scan.tools.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(scan)
}

fn collect_files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            if dir == root && path.file_name().is_some_and(|n| n == "bin") {
                continue;
            }
            collect_files(root, &path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// The module path of a file: `lib.rs`/`main.rs` → `crate`, `a/mod.rs` and `a.rs` → `crate::a`,
/// `a/b.rs` → `crate::a::b`.
pub fn module_path(src_dir: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src_dir).unwrap_or(file);
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.strip_suffix(".rs").unwrap_or(&last);
    let top_root = parts.is_empty() && (stem == "lib" || stem == "main");
    if !top_root && stem != "mod" {
        parts.push(stem.to_string());
    }
    std::iter::once("crate".to_string())
        .chain(parts)
        .collect::<Vec<_>>()
        .join("::")
}

fn visit_items(items: &[syn::Item], module: &str, file: &Path, scan: &mut Scan) {
    for item in items {
        match item {
            syn::Item::Fn(f) => visit_fn(f, module, file, scan),
            syn::Item::Mod(m) => {
                if let Some((_, content)) = &m.content
                    && !is_cfg_test(&m.attrs)
                {
                    visit_items(content, &format!("{module}::{}", m.ident), file, scan);
                }
            }
            _ => {}
        }
    }
}

/// A path without raw-identifier prefixes: `crate::r#match::r#type` → `crate::match::type`.
pub fn strip_raw(path: &str) -> String {
    path.replace("r#", "")
}

fn visit_fn(f: &syn::ItemFn, module: &str, file: &Path, scan: &mut Scan) {
    // `r#type` is the tool `type` (its items are `__tool_type`); paths are matched without `r#`.
    let ident = syn::ext::IdentExt::unraw(&f.sig.ident).to_string();
    let path = format!("{}::{ident}", strip_raw(module));
    let Some(attr) = f.attrs.iter().find(|a| is_tool_attr(a.path())) else {
        scan.other_fns.push(path);
        return;
    };
    let (attr_name, attr_version) = match &attr.meta {
        syn::Meta::List(list) => (
            str_option(&list.tokens, "name"),
            str_option(&list.tokens, "version"),
        ),
        _ => (None, None),
    };
    let states = f
        .sig
        .inputs
        .iter()
        .filter_map(|arg| match arg {
            syn::FnArg::Typed(pat) => state_param(&pat.ty),
            syn::FnArg::Receiver(_) => None,
        })
        .collect();
    let start = f.sig.fn_token.span().start();
    scan.tools.push(FoundTool {
        path,
        module: module.to_string(),
        ident,
        attr_name,
        attr_version,
        states,
        is_pub: !matches!(f.vis, syn::Visibility::Inherited),
        has_description: f.attrs.iter().any(|a| a.path().is_ident("doc"))
            || matches!(&attr.meta, syn::Meta::List(l) if l.tokens.to_string().contains("description")),
        file: file.to_path_buf(),
        location: Location::new(start.line, start.column + 1),
    });
}

/// `tool`, `toolgate::tool` or `::toolgate::tool`.
fn is_tool_attr(path: &syn::Path) -> bool {
    let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    match segs.as_slice() {
        [t] => t == "tool",
        [krate, t] => krate == "toolgate" && t == "tool",
        _ => false,
    }
}

/// `#[cfg(test)]`: such modules are not part of a normal build.
fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test")
    })
}

/// The `key = "..."` option among the attribute's top-level tokens (other options are the
/// macro's business, and may be any expression).
fn str_option(tokens: &TokenStream, key: &str) -> Option<String> {
    let tts: Vec<TokenTree> = tokens.clone().into_iter().collect();
    tts.windows(3).find_map(|w| match w {
        [
            TokenTree::Ident(i),
            TokenTree::Punct(p),
            TokenTree::Literal(l),
        ] if i == key && p.as_char() == '=' => syn::parse2::<syn::LitStr>(l.to_token_stream())
            .ok()
            .map(|s| s.value()),
        _ => None,
    })
}

/// `T` of a parameter typed `State<T>` (any path ending in `State`).
fn state_param(ty: &syn::Type) -> Option<StateParam> {
    let syn::Type::Path(tp) = ty else { return None };
    let seg = tp.path.segments.last()?;
    if seg.ident != "State" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &seg.arguments else {
        return None;
    };
    let inner = args.args.iter().find_map(|a| match a {
        syn::GenericArgument::Type(t) => Some(t),
        _ => None,
    })?;
    let ty = type_string(inner);
    let last = match inner {
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .map_or_else(|| ty.clone(), |s| s.ident.to_string()),
        _ => ty.clone(),
    };
    Some(StateParam { ty, last })
}

/// A type as compact text: `crate :: db :: Db` → `crate::db::Db`, `Vec < u8 >` → `Vec<u8>`.
pub fn type_string(ty: &impl ToTokens) -> String {
    let raw = ty.to_token_stream().to_string();
    let mut out = String::with_capacity(raw.len());
    let chars: Vec<char> = raw.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c == ' ' {
            let prev = chars[..i].iter().rev().find(|c| **c != ' ');
            let next = chars[i + 1..].iter().find(|c| **c != ' ');
            let word = |c: Option<&char>| c.is_some_and(|c| c.is_alphanumeric() || *c == '_');
            if word(prev) && word(next) {
                out.push(' ');
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The last `::` segment of a type path as text (`crate::db::Db` → `Db`, `Vec<u8>` → `Vec`).
pub fn last_segment(ty: &str) -> String {
    let base = ty.split('<').next().unwrap_or(ty);
    base.rsplit("::").next().unwrap_or(base).trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_paths() {
        let src = Path::new("/x/src");
        let m = |f: &str| module_path(src, &src.join(f));
        assert_eq!(m("lib.rs"), "crate");
        assert_eq!(m("main.rs"), "crate");
        assert_eq!(m("a.rs"), "crate::a");
        assert_eq!(m("a/mod.rs"), "crate::a");
        assert_eq!(m("a/b.rs"), "crate::a::b");
        assert_eq!(m("a/lib.rs"), "crate::a::lib");
    }

    #[test]
    fn finds_tools_in_inline_modules_and_reads_options() {
        let src = r#"
            use toolgate::{tool, State};
            #[tool(name = "renamed", tags = ["a", "b"], timeout = "5s")]
            pub async fn f(State(db): State<crate::db::Db>, x: u32, s: toolgate::State<Cfg>) {}
            fn helper() {}
            pub mod inner {
                #[toolgate::tool]
                pub(crate) fn g(v: Vec<u8>) {}
            }
            #[cfg(test)]
            mod tests { #[tool] fn hidden() {} }
        "#;
        let ast = syn::parse_file(src).unwrap();
        let mut scan = Scan::default();
        visit_items(&ast.items, "crate::m", Path::new("m.rs"), &mut scan);
        assert_eq!(scan.other_fns, ["crate::m::helper"]);
        let [f, g] = &scan.tools[..] else {
            panic!("{:?}", scan.tools)
        };
        assert_eq!(
            (f.path.as_str(), f.default_name()),
            ("crate::m::f", "renamed")
        );
        let states: Vec<_> = f
            .states
            .iter()
            .map(|s| (s.ty.as_str(), s.last.as_str()))
            .collect();
        assert_eq!(states, [("crate::db::Db", "Db"), ("Cfg", "Cfg")]);
        assert_eq!(f.location, Location::new(4, 23));
        assert_eq!(
            (g.path.as_str(), g.default_name()),
            ("crate::m::inner::g", "g")
        );
        assert!(g.is_pub && f.is_pub);
    }

    #[test]
    fn type_strings() {
        let t: syn::Type = syn::parse_str("crate :: db :: Pool < Postgres >").unwrap();
        assert_eq!(type_string(&t), "crate::db::Pool<Postgres>");
        let t: syn::Type = syn::parse_str("dyn Fn(u8) -> u8").unwrap();
        assert_eq!(type_string(&t), "dyn Fn(u8)->u8");
        assert_eq!(last_segment("crate::db::Pool<Postgres>"), "Pool");
    }
}

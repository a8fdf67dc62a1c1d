//! The `#[tool]` attribute of toolgate.
//!
//! Built like serde_derive and thiserror: [`attr`] parses the attribute's options, [`ast`] turns
//! the function into a model, [`valid`] checks the model (every error carries the user's span),
//! [`expand`] writes the generated items. Users reach this through `toolgate::tool`; see its
//! documentation there.

#![warn(missing_docs)]

use proc_macro::TokenStream;

mod ast;
mod attr;
mod expand;
mod valid;

/// Turns a free function into a tool. See `toolgate::tool` for the full documentation.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, input: TokenStream) -> TokenStream {
    match run(args.into(), input.into()) {
        Ok(tokens) => tokens.into(),
        Err(err) => err.to_compile_error().into(),
    }
}

fn run(
    args: proc_macro2::TokenStream,
    input: proc_macro2::TokenStream,
) -> syn::Result<proc_macro2::TokenStream> {
    let options = attr::ToolOptions::parse(args)?;
    let item: syn::ItemFn = syn::parse2(input)?;
    let tool = ast::ToolFn::from_item(item, options)?;
    valid::check(&tool)?;
    Ok(expand::expand(&tool))
}

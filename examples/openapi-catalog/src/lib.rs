//! Every OpenAPI document under `tests/specs/` compiled into one toolset: GitHub (1223
//! operations), Stripe (468), six APIs.guru descriptions, the OAI examples, the readme edge
//! cases and the Swagger petstore. `cargo build` converts and checks them all; the tests check
//! that every operation is accounted for (a tool, or an explained skip).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use openapi_catalog::toolset;
//! let tools = toolset::toolset().build()?;
//! let args = toolset::petstore::GetPetByIdArgs { pet_id: 10 };
//! let pet = toolset::petstore::get_pet_by_id(&tools, args).await?;
//! # let _ = pet; Ok(()) }
//! ```

#![warn(missing_docs)]

/// The generated toolset: `toolset()`, one typed module per OpenAPI source.
pub mod toolset {
    toolgate::include_toolset!();
}

/// The petstore source's hook (tools.yaml `hook: crate::CATALOG_HOOK`): adds a header naming
/// the operation to every request, which a declaration cannot express.
pub static CATALOG_HOOK: OperationHeader = OperationHeader;

/// An [`toolgate::OpenApiHook`] that sends `X-Catalog-Operation: {tool name}`.
#[derive(Debug, Clone, Copy)]
pub struct OperationHeader;

impl toolgate::OpenApiHook for OperationHeader {
    fn request(
        &self,
        op: &toolgate::openapi::Operation,
        req: &mut toolgate::openapi::reqwest::Request,
        _ctx: &toolgate::ToolContext,
    ) -> Result<(), toolgate::ToolError> {
        let value = toolgate::openapi::reqwest::header::HeaderValue::from_str(&op.name)
            .map_err(|e| toolgate::ToolError::internal(e.to_string()))?;
        req.headers_mut().insert("x-catalog-operation", value);
        Ok(())
    }
}

//! OpenAPI operations as tools: the run-time HTTP binding.
//!
//! An [`OpenApiSource`] serves the tools of one converted OpenAPI document
//! ([`toolgate_model::openapi::Conversion`]): each call is turned into the HTTP request the
//! operation describes (OAS 3.1 §4.8.10 "Operation Object"), sent through one pooled,
//! host-guarded `reqwest::Client`, and the response mapped to a [`ToolOutput`] or a
//! [`ToolError`]. The rules, each in its own module:
//!
//! * `request`: fills (tools.yaml `adapters`; see [adapter fills](#adapter-fills)),
//!   parameters (OAS §4.8.12, styles in `style`, path values one segment each), bodies (JSON, form, multipart, text, binary),
//!   the server URL (config `base_url`, else the operation's, else the document's
//!   `servers`, with variables, relative URLs against the document URL);
//! * `auth`: credentials by security scheme or one for all, OAuth2 client credentials;
//! * `call`: the host guard ([`crate::net`]), timeout, cancellation, size limit;
//! * `response`: status and media type → output or error.
//!
//! Compiled sources embed their conversion and build the source in generated code; sources
//! marked `load: runtime` read their document when the toolset discovers them
//! ([`ToolsetBuilder::openapi_sources`](crate::ToolsetBuilder::openapi_sources)).
//!
//! # Adapter fills
//!
//! A fill (`X-Trace: {value: "${TRACE_ID}"}`, `from_context`, `default`) supplies an argument
//! the model does not give: it is an argument, not a credential. Its value, even one read from
//! `${ENV}` or `${file:...}`, is sent and shown like any argument: in the debug log line of
//! the request and unchanged in error messages (it is not redacted, so a short value such as
//! `404` does not garble errors), unless the variable's name or the file's path says
//! credential (`${API_TOKEN}`, `${file:/run/secrets/key}`: [`Field::Plain`]). Credentials
//! belong in `auth:`, which is masked in logs and redacted (in every form: percent-encoded,
//! JSON-escaped, base64) from every error and result.
//!
//! [`Field::Plain`]: toolgate_model::secrets::Field::Plain

mod auth;
mod builder;
mod call;
mod compact;
mod loader;
mod request;
mod response;
mod style;
#[cfg(test)]
mod tests;
mod xml;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use serde_json::{Map, Value};
use toolgate_model::config::Secret;

pub use builder::OpenApiSourceBuilder;
pub use loader::LoadFilter;
/// The HTTP client an [`OpenApiHook`] sees requests of (`reqwest::Request`).
pub use reqwest;
pub use response::EXCERPT_BYTES;
/// The conversion model: an [`OpenApiHook`] is handed the [`Operation`] being called.
pub use toolgate_model::openapi::{Conversion, Operation};

use crate::net::HostRules;
use crate::{
    SourceTool, ToolContext, ToolDescriptor, ToolError, ToolFuture, ToolOutput, ToolSource,
};

/// The default of `max_response_bytes`: 1 MiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 1024 * 1024;

/// Request and response transforms a declaration cannot express, in Rust (tools.yaml `hook:`
/// names a `static` implementing it). Both methods default to doing nothing.
///
/// ```
/// use toolgate_runtime::{OpenApiHook, ToolContext, ToolError};
/// use toolgate_model::openapi::Operation;
///
/// struct Tenant;
/// impl OpenApiHook for Tenant {
///     fn request(&self, _op: &Operation, req: &mut reqwest::Request, ctx: &ToolContext)
///         -> Result<(), ToolError> {
///         if let Some(agent) = ctx.agent() {
///             req.headers_mut().insert("x-agent", agent.parse().map_err(|_| {
///                 ToolError::internal("agent name is not a header value")
///             })?);
///         }
///         Ok(())
///     }
/// }
/// ```
pub trait OpenApiHook: Send + Sync {
    /// Called with the request just before it is sent (after credentials were added; the host
    /// guard checks the URL after this). An error ends the call with it.
    ///
    /// # Errors
    /// Whatever should end the call.
    fn request(
        &self,
        op: &Operation,
        req: &mut reqwest::Request,
        ctx: &ToolContext,
    ) -> Result<(), ToolError> {
        let _ = (op, req, ctx);
        Ok(())
    }

    /// Called with the output of a successful (2xx) response before it is returned.
    ///
    /// # Errors
    /// Whatever should end the call.
    fn response(&self, op: &Operation, out: &mut ToolOutput) -> Result<(), ToolError> {
        let _ = (op, out);
        Ok(())
    }
}

/// A hook in a `static` (what tools.yaml's `hook: crate::path::HOOK` names): generated code
/// passes `Arc::new(&HOOK)`.
impl<T: OpenApiHook + ?Sized> OpenApiHook for &'static T {
    fn request(
        &self,
        op: &Operation,
        req: &mut reqwest::Request,
        ctx: &ToolContext,
    ) -> Result<(), ToolError> {
        (**self).request(op, req, ctx)
    }

    fn response(&self, op: &Operation, out: &mut ToolOutput) -> Result<(), ToolError> {
        (**self).response(op, out)
    }
}

/// Why an [`OpenApiSource`] could not be built. Every message names the source id and never
/// holds a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OpenApiSourceError {
    /// The base URL cannot be determined: a server variable value not allowed, a URL
    /// that does not parse or still contains `{`, a relative server URL without a document URL.
    #[error("OpenAPI source `{source_id}`: {message}")]
    BaseUrl {
        /// The source id.
        source_id: String,
        /// What is wrong.
        message: String,
    },
    /// A credential or fill value cannot be resolved (`${ENV}` not set, `${file:...}`
    /// unreadable) or does not fit the document's security schemes.
    #[error("OpenAPI source `{source_id}`: {message}")]
    Auth {
        /// The source id.
        source_id: String,
        /// What is wrong.
        message: String,
    },
    /// The source's version does not meet its tools.yaml `require:` (or is not a semantic
    /// version under one).
    #[error("OpenAPI source `{source_id}`: its tools are refused: {message}")]
    Version {
        /// The source id.
        source_id: String,
        /// Why, e.g. `its version 3.0.0 does not match require "^2"`.
        message: String,
    },
    /// The HTTP client cannot be built.
    #[error("OpenAPI source `{source_id}`: cannot build the HTTP client: {message}")]
    Client {
        /// The source id.
        source_id: String,
        /// What is wrong.
        message: String,
    },
}

impl From<OpenApiSourceError> for crate::BuildError {
    fn from(e: OpenApiSourceError) -> Self {
        let source_id = match &e {
            OpenApiSourceError::BaseUrl { source_id, .. }
            | OpenApiSourceError::Auth { source_id, .. }
            | OpenApiSourceError::Version { source_id, .. }
            | OpenApiSourceError::Client { source_id, .. } => source_id.clone(),
        };
        crate::BuildError::Source {
            source_id,
            message: e.to_string(),
        }
    }
}

/// How many descriptors looked up by name stay made after their last user drops them (see
/// [`OpenApiSource`]'s memory note).
const RECENT_DESCRIPTORS: usize = 16;

/// One operation, ready to call.
struct Bound {
    /// The operation without its schemas (they are `input` and `output`): its input schema
    /// cut to the top-level `required` list when a context fill needs to know it (see
    /// `request::apply_fills`), else `null`; no output schema.
    op: Operation,
    /// The input schema.
    input: compact::Compact,
    /// The output schema.
    output: Option<compact::Compact>,
    base: reqwest::Url,
    /// Resolved `value:` fills, by argument: arguments, not credentials (see [adapter
    /// fills](self#adapter-fills)).
    fills: BTreeMap<String, Secret>,
    /// The descriptor last made, while anything holds it.
    live: Mutex<Weak<ToolDescriptor>>,
}

/// The tools of one OpenAPI document, called over HTTP. Kind `openapi`; tools named
/// `{id}.{operation name}` (or the operation name alone with `prefix: false`).
///
/// # Memory
///
/// A big document's schemas are most of what a source holds (every tool's `$defs` repeats
/// the components it reaches). The source keeps each schema once, as JSON text, with the
/// `$defs` entries shared between tools, and makes a tool's [`ToolDescriptor`] (its schemas
/// parsed back, the same values the conversion gave) when it is asked for one:
/// [`descriptor`](Self::descriptor) and [`tools`](ToolSource::tools) return the
/// descriptor already made while anything still holds it (the toolset's validator cache
/// holds the tools that were called), and the last [`RECENT_DESCRIPTORS`] looked up by name
/// are kept. So a lookup of a tool in use is a hash probe and a reference count; a listing
/// of tools nobody holds parses their schemas (about 100 MB/s of schema JSON).
pub struct OpenApiSource {
    id: String,
    prefix: bool,
    by_name: HashMap<String, usize>,
    ops: Vec<Bound>,
    /// The `$defs` entries `ops`' schemas refer to.
    defs: compact::DefTable,
    /// The descriptors last looked up by name, newest last.
    recent: Mutex<VecDeque<Arc<ToolDescriptor>>>,
    /// tools.yaml's `category` (else each operation's first tag).
    category: Option<String>,
    client: reqwest::Client,
    rules: Arc<HostRules>,
    auth: auth::Auth,
    hook: Option<Arc<dyn OpenApiHook>>,
    timeout: Option<Duration>,
    max_response_bytes: u64,
    /// The version of every tool: tools.yaml's `version`, else the document's
    /// `info.version` when it is a semantic version.
    version: Option<String>,
}

impl std::fmt::Debug for OpenApiSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenApiSource")
            .field("id", &self.id)
            .field("tools", &self.ops.len())
            .finish_non_exhaustive()
    }
}

impl OpenApiSource {
    /// The operation behind the tool `name`, if the source has it: the conversion's
    /// [`Operation`], its schemas put back together from the source's compact form.
    pub fn operation(&self, name: &str) -> Option<Operation> {
        self.by_name
            .get(name)
            .map(|&i| self.full_operation(&self.ops[i]))
    }

    /// `bound`'s operation with its schemas.
    fn full_operation(&self, bound: &Bound) -> Operation {
        let mut op = bound.op.clone();
        op.input_schema = bound.input.value(&self.defs);
        op.output_schema = bound.output.as_ref().map(|o| o.value(&self.defs));
        op
    }

    /// The descriptor of `bound`: the one made before if anything still holds it, else a new
    /// one (kept among the recent ones when `recent`).
    fn live(&self, bound: &Bound, recent: bool) -> Arc<ToolDescriptor> {
        let mut live = bound.live.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(d) = live.upgrade() {
            return d;
        }
        let mut d = builder::descriptor(
            &self.id,
            self.prefix,
            &bound.op,
            self.category.as_ref(),
            self.timeout,
        );
        d.input_schema = bound.input.value(&self.defs);
        d.output_schema = bound.output.as_ref().map(|o| o.value(&self.defs));
        d.version.clone_from(&self.version);
        let d = Arc::new(d);
        *live = Arc::downgrade(&d);
        drop(live);
        if recent {
            let mut kept = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
            if kept.len() == RECENT_DESCRIPTORS {
                kept.pop_front();
            }
            kept.push_back(Arc::clone(&d));
        }
        d
    }

    /// The base URL calls of the tool `name` go to.
    pub fn base_url(&self, name: &str) -> Option<&reqwest::Url> {
        self.by_name.get(name).map(|&i| &self.ops[i].base)
    }

    async fn call_op(
        &self,
        tool: &str,
        bound: &Bound,
        args: Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let op = &bound.op;
        let mut args = match args {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                return Err(ToolError::invalid_arguments(
                    tool,
                    vec![crate::ArgumentError {
                        pointer: String::new(),
                        message: format!("arguments must be a JSON object, got {other}"),
                    }],
                ));
            }
        };
        request::apply_fills(tool, op, &bound.fills, &mut args, ctx)?;
        // A hook is handed the whole operation, schemas included, made for this call.
        let hooked = self
            .hook
            .as_ref()
            .map(|hook| (hook, self.full_operation(bound)));
        let parts = request::build(tool, op, &args)?;
        let timeout = self.timeout.or_else(|| ctx.remaining());
        let mut rejected = None;
        loop {
            let applied = self.auth.apply(op, rejected.as_ref(), ctx).await?;
            let mut req = call::to_request(
                tool,
                &self.client,
                &op.method,
                &bound.base,
                &parts,
                &applied,
                &op.accept,
            )?;
            if let Some((hook, full)) = &hooked {
                hook.request(full, &mut req, ctx)?;
            }
            self.rules.check_url(req.url()).map_err(|b| {
                ToolError::permission_denied(format!(
                    "request to `{}` refused: {}",
                    b.host, b.reason
                ))
            })?;
            tracing::debug!(tool, request = %call::describe(&req, &applied.masked), "OpenAPI request");
            let received = call::send(
                tool,
                &self.client,
                req,
                self.max_response_bytes,
                timeout,
                ctx,
            )
            .await?;
            if received.status == reqwest::StatusCode::UNAUTHORIZED
                && rejected.is_none()
                && let Some(token) = applied.oauth
            {
                rejected = Some(token);
                continue;
            }
            if !received.status.is_success() {
                return Err(response::failure(
                    received.status,
                    received.retry_after.as_deref(),
                    &received.body,
                ));
            }
            let uri = format!("{}{}", bound.base, parts.path.trim_start_matches('/'));
            let mut out = response::success(
                received.status,
                received.content_type.as_deref(),
                &received.body,
                op.output_wrapped,
                op.output_xml.as_ref(),
                &uri,
            )?;
            if let Some((hook, full)) = &hooked {
                hook.response(full, &mut out)?;
            }
            return Ok(out);
        }
    }
}

impl OpenApiSource {
    /// The tool called `name` (its name inside the toolset), if the document gives it: the
    /// descriptor made before while anything holds it, else a new one (kept among the recent
    /// ones).
    pub fn descriptor(&self, name: &str) -> Option<Arc<ToolDescriptor>> {
        self.by_name
            .get(name)
            .map(|&i| self.live(&self.ops[i], true))
    }

    /// Calls the operation of tool `name` directly: no toolset, so no policy and no argument
    /// check (for testing a source; a [`Toolset`](crate::Toolset) calls it through
    /// [`ToolSource::call`]).
    ///
    /// # Errors
    /// `not_found` for a name the document does not give; otherwise as a call of the tool.
    pub async fn call_named(
        &self,
        name: &str,
        args: Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let Some(&i) = self.by_name.get(name) else {
            return Err(ToolError::not_found(name));
        };
        self.call_op(name, &self.ops[i], args, ctx).await
    }
}

impl ToolSource for OpenApiSource {
    fn id(&self) -> &str {
        &self.id
    }

    fn tools(&self) -> Vec<SourceTool> {
        self.ops
            .iter()
            .enumerate()
            .map(|(i, b)| SourceTool::indexed(self.live(b, false), i))
            .collect()
    }

    fn call(
        self: Arc<Self>,
        tool: &SourceTool,
        args: Value,
        ctx: ToolContext,
    ) -> ToolFuture<'static> {
        let Some(i) = tool.key.index().filter(|&i| i < self.ops.len()) else {
            return ToolFuture::err(ToolError::not_found(tool.name()));
        };
        let name = Arc::clone(&tool.descriptor);
        ToolFuture::new(async move { self.call_op(&name.name, &self.ops[i], args, &ctx).await })
    }

    fn kind(&self) -> &str {
        "openapi"
    }

    fn prefixed(&self) -> bool {
        self.prefix
    }
}

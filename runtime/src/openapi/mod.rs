//! OpenAPI operations as tools: the run-time HTTP binding.
//!
//! An [`OpenApiSource`] serves the tools of one converted OpenAPI document
//! ([`toolgate_model::openapi::Conversion`]): each call is turned into the HTTP request the
//! operation describes (OAS 3.1 §4.8.10 "Operation Object"), sent through one pooled,
//! host-guarded `reqwest::Client`, and the response mapped to a [`ToolOutput`] or a
//! [`ToolError`]. The rules, each in its own module:
//!
//! * `request`: fills (tools.yaml `adapters`; see [adapter fills](#adapter-fills)),
//!   parameters (OAS §4.8.12, styles in `style`, path values one segment each, cases.md C11), bodies (JSON, form, multipart, text, binary;
//!   C15), the server URL (config `base_url`, else the operation's, else the document's
//!   `servers`, with variables, relative URLs against the document URL; C17);
//! * `auth`: credentials by security scheme or one for all (C18), OAuth2 client credentials;
//! * `call`: the host guard ([`crate::net`]), timeout, cancellation, size limit;
//! * `response`: status and media type → output or error (C19).
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
mod call;
mod loader;
mod request;
mod response;
mod style;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use toolgate_model::config::{Interpolated, Secret};
use toolgate_model::openapi::FillFrom;

pub use loader::LoadFilter;
/// The HTTP client an [`OpenApiHook`] sees requests of (`reqwest::Request`).
pub use reqwest;
pub use response::EXCERPT_BYTES;
/// The conversion model: an [`OpenApiHook`] is handed the [`Operation`] being called.
pub use toolgate_model::openapi::{Conversion, Operation};

use crate::ToolFuture;
use crate::net::HostRules;
use crate::{
    SourceTool, ToolAnnotations, ToolContext, ToolDescriptor, ToolError, ToolOutput, ToolSource,
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
    /// The base URL cannot be determined: a server variable value not allowed (C17), a URL
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
            | OpenApiSourceError::Client { source_id, .. } => source_id.clone(),
        };
        crate::BuildError::Source {
            source_id,
            message: e.to_string(),
        }
    }
}

/// One operation, ready to call.
struct Bound {
    op: Operation,
    base: reqwest::Url,
    /// Resolved `value:` fills, by argument: arguments, not credentials (see [adapter
    /// fills](self#adapter-fills)).
    fills: BTreeMap<String, Secret>,
}

/// The tools of one OpenAPI document, called over HTTP. Kind `openapi`; tools named
/// `{id}.{operation name}` (or the operation name alone with `prefix: false`).
pub struct OpenApiSource {
    id: String,
    prefix: bool,
    tools: Vec<Arc<ToolDescriptor>>,
    by_name: HashMap<String, usize>,
    ops: Vec<Bound>,
    client: reqwest::Client,
    rules: Arc<HostRules>,
    auth: auth::Auth,
    hook: Option<Arc<dyn OpenApiHook>>,
    timeout: Option<Duration>,
    max_response_bytes: u64,
}

impl std::fmt::Debug for OpenApiSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenApiSource")
            .field("id", &self.id)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

/// Builds an [`OpenApiSource`]: see [`OpenApiSource::builder`].
pub struct OpenApiSourceBuilder {
    id: String,
    conversion: Conversion,
    config: Option<toolgate_model::config::OpenApiSource>,
    spec_url: Option<reqwest::Url>,
    hook: Option<Arc<dyn OpenApiHook>>,
    client: Option<reqwest::Client>,
}

impl OpenApiSource {
    /// A builder for the source `id` serving `conversion`'s operations.
    pub fn builder(id: &str, conversion: Conversion) -> OpenApiSourceBuilder {
        OpenApiSourceBuilder {
            id: id.to_string(),
            conversion,
            config: None,
            spec_url: None,
            hook: None,
            client: None,
        }
    }

    /// The operation behind the tool `name`, if the source has it.
    pub fn operation(&self, name: &str) -> Option<&Operation> {
        self.by_name.get(name).map(|&i| &self.ops[i].op)
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
        let parts = request::build(tool, op, &args)?;
        let timeout = self.timeout.or_else(|| ctx.remaining());
        let mut refreshed = false;
        loop {
            let applied = self.auth.apply(op, &self.client, refreshed).await?;
            let mut req = call::to_request(
                tool,
                &self.client,
                &op.method,
                &bound.base,
                &parts,
                &applied,
                &op.accept,
            )?;
            if let Some(hook) = &self.hook {
                hook.request(op, &mut req, ctx)?;
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
                && applied.oauth.is_some()
                && !refreshed
            {
                refreshed = true;
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
                &uri,
            )?;
            if let Some(hook) = &self.hook {
                hook.response(op, &mut out)?;
            }
            return Ok(out);
        }
    }
}

fn descriptor(
    id: &str,
    prefix: bool,
    op: &Operation,
    config: Option<&toolgate_model::config::OpenApiSource>,
) -> ToolDescriptor {
    let method = op.method.to_ascii_uppercase();
    let read_only = matches!(method.as_str(), "GET" | "HEAD" | "OPTIONS");
    let mut tags = op.tags.clone();
    let mut description = op.description.clone();
    if op.deprecated {
        tags.push("deprecated".to_string());
        description = if description.is_empty() {
            "Deprecated.".to_string()
        } else {
            format!("Deprecated. {description}")
        };
    }
    ToolDescriptor {
        name: if prefix {
            format!("{id}.{}", op.name)
        } else {
            op.name.clone()
        },
        description,
        input_schema: op.input_schema.clone(),
        output_schema: op.output_schema.clone(),
        annotations: ToolAnnotations {
            title: None,
            read_only_hint: Some(read_only),
            destructive_hint: (!read_only).then_some(method == "DELETE"),
            idempotent_hint: Some(read_only || matches!(method.as_str(), "PUT" | "DELETE")),
            open_world_hint: Some(true),
        },
        source: id.to_string(),
        category: config
            .and_then(|c| c.category.clone())
            .or_else(|| op.tags.first().cloned()),
        tags,
        timeout: config.and_then(|c| c.timeout_ms).map(Duration::from_millis),
        dangerous: method == "DELETE",
        ..ToolDescriptor::default()
    }
}

impl OpenApiSourceBuilder {
    /// The tools.yaml entry: base URL, server variables, auth, allowed hosts, private
    /// addresses, timeout, response limit, prefix, category.
    #[must_use]
    pub fn config(mut self, config: &toolgate_model::config::OpenApiSource) -> Self {
        self.config = Some(config.clone());
        self
    }

    /// The URL the document was read from: relative server URLs resolve against it (C17).
    #[must_use]
    pub fn spec_url(mut self, url: reqwest::Url) -> Self {
        self.spec_url = Some(url);
        self
    }

    /// A Rust hook called around every request.
    #[must_use]
    pub fn hook(mut self, hook: Arc<dyn OpenApiHook>) -> Self {
        self.hook = Some(hook);
        self
    }

    /// Use this client instead of building one. Its DNS resolver and redirect policy are its
    /// own: the host guard then only checks each request's URL before it is sent.
    #[must_use]
    pub fn client(mut self, client: reqwest::Client) -> Self {
        self.client = Some(client);
        self
    }

    /// Resolves server URLs, credentials and fill values, and builds the pooled client.
    ///
    /// # Errors
    /// [`OpenApiSourceError`] naming the source id: a server variable not allowed, a base URL
    /// invalid or still containing `{`, a secret `${ENV}` not set.
    pub fn build(self) -> Result<OpenApiSource, OpenApiSourceError> {
        let id = self.id;
        let cfg = self.config.as_ref();
        let base_err = |message: String| OpenApiSourceError::BaseUrl {
            source_id: id.clone(),
            message,
        };
        let auth_err = |message: String| OpenApiSourceError::Auth {
            source_id: id.clone(),
            message,
        };
        let empty = BTreeMap::new();
        let values = cfg.map_or(&empty, |c| &c.server_variables);
        let config_base = cfg
            .and_then(|c| c.base_url.as_ref())
            .map(|u| {
                u.resolve_as(toolgate_model::secrets::Field::Plain)
                    .map(Secret::into_inner)
                    .map_err(|e| base_err(format!("base_url: {e}")))
            })
            .transpose()?;
        let config_base = config_base.as_deref();
        if let Some(unknown) = values.keys().find(|k| {
            !self
                .conversion
                .servers
                .iter()
                .chain(self.conversion.tools.iter().flat_map(|t| &t.servers))
                .any(|s| s.variables.contains_key(*k))
        }) {
            return Err(base_err(format!(
                "server_variables: no server of the document has a variable `{unknown}`"
            )));
        }
        let mut rules = HostRules::new(
            cfg.map_or(&[][..], |c| &c.allow_hosts[..]),
            cfg.is_some_and(|c| c.allow_private),
        )
        .check_exact_hosts(true)
        .label(format!("allowed hosts of OpenAPI source `{id}`"));
        let auth = auth::Auth::new(&id, cfg.and_then(|c| c.auth.as_ref()), &self.conversion)
            .map_err(auth_err)?;
        for url in auth.token_urls() {
            rules.allow(url.host_str().unwrap_or_default());
        }
        let prefix = cfg.is_none_or(|c| c.prefix);
        let mut ops = Vec::new();
        let mut secret_header_fill = false;
        // The document's servers are checked even when no operation uses them (C17: a bad
        // variable fails at start-up).
        if config_base.is_none() && !self.conversion.servers.is_empty() {
            request::base_url(
                None,
                &[],
                &self.conversion.servers,
                values,
                self.spec_url.as_ref(),
            )
            .map_err(&base_err)?;
        }
        for op in self.conversion.tools {
            let base = request::base_url(
                config_base,
                &op.servers,
                &self.conversion.servers,
                values,
                self.spec_url.as_ref(),
            )
            .map_err(&base_err)?;
            rules.allow(base.host_str().unwrap_or_default());
            let mut fills = BTreeMap::new();
            for fill in &op.fills {
                if let FillFrom::Value(raw) = &fill.from {
                    let value = Interpolated::new(raw.clone())
                        .and_then(|v| {
                            let literal = v.is_literal();
                            v.resolve_as(toolgate_model::secrets::Field::Plain)
                                .map(|s| (s, literal))
                        })
                        .map_err(|e| {
                            auth_err(format!("tool `{}`: argument `{}`: {e}", op.name, fill.arg))
                        })?;
                    if !value.1 {
                        secret_header_fill |= op.parameters.iter().any(|p| {
                            p.arg == fill.arg
                                && p.location == toolgate_model::openapi::ParamLocation::Header
                        });
                    }
                    fills.insert(fill.arg.clone(), value.0);
                }
            }
            ops.push(Bound { op, base, fills });
        }
        let rules = Arc::new(rules);
        // Credentials in headers reqwest keeps across origins (`X-API-Key`, secret header
        // fills): same-origin redirects only. Never https → http (C18).
        let header_secrets = auth.sends_custom_headers() || secret_header_fill;
        let client = match self.client {
            Some(c) => c,
            None => rules
                .clone()
                .client_builder()
                .redirect(rules.clone().credential_redirect_policy(header_secrets))
                .user_agent(concat!("toolgate/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| OpenApiSourceError::Client {
                    source_id: id.clone(),
                    message: e.to_string(),
                })?,
        };
        let tools: Vec<Arc<ToolDescriptor>> = ops
            .iter()
            .map(|b| Arc::new(descriptor(&id, prefix, &b.op, cfg)))
            .collect();
        let by_name = tools
            .iter()
            .enumerate()
            .map(|(i, d)| (d.name.clone(), i))
            .collect();
        Ok(OpenApiSource {
            prefix,
            tools,
            by_name,
            ops,
            client,
            rules,
            auth,
            hook: self.hook,
            timeout: cfg.and_then(|c| c.timeout_ms).map(Duration::from_millis),
            max_response_bytes: cfg
                .and_then(|c| c.max_response_bytes)
                .unwrap_or(DEFAULT_MAX_RESPONSE_BYTES),
            id,
        })
    }
}

impl OpenApiSource {
    /// The tool called `name` (its name inside the toolset), if the document gives it.
    pub fn descriptor(&self, name: &str) -> Option<Arc<ToolDescriptor>> {
        self.by_name.get(name).map(|&i| self.tools[i].clone())
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
        self.tools
            .iter()
            .enumerate()
            .map(|(i, d)| SourceTool::indexed(Arc::clone(d), i))
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

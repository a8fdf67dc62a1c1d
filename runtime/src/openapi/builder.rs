//! [`OpenApiSourceBuilder`]: a conversion and its tools.yaml entry made into an
//! [`OpenApiSource`] (server URLs, credentials and fills resolved, the client built, the
//! schemas compacted), and the descriptor of one operation.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::json;
use toolgate_model::config::{Interpolated, Secret};
use toolgate_model::openapi::FillFrom;

use super::compact::Interner;
use super::{
    Bound, Conversion, DEFAULT_MAX_RESPONSE_BYTES, OpenApiHook, OpenApiSource, OpenApiSourceError,
    Operation, auth, request,
};
use crate::net::HostRules;
use crate::{ToolAnnotations, ToolDescriptor};

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
}

/// The descriptor of `op` in source `id` (its name prefixed with `prefix`), without schemas
/// (`input_schema` null: the caller puts them in). `category` is tools.yaml's (else the
/// operation's first tag); `timeout` the entry's `timeout_ms`.
pub(super) fn descriptor(
    id: &str,
    prefix: bool,
    op: &Operation,
    category: Option<&String>,
    timeout: Option<Duration>,
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
        annotations: ToolAnnotations {
            title: None,
            read_only_hint: Some(read_only),
            destructive_hint: (!read_only).then_some(method == "DELETE"),
            idempotent_hint: Some(read_only || matches!(method.as_str(), "PUT" | "DELETE")),
            open_world_hint: Some(true),
        },
        source: id.to_string(),
        category: category.or_else(|| op.tags.first()).cloned(),
        tags,
        timeout,
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

    /// The URL the document was read from: relative server URLs resolve against it.
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
        let version = source_version(&id, cfg, &self.conversion.version)?;
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
        let prefix = cfg.is_none_or(|c| c.prefix);
        let mut ops = Vec::with_capacity(self.conversion.tools.len());
        let mut schemas = Interner::default();
        let mut secret_header_fill = false;
        // The document's servers are checked even when no operation uses them (a bad
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
        for mut op in self.conversion.tools {
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
            let input = std::mem::take(&mut op.input_schema);
            let output = op.output_schema.take().map(|o| schemas.compact(o));
            if op
                .fills
                .iter()
                .any(|f| matches!(f.from, FillFrom::Context(_)))
                && let Some(required) = input.get("required")
            {
                op.input_schema = json!({ "required": required.clone() });
            }
            ops.push(Bound {
                op,
                input: schemas.compact(input),
                output,
                base,
                fills,
                live: Mutex::new(Weak::new()),
            });
        }
        let rules = Arc::new(rules);
        // Credentials in headers reqwest keeps across origins (`X-API-Key`, secret header
        // fills): same-origin redirects only. Never https → http.
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
        let by_name: HashMap<String, usize> = ops
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let name = if prefix {
                    format!("{id}.{}", b.op.name)
                } else {
                    b.op.name.clone()
                };
                (name, i)
            })
            .collect();
        Ok(OpenApiSource {
            prefix,
            by_name,
            ops,
            defs: schemas.finish(),
            recent: Mutex::new(VecDeque::with_capacity(super::RECENT_DESCRIPTORS)),
            category: cfg.and_then(|c| c.category.clone()),
            client,
            rules,
            auth,
            hook: self.hook,
            timeout: cfg.and_then(|c| c.timeout_ms).map(Duration::from_millis),
            max_response_bytes: cfg
                .and_then(|c| c.max_response_bytes)
                .unwrap_or(DEFAULT_MAX_RESPONSE_BYTES),
            version,
            id,
        })
    }
}

/// The version of the source's tools: tools.yaml's `version`, else the document's
/// `info.version` when it is a semantic version (a date, `1.0` or `v2` leaves them
/// unversioned, logged at info level), checked against tools.yaml's `require`.
///
/// # Errors
/// [`OpenApiSourceError::Version`]: tools.yaml's `version` or `require` is malformed, or the
/// version does not meet `require` (or there is none under it).
pub(super) fn source_version(
    id: &str,
    cfg: Option<&toolgate_model::config::OpenApiSource>,
    document: &str,
) -> Result<Option<String>, OpenApiSourceError> {
    let err = |message: String| OpenApiSourceError::Version {
        source_id: id.to_string(),
        message,
    };
    let version = match cfg.and_then(|c| c.version.as_deref()) {
        Some(v) => {
            toolgate_model::config::check_version(v).map_err(err)?;
            Some(v.to_string())
        }
        None => {
            let v = toolgate_model::config::semantic(document);
            if v.is_none() && !document.trim().is_empty() {
                tracing::info!(source = %id, version = %document, "the document's info.version is not a semantic version: its tools are unversioned (set `version:` in tools.yaml to give them one)");
            }
            v
        }
    };
    if let Some(req) = cfg.and_then(|c| c.require.as_deref()) {
        toolgate_model::config::Constraint::parse(req)
            .and_then(|c| c.check(version.as_deref()))
            .map_err(err)?;
    }
    Ok(version)
}

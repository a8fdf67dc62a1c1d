//! `tools.openapi`: HTTP API operations from OpenAPI documents, and the `auth:` shape shared by
//! HTTP-based sources.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::interpolate::Interpolated;

/// An OpenAPI 3.0 / 3.1 document whose operations become tools named `{id}.{operationId}`.
///
/// ```yaml
/// tools:
///   openapi:
///     - id: petstore
///       spec: specs/petstore.yaml          # a path (relative to the crate root) or a URL
///       load: build                        # build (default): compiled in; runtime: fetched at start
///       base_url: https://petstore.example/v1
///       include: {tags: [pets]}
///       exclude: {operations: [deletePet], paths: ["/admin/**"]}
///       auth: {bearer: "${PETSTORE_TOKEN}"}
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenApiSource {
    /// The source id, prefix of its tools (`{id}.{operationId}`). Tool-name characters, no `__`,
    /// not `local`, unique among all sources.
    pub id: String,
    /// Where the document is: a file path (relative to the crate root, the folder of
    /// `Cargo.toml`) or an `http(s)://` URL.
    pub spec: String,
    /// When the document is read: `build` (default) compiles it in; `runtime` loads it when the
    /// toolset starts.
    #[serde(default)]
    pub load: LoadMode,
    /// The server to call; defaults to the document's first `servers` entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Only operations matching this filter become tools (empty: all).
    #[serde(default, skip_serializing_if = "OperationFilter::is_empty")]
    pub include: OperationFilter,
    /// Operations matching this filter are left out (applied after `include`).
    #[serde(default, skip_serializing_if = "OperationFilter::is_empty")]
    pub exclude: OperationFilter,
    /// How requests authenticate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<AuthConfig>,
}

impl OpenApiSource {
    /// Whether [`spec`](Self::spec) is a URL rather than a file.
    pub fn spec_is_url(&self) -> bool {
        self.spec.starts_with("http://") || self.spec.starts_with("https://")
    }
}

/// When an OpenAPI document is read.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum LoadMode {
    /// At build time: operations are compiled into the binary (typed, checked by `cargo build`).
    #[default]
    Build,
    /// At run time, when the toolset starts.
    Runtime,
}

/// Selects operations of an OpenAPI document. An operation matches when any list matches it;
/// an empty filter matches nothing as `exclude` and everything as `include`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OperationFilter {
    /// `operationId`s.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operations: Vec<String>,
    /// Operation tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Path globs (`*` one segment, `**` any number): `/pets/*`, `/admin/**`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
}

impl OperationFilter {
    /// Whether no list has an entry.
    pub fn is_empty(&self) -> bool {
        self.operations.is_empty() && self.tags.is_empty() && self.paths.is_empty()
    }
}

/// How an HTTP-based source (OpenAPI, A2A) authenticates. One key, the scheme:
///
/// ```yaml
/// auth: {bearer: "${TOKEN}"}
/// auth: {api_key: {in: header, name: X-API-Key, value: "${KEY}"}}
/// auth: {basic: {username: me, password: "${PASSWORD}"}}
/// auth: {headers: {X-Org: acme, X-Token: "${TOKEN}"}}
/// ```
///
/// Every value is [`Interpolated`]: secrets come from the environment at run time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum AuthConfig {
    /// `Authorization: Bearer <token>`.
    Bearer(Interpolated),
    /// An API key in a header, query parameter or cookie.
    ApiKey(ApiKeyAuth),
    /// HTTP basic authentication.
    Basic(BasicAuth),
    /// Arbitrary headers added to every request.
    Headers(BTreeMap<String, Interpolated>),
}

/// An API key sent with each request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyAuth {
    /// Where the key goes.
    #[serde(rename = "in")]
    pub location: ApiKeyLocation,
    /// The header, query parameter or cookie name.
    pub name: String,
    /// The key.
    pub value: Interpolated,
}

/// Where an API key is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApiKeyLocation {
    /// A request header.
    Header,
    /// A query parameter.
    Query,
    /// A cookie.
    Cookie,
}

/// HTTP basic authentication.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BasicAuth {
    /// The user name.
    pub username: Interpolated,
    /// The password.
    pub password: Interpolated,
}

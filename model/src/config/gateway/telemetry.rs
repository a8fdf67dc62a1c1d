//! `gateway.telemetry`: where `toolgate serve` sends its per-call spans (OTLP export,
//! docs/telemetry.md).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::interpolate::Interpolated;

/// `gateway.telemetry`: the gateway's telemetry besides the log and `/metrics`.
///
/// ```yaml
/// gateway:
///   telemetry:
///     otlp:
///       endpoint: http://127.0.0.1:4318      # OTLP/HTTP base URL; /v1/traces is appended
///       headers: {authorization: "Bearer ${OTLP_TOKEN}"}
///       service_name: toolgate-eu
///       resource_attributes: {deployment.environment.name: prod}
///       sample_ratio: 0.25
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    /// OTLP export of every call's span (a `toolgate` built with the `otel` feature, the
    /// default). Absent: spans are exported only when the standard `OTEL_EXPORTER_OTLP_ENDPOINT`
    /// or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` environment variable is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub otlp: Option<OtlpConfig>,
}

impl TelemetryConfig {
    /// Whether nothing is set (the section is left out when written back).
    pub fn is_empty(&self) -> bool {
        self.otlp.is_none()
    }
}

/// `gateway.telemetry.otlp`: OTLP/HTTP export of the `tool_call` spans. Each field left out
/// is taken from the standard OpenTelemetry environment variable named with it, then from the
/// default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OtlpConfig {
    /// `false` turns the export off (also when the `OTEL_EXPORTER_OTLP_*` variables are set).
    /// Default `true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// The collector's OTLP/HTTP base URL (`http://collector:4318`); spans go to its
    /// `/v1/traces`. Else `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (taken as the whole URL), else
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` (a base URL), else `http://localhost:4318`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The OTLP transport: `http/protobuf`, the only one built in (the default; `grpc` and
    /// `http/json` are refused). Else `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` /
    /// `OTEL_EXPORTER_OTLP_PROTOCOL`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// Headers sent with every export (`${ENV}` allowed; every value is treated as a secret and
    /// never printed). Merged over `OTEL_EXPORTER_OTLP_TRACES_HEADERS` /
    /// `OTEL_EXPORTER_OTLP_HEADERS` (`name=value,...`): a name set here wins.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, Interpolated>,
    /// The resource's `service.name`. Else `OTEL_SERVICE_NAME`, else `service.name` in
    /// `OTEL_RESOURCE_ATTRIBUTES`, else `toolgate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
    /// More resource attributes (`deployment.environment.name: prod`), merged over
    /// `OTEL_RESOURCE_ATTRIBUTES` (`key=value,...`): a key set here wins. `service.version` is
    /// toolgate's version unless set.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resource_attributes: BTreeMap<String, String>,
    /// The share of new traces kept, from 0 to 1 (default 1: every call). A call that comes
    /// with a `traceparent` follows its caller's sampled flag instead (parent-based sampling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_ratio: Option<f64>,
    /// How long one export may take, in milliseconds (default 10000, else
    /// `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` / `OTEL_EXPORTER_OTLP_TIMEOUT`); the flush at
    /// shutdown waits at most this long too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// The most finished spans waiting for export (default 2048, else `OTEL_BSP_MAX_QUEUE_SIZE`);
    /// spans beyond it are dropped, never waited for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_queue_size: Option<usize>,
}

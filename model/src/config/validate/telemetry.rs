//! Checks of `gateway.telemetry` (OTLP export): what `toolgate serve` would refuse at start-up,
//! found by `toolgate check` and the build too, with its line.

use super::super::{Diagnostic, LoadedConfig};
use super::is_http_url;

/// `gateway.telemetry.otlp`: an http(s) endpoint, the one transport built in, a sample ratio
/// between 0 and 1, limits that let spans through, header names HTTP accepts.
pub(super) fn check_telemetry(cfg: &LoadedConfig, errors: &mut Vec<Diagnostic>) {
    let Some(otlp) = &cfg.gateway.telemetry.otlp else {
        return;
    };
    let at = |key: &str| format!("/gateway/telemetry/otlp/{key}");
    if let Some(endpoint) = &otlp.endpoint
        && !is_http_url(endpoint)
    {
        errors.push(
            cfg.error_at(
                &at("endpoint"),
                format!("`{endpoint}` is not an http(s) URL"),
            )
            .with_hint("the collector's OTLP/HTTP base URL, e.g. http://otel-collector:4318"),
        );
    }
    if let Some(protocol) = &otlp.protocol
        && protocol != "http/protobuf"
    {
        errors.push(
            cfg.error_at(
                &at("protocol"),
                format!("protocol `{protocol}`: toolgate exports OTLP over `http/protobuf` only"),
            )
            .with_hint("point `endpoint` at the collector's OTLP/HTTP port (4318 by default)"),
        );
    }
    if let Some(ratio) = otlp.sample_ratio
        && !(0.0..=1.0).contains(&ratio)
    {
        errors.push(
            cfg.error_at(
                &at("sample_ratio"),
                format!("`sample_ratio: {ratio}` is not between 0 and 1"),
            )
            .with_hint("0.25 keeps a quarter of the traces the gateway starts"),
        );
    }
    if otlp.timeout_ms == Some(0) {
        errors.push(cfg.error_at(
            &at("timeout_ms"),
            "`timeout_ms: 0`: no export could finish in time",
        ));
    }
    if otlp.max_queue_size == Some(0) {
        errors.push(cfg.error_at(
            &at("max_queue_size"),
            "`max_queue_size: 0`: every span would be dropped",
        ));
    }
    for name in otlp.headers.keys() {
        let token = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !token {
            errors.push(cfg.error_at(
                &format!("{}/{}", at("headers"), super::escape(name)),
                format!("`{name}` is not an HTTP header name"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::config::ToolsConfig;

    fn errors(src: &str) -> Vec<String> {
        ToolsConfig::from_yaml_str(src, Path::new("tools.yaml"))
            .expect_err("expected an error")
            .diagnostics()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn an_otlp_section_is_read_with_every_setting() {
        let src = "version: 1\ngateway:\n  telemetry:\n    otlp:\n      endpoint: http://127.0.0.1:4318\n      protocol: http/protobuf\n      headers: {authorization: \"Bearer ${OTLP_TOKEN}\"}\n      service_name: gw-eu\n      resource_attributes: {deployment.environment.name: prod}\n      sample_ratio: 0.25\n      timeout_ms: 2000\n      max_queue_size: 100\n";
        let loaded = ToolsConfig::from_yaml_str(src, Path::new("tools.yaml"))
            .unwrap_or_else(|e| panic!("{e}"));
        let otlp = loaded.config.gateway.telemetry.otlp.as_ref().expect("otlp");
        assert_eq!(otlp.endpoint.as_deref(), Some("http://127.0.0.1:4318"));
        assert_eq!(otlp.service_name.as_deref(), Some("gw-eu"));
        assert_eq!(otlp.sample_ratio, Some(0.25));
        assert_eq!(otlp.timeout_ms, Some(2000));
        assert_eq!(otlp.max_queue_size, Some(100));
        assert_eq!(
            otlp.resource_attributes["deployment.environment.name"],
            "prod"
        );
        // The header is kept as written: `${OTLP_TOKEN}` is resolved when `serve` starts.
        assert_eq!(otlp.headers["authorization"].raw(), "Bearer ${OTLP_TOKEN}");
        // The JSON Schema (`toolgate schema-config`) describes the section.
        let schema = ToolsConfig::json_schema();
        let defs = &schema["$defs"];
        assert!(
            defs["OtlpConfig"]["properties"]["sample_ratio"].is_object(),
            "{defs}"
        );
        assert!(
            defs["TelemetryConfig"]["properties"]["otlp"].is_object(),
            "{defs}"
        );
    }

    #[test]
    fn otlp_settings_that_cannot_work_are_errors_with_their_line() {
        let src = "version: 1\ngateway:\n  telemetry:\n    otlp:\n      endpoint: collector:4318\n      protocol: grpc\n      headers: {\"bad header\": x}\n      sample_ratio: 1.5\n      timeout_ms: 0\n      max_queue_size: 0\n";
        let errors = errors(src);
        for (want, line) in [
            ("is not an http(s) URL", 5),
            ("`http/protobuf` only", 6),
            ("is not an HTTP header name", 7),
            ("`sample_ratio: 1.5` is not between 0 and 1", 8),
            ("`timeout_ms: 0`", 9),
            ("`max_queue_size: 0`", 10),
        ] {
            assert!(
                errors
                    .iter()
                    .any(|e| e.contains(want) && e.contains(&format!("tools.yaml:{line}"))),
                "missing {want} at line {line} in {errors:#?}"
            );
        }
        // A misspelt key is refused too.
        let misspelt = "version: 1\ngateway: {telemetry: {otlp: {endpont: x}}}\n";
        assert!(ToolsConfig::from_yaml_str(misspelt, Path::new("tools.yaml")).is_err());
    }
}

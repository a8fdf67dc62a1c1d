//! Checks of `gateway.code_mode`: limits that let code run, mounts the sandbox can offer.

use super::super::{Diagnostic, LoadedConfig};

/// The longest `time_ms` a run may be given: ten minutes.
pub const MAX_CODE_TIME_MS: u64 = 600_000;

/// `gateway.code_mode`: non-zero limits (a time limit of at most ten minutes), mounts with an
/// absolute guest path without `..`, seen at distinct places.
pub(super) fn check_code_mode(cfg: &LoadedConfig, errors: &mut Vec<Diagnostic>) {
    let code = &cfg.gateway.code_mode;
    let at = |key: &str| format!("/gateway/code_mode/{key}");
    let limits = &code.limits;
    for (key, zero) in [
        ("time_ms", limits.time_ms == Some(0)),
        ("memory_bytes", limits.memory_bytes == Some(0)),
        ("output_bytes", limits.output_bytes == Some(0)),
    ] {
        if zero {
            errors.push(cfg.error_at(
                &at(&format!("limits/{key}")),
                format!("`{key}: 0`: no code could run within it"),
            ));
        }
    }
    if let Some(ms) = limits.time_ms
        && ms > MAX_CODE_TIME_MS
    {
        errors.push(
            cfg.error_at(
                &at("limits/time_ms"),
                format!(
                    "`time_ms: {ms}` is longer than the most a run may take ({MAX_CODE_TIME_MS} ms)"
                ),
            )
            .with_hint("a run holds a thread and the caller's request: keep it to seconds"),
        );
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, mount) in code.mounts.iter().enumerate() {
        let guest = mount.guest.trim_end_matches('/');
        if !mount.guest.starts_with('/') || guest.is_empty() || guest.split('/').any(|p| p == "..")
        {
            errors.push(
                cfg.error_at(
                    &at(&format!("mounts/{i}/guest")),
                    format!("`guest: {}` is not an absolute path below `/`", mount.guest),
                )
                .with_hint("where the code sees the folder, e.g. /data"),
            );
        } else if seen.contains(&guest) {
            errors.push(cfg.error_at(
                &at(&format!("mounts/{i}/guest")),
                format!("`{guest}` is mounted twice"),
            ));
        } else {
            seen.push(guest);
        }
        if mount.host.trim().is_empty() {
            errors.push(cfg.error_at(
                &at(&format!("mounts/{i}/host")),
                "`host` is empty: name the folder to mount",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::ToolsConfig;

    fn errors(src: &str) -> String {
        match ToolsConfig::from_yaml_str(src, std::path::Path::new("tools.yaml")) {
            Ok(_) => String::new(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_complete_code_mode_section_loads() {
        let src = "version: 1\ngateway:\n  code_mode:\n    enabled: true\n    engine: monty\n    limits: {time_ms: 2000, memory_bytes: 1000000, output_bytes: 4096, tool_calls: 5}\n    mounts: [{host: data, guest: /data}]\n";
        let loaded = ToolsConfig::from_yaml_str(src, std::path::Path::new("tools.yaml")).unwrap();
        let code = &loaded.config.gateway.code_mode;
        assert!(code.enabled);
        assert_eq!(code.limits.tool_calls, Some(5));
        assert_eq!(code.mounts[0].guest, "/data");
    }

    #[test]
    fn bad_limits_and_mounts_are_refused_at_their_line() {
        let src = "version: 1\ngateway:\n  code_mode:\n    enabled: true\n    limits: {time_ms: 0}\n    mounts:\n      - {host: data, guest: data}\n      - {host: a, guest: /x/../etc}\n      - {host: '', guest: /d}\n      - {host: b, guest: /d/}\n";
        let text = errors(src);
        assert!(text.contains("`time_ms: 0`"), "{text}");
        assert!(text.contains("tools.yaml:5"), "{text}");
        assert!(
            text.contains("`guest: data` is not an absolute path"),
            "{text}"
        );
        assert!(text.contains("`guest: /x/../etc`"), "{text}");
        assert!(text.contains("`host` is empty"), "{text}");
        assert!(text.contains("`/d` is mounted twice"), "{text}");
    }

    #[test]
    fn an_unknown_engine_or_key_is_refused() {
        let text = errors("version: 1\ngateway:\n  code_mode: {enabled: true, engine: cpython}\n");
        assert!(text.contains("cpython"), "{text}");
        let text = errors("version: 1\ngateway:\n  code_mode: {enabled: true, limit: {}}\n");
        assert!(text.contains("limit"), "{text}");
    }
}

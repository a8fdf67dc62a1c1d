//! Checks of `tools.openapi` entries that serde cannot express. (A `server_variables` key the
//! document has no variable for is found when the document is converted: by the build, or by
//! the runtime for `load: runtime` entries.)

use super::super::location::escape;
use super::super::{Diagnostic, LoadMode, LoadedConfig};
use crate::names::validate_tool_name;

/// A `spec` URL needs `load: runtime`; `hook` and `typed: false` only mean something for
/// compiled sources; `allow_hosts` are host names or `*.domain`; `names` values are tool names;
/// an adapter changes at least one argument.
pub(super) fn check_openapi(
    cfg: &LoadedConfig,
    errors: &mut Vec<Diagnostic>,
    warnings: &mut Vec<Diagnostic>,
) {
    for (i, s) in cfg.tools.openapi.iter().enumerate() {
        let at = |key: &str| format!("/tools/openapi/{i}/{key}");
        let id = &s.id;
        super::check_auth(
            cfg,
            &at("auth"),
            &format!("OpenAPI source `{id}`"),
            s.auth.as_ref(),
            true,
            errors,
        );
        if s.load == LoadMode::Build && s.spec_is_url() {
            errors.push(
                cfg.error_at(
                    &at("spec"),
                    format!(
                        "OpenAPI source `{id}`: `{}` is a URL, but `load: build` reads the document at build time, and build scripts do not reach the network",
                        s.spec
                    ),
                )
                .with_hint("add `load: runtime` to fetch it when the toolset starts, or download the file and name it here"),
            );
        }
        if let Some(Err(e)) = s.version.as_deref().map(super::super::check_version) {
            errors.push(cfg.error_at(&at("version"), format!("OpenAPI source `{id}`: {e}")));
        }
        if let Some(Err(e)) = s.require.as_deref().map(super::super::Constraint::parse) {
            errors.push(cfg.error_at(&at("require"), format!("OpenAPI source `{id}`: {e}")));
        }
        if s.spec.trim().is_empty() {
            errors.push(cfg.error_at(
                &at("spec"),
                format!("OpenAPI source `{id}`: `spec` is empty"),
            ));
        }
        if s.load == LoadMode::Runtime {
            if s.hook.is_some() {
                warnings.push(
                    cfg.warning_at(
                        &at("hook"),
                        format!("OpenAPI source `{id}`: `hook` is ignored with `load: runtime` (a hook is Rust code, compiled in)"),
                    )
                    .with_hint("use `load: build`, or add the hook in code with `OpenApiSource::builder(..).hook(..)`"),
                );
            }
            if !s.typed {
                warnings.push(cfg.warning_at(
                    &at("typed"),
                    format!("OpenAPI source `{id}`: `typed: false` means nothing with `load: runtime` (no Rust code is generated for it)"),
                ));
            }
        }
        for (j, host) in s.allow_hosts.iter().enumerate() {
            if !is_host_pattern(host) {
                errors.push(
                    cfg.error_at(
                        &format!("{}/{j}", at("allow_hosts")),
                        format!("OpenAPI source `{id}`: `{host}` is not a host name or `*.domain`"),
                    )
                    .with_hint("a name as in a URL, without scheme, port or path: `api.example.com`, `*.example.com`, `10.0.0.7`"),
                );
            }
        }
        for (key, name) in &s.names {
            if let Err(e) = validate_tool_name(name) {
                errors.push(cfg.error_at(
                    &format!("{}/{}", at("names"), escape(key)),
                    format!("OpenAPI source `{id}`: the name given to `{key}`: {e}"),
                ));
            }
        }
        for (j, a) in s.adapters.iter().enumerate() {
            if a.arguments.is_empty() {
                errors.push(
                    cfg.error_at(
                        &format!("{}/{j}", at("adapters")),
                        format!("OpenAPI source `{id}`: this adapter changes no argument (`arguments` is empty)"),
                    )
                    .with_hint("give `arguments: {name: {value: ...}}` (or `default`, `rename`, `from_context`, `drop`), or remove the adapter"),
                );
            }
            for (k, glob) in a.tools.iter().enumerate() {
                if let Err(e) = glob::Pattern::new(glob) {
                    errors.push(cfg.error_at(
                        &format!("{}/{j}/tools/{k}", at("adapters")),
                        format!("OpenAPI source `{id}`: `{glob}` is not a valid name or glob: {e}"),
                    ));
                }
            }
        }
    }
}

/// A host name (labels of letters, digits and `-`), an IP address, or `*.` and a host name.
pub(crate) fn is_host_pattern(host: &str) -> bool {
    if host.parse::<std::net::IpAddr>().is_ok() {
        return true;
    }
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return inner.parse::<std::net::Ipv6Addr>().is_ok();
    }
    let name = host.strip_prefix("*.").unwrap_or(host);
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
}

#[cfg(test)]
mod tests {
    use super::is_host_pattern;
    use crate::config::{ConfigError, ToolsConfig};

    fn load(yaml: &str) -> Result<Vec<String>, Vec<String>> {
        let strings = |ds: &[crate::config::Diagnostic]| {
            ds.iter().map(ToString::to_string).collect::<Vec<_>>()
        };
        match ToolsConfig::from_yaml_str(yaml, std::path::Path::new("tools.yaml")) {
            Ok(l) => Ok(strings(&l.warnings)),
            Err(ConfigError::Invalid(d)) => Err(strings(&d)),
            Err(e) => Err(vec![e.to_string()]),
        }
    }

    #[test]
    fn openapi_rules() {
        let errors = load(
            "version: 1
tools:
  openapi:
    - id: a
      spec: https://example.com/openapi.json
      allow_hosts: [ok.example.com, '*.example.com', 'https://bad.example.com']
      names: {getPet: 'get pet'}
      adapters:
        - tools: [getPet]
          arguments: {}
",
        )
        .unwrap_err();
        assert_eq!(errors.len(), 4, "{errors:#?}");
        assert!(errors[0].starts_with("error: tools.yaml:5:13: OpenAPI source `a`: `https://example.com/openapi.json` is a URL"), "{errors:#?}");
        assert!(errors[0].contains("load: runtime"), "{errors:#?}");
        assert!(errors[1].starts_with("error: tools.yaml:6:54: OpenAPI source `a`: `https://bad.example.com` is not a host name"), "{errors:#?}");
        assert!(
            errors[2].starts_with(
                "error: tools.yaml:7:23: OpenAPI source `a`: the name given to `getPet`"
            ),
            "{errors:#?}"
        );
        assert!(
            errors[3].starts_with(
                "error: tools.yaml:9:11: OpenAPI source `a`: this adapter changes no argument"
            ),
            "{errors:#?}"
        );
        let warnings = load(
            "version: 1
tools:
  openapi:
    - {id: a, spec: 'https://example.com/openapi.json', load: runtime, hook: crate::HOOK, typed: false}
",
        )
        .unwrap();
        assert_eq!(warnings.len(), 2, "{warnings:#?}");
        assert!(
            warnings[0].contains("`hook` is ignored with `load: runtime`"),
            "{warnings:#?}"
        );
        assert!(
            warnings[1].contains("`typed: false` means nothing"),
            "{warnings:#?}"
        );
    }

    #[test]
    fn host_patterns() {
        for ok in [
            "api.example.com",
            "*.example.com",
            "localhost",
            "10.0.0.7",
            "::1",
            "[::1]",
        ] {
            assert!(is_host_pattern(ok), "{ok}");
        }
        for bad in [
            "https://api.example.com",
            "api.example.com:443",
            "a/b",
            "*",
            "*.",
            "-a.com",
            "a..b",
            "",
            "a*.com",
            "api.*.com",
        ] {
            assert!(!is_host_pattern(bad), "{bad}");
        }
    }
}

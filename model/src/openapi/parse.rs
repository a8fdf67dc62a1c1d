//! Text → JSON value, and the version check (OAS 3.0 §4.7.1 / 3.1 §4.8.1 `openapi` field).

use serde_json::Value;

use super::OpenApiError;
use serde_saphyr::MessageFormatter as _;

/// Parses JSON (when the text starts with `{`) or YAML into a JSON value.
///
/// # Errors
/// [`OpenApiError::Parse`] with line and column when the parser gives them.
pub(crate) fn parse_text(text: &str, origin: &str) -> Result<Value, OpenApiError> {
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if trimmed.starts_with('{') {
        return serde_json::from_str(trimmed).map_err(|e| OpenApiError::Parse {
            origin: origin.to_string(),
            message: format!(
                "invalid JSON at line {}, column {}: {e}",
                e.line(),
                e.column()
            ),
        });
    }
    let mut options = serde_saphyr::Options::default();
    // Real documents (Stripe: 4 MB) exceed the default budget, which guards untrusted input
    // against alias bombs; an OpenAPI document is the operator's own file.
    if let Some(budget) = options.budget.as_mut() {
        budget.max_events = usize::MAX / 2;
        budget.max_nodes = usize::MAX / 2;
        budget.max_total_scalar_bytes = usize::MAX / 2;
        budget.max_depth = budget.max_depth.max(2000);
    }
    // OpenAPI 3.1 (section 4.3, "Format") requires YAML 1.2: only `true` / `false` are booleans,
    // so `n`, `y`, `on`, `NO` stay strings (a parameter named `n`, an enum of country codes).
    options.strict_booleans = true;
    serde_saphyr::from_str_with_options::<Value>(text, options).map_err(|e| {
        let message = serde_saphyr::DefaultMessageFormatter.format_message(e.without_snippet());
        let at = e
            .location()
            .map(|l| format!(" at line {}, column {}", l.line(), l.column()))
            .unwrap_or_default();
        OpenApiError::Parse {
            origin: origin.to_string(),
            message: format!("invalid YAML{at}: {message}"),
        }
    })
}

/// Checks the `openapi` / `swagger` field; returns the version text (`3.0.3`).
///
/// `3.0.x` and `3.1.x` are read; `3.2.x` is read as the superset it is (the `query` method, tag
/// `parent`/`kind` ignored). Swagger 2.0 is refused with the advice to convert it.
///
/// # Errors
/// [`OpenApiError::Parse`] when the value is not an OpenAPI document; [`OpenApiError::Version`]
/// for Swagger 2.0 and versions other than 3.0–3.2.
pub(crate) fn check_version(root: &Value, origin: &str) -> Result<String, OpenApiError> {
    let version_err = |message: String| OpenApiError::Version {
        origin: origin.to_string(),
        message,
    };
    let Some(obj) = root.as_object() else {
        return Err(OpenApiError::Parse {
            origin: origin.to_string(),
            message: "not an OpenAPI document (the top level is not a mapping)".to_string(),
        });
    };
    if let Some(s) = obj.get("swagger") {
        let v = scalar(s);
        return Err(version_err(format!(
            "Swagger {v} is not supported: convert the document to OpenAPI 3 first \
             (for example `npx swagger2openapi {origin} -o openapi.yaml`)"
        )));
    }
    let Some(v) = obj.get("openapi") else {
        return Err(OpenApiError::Parse {
            origin: origin.to_string(),
            message: "not an OpenAPI document (no `openapi` field)".to_string(),
        });
    };
    let v = scalar(v);
    let mut parts = v.split('.');
    let major = parts.next().unwrap_or("");
    let minor = parts.next().unwrap_or("");
    if major == "3" && matches!(minor, "0" | "1" | "2") {
        Ok(v)
    } else {
        Err(version_err(format!(
            "OpenAPI {v} is not supported (toolgate reads OpenAPI 3.0, 3.1 and 3.2)"
        )))
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

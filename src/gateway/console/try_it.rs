//! One tool's page: its definition in every export dialect (with the export's notes), its
//! annotations and the policy in effect, and a form generated from its input schema that calls
//! it through the gateway's call path as the signed-in caller (`POST /console/tools/{name}/call`).

use std::collections::HashMap;
use std::sync::Arc;

use askama::Template;
use axum::extract::{Form, Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;
use toolgate_model::names::exported_name;
use toolgate_runtime::{Dialect, ProgressReporter, ToolDescriptor, ToolError, ToolOutput};

use super::checked_post;
use super::render::{Chrome, Message, page};
use super::session::Session;
use crate::gateway::Gateway;

/// The longest a call from the form may take (the tool's own timeout applies too).
const FORM_CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// One field of the try-it form, from one property of the input schema.
pub(crate) struct Field {
    /// The argument's name (the field is `arg.{name}`).
    pub name: String,
    /// Its description, if the schema gives one.
    pub description: String,
    pub required: bool,
    /// `text`, `number`, `integer`, `boolean`, `select` (an `enum`) or `json` (anything else:
    /// objects, arrays, unions), each typed into the argument as the schema says.
    pub widget: &'static str,
    /// The choices of a `select` (the empty one first when the argument is optional).
    pub options: Vec<String>,
    /// What the field holds now (what was sent, or the schema's `default`).
    pub value: String,
}

/// The form's fields, one per property of `schema` (an object schema), in its order.
pub(crate) fn fields(schema: &Value, sent: &HashMap<String, String>) -> Vec<Field> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, p)| {
            let required = required.contains(&name.as_str());
            let (widget, mut options) = widget(p);
            if widget == "select" && !required {
                options.insert(0, String::new());
            }
            let default = p.get("default").map(|d| match d {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            });
            Field {
                name: name.clone(),
                description: p
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                required,
                widget,
                options,
                value: sent
                    .get(&format!("arg.{name}"))
                    .cloned()
                    .or(default)
                    .unwrap_or_default(),
            }
        })
        .collect()
}

/// The widget of a property schema, and its choices.
fn widget(p: &Value) -> (&'static str, Vec<String>) {
    if let Some(choices) = p.get("enum").and_then(Value::as_array)
        && choices.iter().all(Value::is_string)
    {
        let options = choices.iter().filter_map(Value::as_str).map(str::to_string);
        return ("select", options.collect());
    }
    match p.get("type").and_then(Value::as_str) {
        Some("string") => ("text", Vec::new()),
        Some("integer") => ("integer", Vec::new()),
        Some("number") => ("number", Vec::new()),
        Some("boolean") => ("select", vec!["true".into(), "false".into()]),
        _ => ("json", Vec::new()),
    }
}

/// The arguments object the form's fields make: each non-empty field typed as its property
/// says; or, when the `raw` field holds JSON, that. An empty optional field is left out.
///
/// # Errors
/// Why a field's text is not a value of its type (the tool's own validation says the rest).
pub(crate) fn arguments(schema: &Value, form: &HashMap<String, String>) -> Result<Value, String> {
    if let Some(raw) = form.get("raw").map(|r| r.trim()).filter(|r| !r.is_empty()) {
        return serde_json::from_str(raw)
            .map_err(|e| format!("the JSON arguments do not parse: {e}"));
    }
    let mut args = Map::new();
    for field in fields(schema, form) {
        let text = form
            .get(&format!("arg.{}", field.name))
            .map(String::as_str)
            .unwrap_or_default();
        if text.is_empty() {
            continue;
        }
        let p = &schema["properties"][&field.name];
        let value =
            match (field.widget, p.get("type").and_then(Value::as_str)) {
                ("text", _) => Value::String(text.to_string()),
                ("select", Some("boolean")) => Value::Bool(text == "true"),
                ("select", _) => Value::String(text.to_string()),
                ("integer", _) => text.trim().parse::<i64>().map(Value::from).map_err(|_| {
                    format!("`{}` must be a whole number, not `{text}`", field.name)
                })?,
                ("number", _) => text
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .and_then(|n| serde_json::Number::from_f64(n).map(Value::Number))
                    .ok_or_else(|| format!("`{}` must be a number, not `{text}`", field.name))?,
                _ => serde_json::from_str(text)
                    .map_err(|e| format!("`{}` must be JSON: {e}", field.name))?,
            };
        args.insert(field.name, value);
    }
    Ok(Value::Object(args))
}

/// One dialect's export of the tool.
pub(crate) struct Export {
    pub dialect: &'static str,
    pub definition: String,
    pub notes: Vec<String>,
    pub error: String,
}

/// One part of a result, as shown.
pub(crate) struct Part {
    /// `text`, `image`, `audio`, `resource_link`, `resource` or `other`.
    pub kind: &'static str,
    pub text: String,
    pub mime: String,
    /// A `data:` URI (images, audio) or the resource's URI.
    pub uri: String,
}

/// A call's result, as shown.
pub(crate) struct Outcome {
    pub ok: bool,
    pub headline: String,
    pub parts: Vec<Part>,
    pub structured: String,
}

fn outcome(result: Result<ToolOutput, ToolError>) -> Outcome {
    use toolgate_runtime::Content;
    match result {
        Ok(out) => Outcome {
            ok: !out.is_error,
            headline: if out.is_error {
                "The tool reported an error".into()
            } else {
                "Result".into()
            },
            parts: out
                .content
                .iter()
                .map(|c| match c {
                    Content::Text { text } => Part {
                        kind: "text",
                        text: text.clone(),
                        mime: String::new(),
                        uri: String::new(),
                    },
                    Content::Image { data, mime_type } | Content::Audio { data, mime_type } => {
                        Part {
                            kind: if matches!(c, Content::Image { .. }) {
                                "image"
                            } else {
                                "audio"
                            },
                            text: String::new(),
                            uri: format!("data:{mime_type};base64,{data}"),
                            mime: mime_type.clone(),
                        }
                    }
                    Content::ResourceLink {
                        uri,
                        name,
                        mime_type,
                        ..
                    } => Part {
                        kind: "resource_link",
                        text: name.clone(),
                        mime: mime_type.clone().unwrap_or_default(),
                        uri: uri.clone(),
                    },
                    Content::Resource { resource } => {
                        let v = serde_json::to_value(resource).unwrap_or_default();
                        Part {
                            kind: "resource",
                            text: v.get("text").and_then(Value::as_str).map_or_else(
                                || {
                                    format!(
                                        "({} bytes, base64)",
                                        v.get("blob").and_then(Value::as_str).map_or(0, str::len)
                                    )
                                },
                                str::to_string,
                            ),
                            mime: v
                                .get("mimeType")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_string(),
                            uri: v
                                .get("uri")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_string(),
                        }
                    }
                })
                .collect(),
            structured: out
                .structured
                .as_ref()
                .and_then(|s| serde_json::to_string_pretty(s).ok())
                .unwrap_or_default(),
        },
        Err(e) => Outcome {
            ok: false,
            headline: format!("Refused or failed: {}", e.kind().as_str()),
            parts: vec![Part {
                kind: "text",
                text: e.message().to_string(),
                mime: String::new(),
                uri: String::new(),
            }],
            structured: String::new(),
        },
    }
}

#[derive(Template)]
#[template(path = "tool.html", config = "src/gateway/console/askama.toml")]
struct ToolPage {
    chrome: Option<Chrome>,
    name: String,
    exported_name: String,
    description: String,
    source: String,
    version: String,
    category: String,
    tags: String,
    hints: String,
    annotations: String,
    input_schema: String,
    output_schema: String,
    exports: Vec<Export>,
    /// What the policy does for this tool: `(what, how)` rows.
    policy: Vec<(String, String)>,
    fields: Vec<Field>,
    raw: String,
    form_error: String,
    outcome: Option<Outcome>,
}

/// The tool if `session`'s caller may see it (as `GET /tools/{name}` decides), else the
/// not-found page.
async fn visible(
    gateway: &Gateway,
    session: &Session,
    name: &str,
) -> Result<Arc<ToolDescriptor>, Box<Response>> {
    let not_found = || {
        Box::new(Message::page(
            Some(Chrome::new(session, "tools")),
            StatusCode::NOT_FOUND,
            "No such tool",
            &format!("No tool `{name}` that you may call."),
        ))
    };
    let d = gateway
        .toolset()
        .lookup(name)
        .await
        .map_err(|_| not_found())?;
    if gateway.toolset().may_call(&d, &session.caller.identity()) {
        Ok(d)
    } else {
        Err(not_found())
    }
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

/// The largest definition (input and output schema, as compact JSON) a tool page shows in
/// full: beyond it the page names the size instead of the schemas and the five exports, and
/// offers the JSON box only (a page of a 4 MB schema would be some 70 MB of HTML, rendered
/// while other requests wait).
pub(crate) const MAX_SHOWN_SCHEMA_BYTES: usize = 256 * 1024;

fn tool_page(
    gateway: &Gateway,
    session: &Session,
    d: &ToolDescriptor,
    sent: &HashMap<String, String>,
    form_error: String,
    outcome: Option<Outcome>,
) -> Response {
    let size = serde_json::to_vec(&d.input_schema).map_or(0, |v| v.len())
        + d.output_schema
            .as_ref()
            .and_then(|o| serde_json::to_vec(o).ok())
            .map_or(0, |v| v.len());
    let too_large = size > MAX_SHOWN_SCHEMA_BYTES;
    let not_shown = || {
        format!(
            "not shown: the definition is {size} bytes (the console shows at most {MAX_SHOWN_SCHEMA_BYTES}); read it with GET /tools/{}?dialect=...",
            d.name
        )
    };
    let exports = Dialect::ALL
        .into_iter()
        .filter(|_| !too_large)
        .map(|dialect| match d.export_with_notes(dialect) {
            Ok((definition, notes)) => Export {
                dialect: dialect.as_str(),
                definition: pretty(&definition),
                notes,
                error: String::new(),
            },
            Err(e) => Export {
                dialect: dialect.as_str(),
                definition: String::new(),
                notes: Vec::new(),
                error: e.to_string(),
            },
        })
        .collect();
    let toolset = gateway.toolset();
    let timeout = d.timeout.or(toolset.default_timeout());
    let mut policy = vec![
        (
            "Timeout".to_string(),
            timeout.map_or_else(|| "none".to_string(), |t| format!("{} ms", t.as_millis())),
        ),
        ("Dangerous".to_string(), d.dangerous.to_string()),
        (
            "Requires authentication".to_string(),
            d.requires_auth.to_string(),
        ),
        (
            "You may call it".to_string(),
            toolset.may_call(d, &session.caller.identity()).to_string(),
        ),
    ];
    if let Some(entry) = super::config::tool_policy(gateway, &d.name) {
        policy.push(("policy.tools entry".to_string(), entry));
    }
    let hints = super::pages::hints(&d.annotations).join(", ");
    page(
        &ToolPage {
            chrome: Some(Chrome::new(session, "tools")),
            name: d.name.clone(),
            exported_name: exported_name(&d.name).into_owned(),
            description: d.description.clone(),
            source: d.source.clone(),
            version: d.version.clone().unwrap_or_default(),
            category: d.category.clone().unwrap_or_default(),
            tags: d.tags.join(", "),
            hints,
            annotations: pretty(&serde_json::to_value(&d.annotations).unwrap_or_default()),
            input_schema: if too_large {
                not_shown()
            } else {
                pretty(&d.input_schema)
            },
            output_schema: if too_large {
                String::new()
            } else {
                d.output_schema.as_ref().map(pretty).unwrap_or_default()
            },
            exports,
            policy,
            fields: if too_large {
                Vec::new()
            } else {
                fields(&d.input_schema, sent)
            },
            raw: sent.get("raw").cloned().unwrap_or_default(),
            form_error,
            outcome,
        },
        StatusCode::OK,
    )
}

/// `GET /console/tools/{name}`.
pub(crate) async fn tool_page_get(
    State(gateway): State<Gateway>,
    Path(name): Path<String>,
    session: Session,
) -> Response {
    match visible(&gateway, &session, &name).await {
        Ok(d) => tool_page(&gateway, &session, &d, &HashMap::new(), String::new(), None),
        Err(not_found) => *not_found,
    }
}

/// `POST /console/tools/{name}/call`: the form's arguments, through [`Gateway::call`] (every
/// policy, the call log) as the signed-in caller; the tool page again, with the result.
pub(crate) async fn call(
    State(gateway): State<Gateway>,
    Path(name): Path<String>,
    headers: HeaderMap,
    uri: Uri,
    Form(form): Form<Vec<(String, String)>>,
) -> Response {
    let form: HashMap<String, String> = form.into_iter().collect();
    let session = match checked_post(
        &gateway,
        &headers,
        &uri,
        form.get("csrf").map(String::as_str),
    ) {
        Ok(s) => s,
        Err(refused) => return *refused,
    };
    let d = match visible(&gateway, &session, &name).await {
        Ok(d) => d,
        Err(not_found) => return *not_found,
    };
    let args = match arguments(&d.input_schema, &form) {
        Ok(args) => args,
        Err(why) => return tool_page(&gateway, &session, &d, &form, why, None),
    };
    let cancel = CancellationToken::new();
    let _cancel_on_drop = cancel.clone().drop_guard();
    let call = gateway.call(
        &d.name,
        args,
        &session.caller,
        ProgressReporter::default(),
        cancel,
    );
    let result = tokio::time::timeout(FORM_CALL_TIMEOUT, call)
        .await
        .unwrap_or_else(|_| Err(ToolError::timeout(&d.name, FORM_CALL_TIMEOUT)));
    tool_page(
        &gateway,
        &session,
        &d,
        &form,
        String::new(),
        Some(outcome(result)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect()
    }

    #[test]
    fn each_property_gets_a_field_typed_as_the_schema_says() {
        let schema = json!({
            "type": "object",
            "properties": {
                "expression": {"type": "string", "description": "What to compute"},
                "precision": {"type": "integer", "default": 2},
                "ratio": {"type": "number"},
                "exact": {"type": "boolean"},
                "unit": {"enum": ["m", "km"]},
                "extra": {"type": "object"}
            },
            "required": ["expression"]
        });
        let fields = fields(&schema, &HashMap::new());
        let widgets: Vec<_> = fields.iter().map(|f| f.widget).collect();
        assert_eq!(
            widgets,
            ["text", "integer", "number", "select", "select", "json"]
        );
        assert!(fields[0].required && !fields[1].required);
        assert_eq!(fields[1].value, "2");
        assert_eq!(fields[4].options, ["", "m", "km"]);

        let args = arguments(
            &schema,
            &form(&[
                ("arg.expression", "2+3"),
                ("arg.precision", "4"),
                ("arg.ratio", "0.5"),
                ("arg.exact", "false"),
                ("arg.unit", ""),
                ("arg.extra", "{\"a\": [1]}"),
            ]),
        )
        .unwrap();
        assert_eq!(
            args,
            json!({"expression": "2+3", "precision": 4, "ratio": 0.5, "exact": false, "extra": {"a": [1]}})
        );
        let bad = arguments(&schema, &form(&[("arg.precision", "two")])).unwrap_err();
        assert!(bad.contains("`precision` must be a whole number"), "{bad}");
        let raw = arguments(
            &schema,
            &form(&[("raw", "{\"expression\": \"1\"}"), ("arg.expression", "9")]),
        );
        assert_eq!(raw.unwrap(), json!({"expression": "1"}));
    }
}

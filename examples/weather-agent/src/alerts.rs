//! The handler of the `alerts` tools: tools defined by JSON Schema in `tools/alerts.json` (the
//! shape an OpenAI function list has), compiled in by tools.yaml's `json_schema:` section. Their
//! arguments are validated against those schemas before [`answer`] sees them.

use serde_json::json;
use toolgate::{JsonToolCall, ToolError, ToolOutput};

/// Answers every `alerts.*` tool, by the tool's name in `tools/alerts.json`.
///
/// # Errors
/// `not_found` for a tool this handler does not know (a definition added to the file without
/// code behind it).
pub async fn answer(call: JsonToolCall) -> Result<ToolOutput, ToolError> {
    let region = call.args["region"].as_str().unwrap_or_default();
    match call.tool.as_str() {
        "get_alerts" => {
            let alerts = if region == "NO-03" {
                json!([{"severity": "moderate", "headline": "Icy roads in the morning"}])
            } else {
                json!([])
            };
            Ok(ToolOutput::structured(
                json!({"region": region, "alerts": alerts}),
            ))
        }
        "subscribe_alerts" => Ok(ToolOutput::text(format!(
            "{} will get alerts for {region}",
            call.args["email"].as_str().unwrap_or_default()
        ))),
        other => Err(ToolError::not_found(other)),
    }
}

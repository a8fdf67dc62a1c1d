//! A rig agent whose tools are a toolgate toolset: the built-in tools (`calc`,
//! `current_time`, ...) handed to rig's `AgentBuilder` by `toolgate::rig::dynamic_tools`, so every
//! call the model makes goes through toolgate's policy pipeline.
//!
//! The model here is rig's scripted one (`MockCompletionModel`): it asks for `calc` once, then
//! answers. Replace [`scripted_model`] with a provider's model (e.g. rig's OpenAI client and
//! `client.completion_model("gpt-5")`) and the rest stays as it is.

use rig_agent::AgentBuilder;
use rig_agent::core::test_utils::{MockCompletionModel, MockTurn};
use toolgate::{Identity, Toolset};

/// rig's scripted model: first a tool call of `calc` with `expression`, then the answer `reply`.
pub fn scripted_model(expression: &str, reply: &str) -> MockCompletionModel {
    MockCompletionModel::from_turns([
        MockTurn::tool_call(
            "call_1",
            "calc",
            serde_json::json!({ "expression": expression }),
        ),
        MockTurn::text(reply),
    ])
}

/// The built-in toolset with default settings.
///
/// # Errors
/// The toolset's [`toolgate::BuildError`] (none with the defaults).
pub fn builtin_tools() -> Result<Toolset, toolgate::BuildError> {
    toolgate::builtin::toolset(Default::default()).build()
}

/// Runs one prompt through a rig agent over `tools` as `caller` with `model`; returns the
/// agent's answer and the run's transcript (rig's messages as JSON: the prompt, the model's
/// tool call, the tool's result, the answer).
///
/// # Errors
/// rig's prompt error, as text (a provider failure, too many turns).
pub async fn ask(
    tools: &Toolset,
    caller: &Identity,
    model: MockCompletionModel,
    prompt: &str,
) -> Result<(String, serde_json::Value), String> {
    let agent = AgentBuilder::new(model)
        .preamble("Use the tools to answer.")
        .dynamic_tools(toolgate::rig::dynamic_tools(tools, caller))
        .default_max_turns(3)
        .build();
    let response = agent.prompt(prompt).await.map_err(|e| e.to_string())?;
    let transcript = serde_json::to_value(&response.messages).map_err(|e| e.to_string())?;
    Ok((response.to_string(), transcript))
}

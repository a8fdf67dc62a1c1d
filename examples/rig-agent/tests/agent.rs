//! The example agent end to end: rig's agent loop asks for `calc`, the call goes through the
//! toolset (the built-in `calc` runs: its result is in the transcript the model was shown), and
//! a tool the caller may not call is not offered to the model at all.

use serde_json::json;
use toolgate::Identity;

#[tokio::test]
async fn the_agent_calls_calc_through_the_toolset_and_answers() {
    let tools = rig_agent_example::builtin_tools().unwrap();
    let model = rig_agent_example::scripted_model("6 * 7", "6 times 7 is 42.");
    let (answer, transcript) =
        rig_agent_example::ask(&tools, &Identity::default(), model, "What is 6 times 7?")
            .await
            .unwrap();
    assert_eq!(answer, "6 times 7 is 42.");
    let text = transcript.to_string();
    // calc ran: its result ({"expression": "6 * 7", "value": 42}) is the tool result the model saw.
    assert!(text.contains(r#""value":42"#), "{text}");
}

#[tokio::test]
async fn a_tool_the_caller_may_not_call_is_not_offered_to_the_model() {
    let policy: toolgate::model::config::PolicyConfig =
        serde_json::from_value(json!({"rules": [{"tools": ["calc"], "roles": ["admin"]}]}))
            .unwrap();
    let tools = toolgate::builtin::toolset(Default::default())
        .policy(&policy)
        .build()
        .unwrap();
    let model = rig_agent_example::scripted_model("6 * 7", "unused");
    let error = rig_agent_example::ask(&tools, &Identity::default(), model, "What is 6 times 7?")
        .await
        .expect_err("the model asked for a tool it was not given");
    assert!(error.contains("calc"), "{error}");
}

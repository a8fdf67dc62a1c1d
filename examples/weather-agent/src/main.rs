//! A tiny agent loop: replays a recorded list of model tool calls against the toolset and prints
//! each result, the way an agent would feed them back to the model.
//!
//! Run: `cargo run -p weather-agent` (or give another recording: `cargo run -p weather-agent -- calls.json`).

use serde::Deserialize;
use serde_json::Value;
use toolgate::{Dialect, ToolContext};

/// One tool call as a model emitted it.
#[derive(Debug, Deserialize)]
struct RecordedCall {
    /// The tool name.
    name: String,
    /// The arguments object.
    arguments: Value,
}

const RECORDING: &str = include_str!("../recorded_calls.json");

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tools = weather_agent::build_toolset()?;
    let recording = match std::env::args().nth(1) {
        Some(path) => std::fs::read_to_string(path)?,
        None => RECORDING.to_string(),
    };
    let calls: Vec<RecordedCall> = serde_json::from_str(&recording)?;

    // What the model would be given: every tool as an OpenAI function definition.
    let definitions = tools.export(Dialect::OpenAi)?;
    println!("offering {} tools to the model", definitions.len());

    for call in calls {
        let ctx = ToolContext::builder()
            .caller("demo-user")
            .agent("weather-agent")
            .build();
        println!("\n> {} {}", call.name, call.arguments);
        match tools.call_with(&call.name, call.arguments, ctx).await {
            Ok(out) => println!("< {}", out.text_joined()),
            // The error goes back to the model, which can correct its call.
            Err(e) => println!("< error [{}] {}", e.kind(), e.message()),
        }
    }
    Ok(())
}

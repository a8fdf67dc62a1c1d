//! `cargo run -p rig-agent-example`: one question to a rig agent whose tools are toolgate's
//! built-ins (offline: the model is rig's scripted one).

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tools = rig_agent_example::builtin_tools()?;
    let model = rig_agent_example::scripted_model("6 * 7", "6 times 7 is 42.");
    let (answer, _) = rig_agent_example::ask(
        &tools,
        &toolgate::Identity::default(),
        model,
        "What is 6 times 7?",
    )
    .await?;
    println!("{answer}");
    Ok(())
}

//! A2A tasks across replicas: toolgate keeps no state of its own for a task (the agent does,
//! and the caller holds its `taskId`), so a task that asked for input on one replica is
//! continued through another.

use serde_json::{Value, json};

use super::{KEY, gateway, replicas};
use crate::harness::{self, Served, peers, tools_yaml};

/// `POST /tools/agent.echo/call` with `body` on `replica`: the JSON answer (200 expected).
fn echo(replica: &Served, body: &Value) -> Value {
    let (status, text) = harness::request(
        replica.port(),
        "POST",
        "/tools/agent.echo/call",
        &[("X-API-Key", KEY), ("Content-Type", "application/json")],
        Some(&body.to_string()),
    )
    .unwrap_or_else(|e| panic!("POST /tools/agent.echo/call: {e}\n{}", replica.log()));
    assert_eq!(status, 200, "{text}\n{}", replica.log());
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn a_task_that_asked_for_input_on_one_replica_is_continued_on_another() {
    let agent = peers::a2a_echo("v1", &[]);
    let a2a = format!(
        "  a2a:\n    - id: agent\n      url: {}\n      streaming: false\n",
        agent.url("")
    );
    let yaml =
        tools_yaml("", &gateway(false)).replacen("\ntools:\n", &format!("\ntools:\n{a2a}"), 1);
    assert!(yaml.contains("id: agent"), "{yaml}");
    let replicas = replicas(2, &yaml, None);
    let (a, b) = (&replicas[0], &replicas[1]);

    let asked = echo(a, &json!({"text": "ask"}));
    let question = &asked["structuredContent"];
    assert_eq!(question["state"], "input-required", "{asked}");
    let (task, context) = (&question["taskId"], &question["contextId"]);
    assert!(task.is_string() && context.is_string(), "{asked}");

    let answered = echo(
        b,
        &json!({"text": "Oslo", "taskId": task, "contextId": context}),
    );
    assert_eq!(
        answered["content"],
        json!([{"type": "text", "text": "city: Oslo"}]),
        "{answered}"
    );
    let meta = &answered["_meta"]["toolgate/a2a"];
    assert_eq!(meta["state"], "completed", "{answered}");
    assert_eq!(
        &meta["taskId"], task,
        "the same task, continued: {answered}"
    );
}

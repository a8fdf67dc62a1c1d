//! A2A agents through the binary (the issue's acceptance): one tools.yaml with a protocol 1.0
//! agent (a2a-sdk 1.x), a protocol 0.3 agent (a2a-sdk 0.3) and a second 1.0 implementation
//! (@a2a-js/sdk), each configured twice (`streaming: false`, the blocking `SendMessage` path,
//! and `streaming: true`, the `SendStreamingMessage` path), plus an agent that is down.
//! `list` shows every skill as a tool and the down agent as failed; `call` echoes, streams,
//! fails (`upstream`, exit 1), asks for input (exit 5, the question and the task to continue) and
//! continues the task in a second process; `check` refuses bad `tools.a2a` entries (exit 3).
//! Every call checks, in the agent's own request log, which JSON-RPC method carried it.

use serde_json::Value;

use crate::harness::*;

use crate::mcp::peers;

/// The implementations: (agent impl for [`peers::a2a_echo`], source id prefix, the JSON-RPC
/// method of a blocking send, of a streaming send).
const AGENTS: [(&str, &str, &str, &str); 3] = [
    ("v1", "one", "SendMessage", "SendStreamingMessage"),
    ("v03", "old", "message/send", "message/stream"),
    ("js", "js", "SendMessage", "SendStreamingMessage"),
];

/// One configured source: its id, the agent behind it, and the JSON-RPC method its sends use.
struct Source {
    id: String,
    agent: usize,
    method: &'static str,
}

/// A tools.yaml in a temp folder with, for each agent of [`AGENTS`], a source `{id}` with
/// `streaming: false` and a source `{id}s` with `streaming: true`, and a source `down` whose URL
/// nobody listens on.
struct Setup {
    dir: tempfile::TempDir,
    agents: Vec<peers::PeerProcess>,
    sources: Vec<Source>,
    down_url: String,
}

impl Setup {
    fn new(which: &[&str]) -> Self {
        let mut agents = Vec::new();
        let mut sources = Vec::new();
        let mut yaml = String::from("version: 1\ntools:\n  a2a:\n");
        for (impl_, id, blocking, streaming) in AGENTS {
            if !which.contains(&impl_) {
                continue;
            }
            let agent = peers::a2a_echo(impl_, &[]);
            let url = agent.url("");
            for (suffix, stream, method) in [("", false, blocking), ("s", true, streaming)] {
                let id = format!("{id}{suffix}");
                yaml.push_str(&format!(
                    "    - id: {id}\n      url: {url}\n      streaming: {stream}\n"
                ));
                sources.push(Source {
                    id,
                    agent: agents.len(),
                    method,
                });
            }
            agents.push(agent);
        }
        let down_url = format!("http://127.0.0.1:{}", peers::free_port());
        yaml.push_str(&format!("    - id: down\n      url: {down_url}\n"));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tools.yaml"), yaml).unwrap();
        Self {
            dir,
            agents,
            sources,
            down_url,
        }
    }

    fn run(&self, args: &[&str]) -> Run {
        toolgate_in(self.dir.path(), args, None)
    }

    /// `toolgate call {source}.{tool} ARGS` (plus `extra` options), checking that the agent
    /// received exactly one JSON-RPC request for it, by the source's method (blocking or
    /// streaming).
    fn call(&self, source: &Source, tool: &str, args: &str, extra: &[&str]) -> Run {
        let agent = &self.agents[source.agent];
        let mark = agent.log().len();
        let name = format!("{}.{tool}", source.id);
        let mut all = vec!["call", name.as_str(), args];
        all.extend_from_slice(extra);
        let run = self.run(&all);
        let methods = rpc_methods(&agent.log()[mark..]);
        assert_eq!(
            methods,
            [source.method],
            "the JSON-RPC requests the agent got for this call\n{}",
            run.context()
        );
        run
    }
}

/// The `rpc=` of each POST the agent logged (`A2A-REQ POST / rpc=SendMessage ...`).
fn rpc_methods(log: &str) -> Vec<String> {
    log.lines()
        .filter_map(|l| l.strip_prefix("A2A-REQ POST "))
        .filter_map(|l| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix("rpc="))
                .map(str::to_string)
        })
        .collect()
}

/// Exactly these lines on stdout.
#[track_caller]
fn assert_lines(run: &Run, expected: &[&str]) {
    assert_eq!(
        run.stdout.lines().collect::<Vec<_>>(),
        expected,
        "{}",
        run.context()
    );
}

#[test]
fn a2a_list_shows_every_skill_and_the_agent_that_is_down() {
    let setup = Setup::new(&["v1", "v03", "js"]);
    let run = setup.run(&["list"]);
    // As with an MCP server that cannot start: listed as failed, exit 0.
    run.code(0);
    let names: Vec<&str> = run
        .stdout
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    for b in BUILTINS {
        assert!(names.contains(&b), "{b} missing\n{}", run.context());
    }
    for s in &setup.sources {
        for skill in ["echo", "shout"] {
            let name = format!("{}.{skill}", s.id);
            assert!(
                names.contains(&name.as_str()),
                "{name} missing\n{}",
                run.context()
            );
        }
    }
    let tools = |prefix: &str| {
        names
            .iter()
            .filter(|n| n.starts_with(&format!("{prefix}.")))
            .count()
    };
    for s in &setup.sources {
        assert_eq!(
            tools(&s.id),
            2,
            "{}: echo and shout only\n{}",
            s.id,
            run.context()
        );
    }
    assert_eq!(tools("down"), 0, "{}", run.context());
    // The description is the skill's, from the card.
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with("one.shout")
                && l.ends_with("Same behaviour as echo, uppercased.")),
        "{}",
        run.context()
    );
    let down = format!(
        "source `down` (a2a): failed: agent `down`: cannot fetch its agent card at {}/.well-known/agent-card.json",
        setup.down_url
    );
    assert_eq!(
        run.stdout
            .lines()
            .filter(|l| l.starts_with("source `"))
            .count(),
        1,
        "only `down` is unavailable\n{}",
        run.context()
    );
    assert!(
        run.stdout.lines().any(|l| l.starts_with(&down)),
        "expected a line starting with {down:?}\n{}",
        run.context()
    );

    // `discover`: every agent ready with its 2 skills, `down` failed (exit 1, as for MCP).
    let run = setup.run(&["discover", "--json"]);
    run.code(1);
    let statuses: Vec<Value> = serde_json::from_str(&run.stdout).unwrap();
    for s in &setup.sources {
        let status = statuses
            .iter()
            .find(|st| st["id"] == s.id.as_str())
            .unwrap_or_else(|| panic!("{}\n{}", s.id, run.context()));
        assert_eq!(status["state"], "ready", "{status}");
        assert_eq!(status["kind"], "a2a", "{status}");
        assert_eq!(status["tools"], 2, "{status}");
    }
    let down = statuses.iter().find(|st| st["id"] == "down").unwrap();
    assert_eq!(down["state"], "failed", "{down}");
    assert!(
        down["error"]
            .as_str()
            .unwrap()
            .contains(&format!("{}/.well-known/agent-card.json", setup.down_url)),
        "{down}"
    );

    // A call never waits for (or warns about) the agent that is down.
    for s in &setup.sources {
        let run = setup.call(s, "echo", r#"{"text":"hello"}"#, &[]);
        run.ok();
        assert_lines(&run, &["echo: hello"]);
        let run = setup.call(s, "shout", r#"{"text":"hello"}"#, &[]);
        run.ok();
        assert_lines(&run, &["ECHO: HELLO"]);
        // Chunks of one artifact ("a", " b", " c"), joined.
        let run = setup.call(s, "echo", r#"{"text":"stream a b c"}"#, &[]);
        run.ok();
        assert_lines(&run, &["a b c"]);
        let out = setup
            .call(s, "echo", r#"{"text":"stream a b c"}"#, &["--json"])
            .code(0)
            .json();
        assert_eq!(
            out["content"],
            serde_json::json!([{"type": "text", "text": "a b c"}]),
            "{}: {out}",
            s.id
        );
        assert_eq!(out["_meta"]["toolgate/a2a"]["state"], "completed", "{out}");
        assert!(out.get("isError").is_none(), "{out}");
    }
    // A tool of the down agent: its source is tried again and fails (exit 1, not 4: the tool
    // may well exist).
    setup
        .run(&["call", "down.echo", r#"{"text":"hello"}"#])
        .code(1)
        .stderr_has(&[&format!(
            "error: network: agent `down`: cannot fetch its agent card at {}/.well-known/agent-card.json",
            setup.down_url
        )]);
}

#[test]
fn a2a_failures_questions_and_continued_tasks() {
    let setup = Setup::new(&["v1", "v03"]);
    for s in &setup.sources {
        for (text, state, said) in [
            ("fail", "failed", "cannot do that"),
            ("canceled", "canceled", "canceled by the agent"),
            ("reject", "rejected", "not my job"),
        ] {
            let run = setup.call(s, "echo", &format!(r#"{{"text":"{text}"}}"#), &[]);
            run.code(1).stderr_has(&[
                &format!("error: upstream: agent `{}`: task ", s.id),
                &format!(" ended {state}: {said}"),
            ]);
            assert_eq!(run.stdout, "", "{}", run.context());
        }
        // --json: the ToolError with the task's state and ids.
        let run = setup.call(s, "echo", r#"{"text":"fail"}"#, &["--json"]);
        let out = run.code(1).json();
        assert_eq!(out["error"]["kind"], "upstream", "{out}");
        assert_eq!(out["error"]["details"]["state"], "failed", "{out}");
        assert!(out["error"]["details"]["taskId"].is_string(), "{out}");

        // The agent asks: exit 5, the question and the task to continue, nothing on stderr.
        let run = setup.call(s, "echo", r#"{"text":"ask"}"#, &[]);
        run.code(5);
        assert_eq!(run.stderr.trim(), "", "{}", run.context());
        let lines: Vec<&str> = run.stdout.lines().collect();
        assert_eq!(lines.len(), 2, "{}", run.context());
        assert_eq!(lines[0], "Agent needs more input: Which city?");
        let details: Value =
            serde_json::from_str(lines[1]).unwrap_or_else(|e| panic!("{e}\n{}", run.context()));
        let keys: Vec<&str> = details
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["state", "taskId", "contextId"], "{details}");
        assert_eq!(details["state"], "input-required");
        let task = details["taskId"].as_str().unwrap();
        let context = details["contextId"].as_str().unwrap();
        assert!(!task.is_empty() && !context.is_empty(), "{details}");

        // A second process answers the question: the same task completes.
        let answer = serde_json::json!({"text": "Oslo", "taskId": task, "contextId": context});
        let run = setup.call(s, "echo", &answer.to_string(), &[]);
        run.ok();
        assert_lines(&run, &["city: Oslo"]);
        // The task is over: answering again is an error (exit 1), not a new question.
        let run = setup.call(s, "echo", &answer.to_string(), &[]);
        run.code(1).stderr_has(&[task, "terminal state"]);

        // taskId alone is enough to continue (the help text's form).
        let run = setup.call(s, "echo", r#"{"text":"ask"}"#, &[]);
        let details: Value = serde_json::from_str(run.code(5).stdout.lines().nth(1).unwrap())
            .unwrap_or_else(|e| panic!("{e}\n{}", run.context()));
        let answer = serde_json::json!({"text": "Bergen", "taskId": details["taskId"]});
        let run = setup.call(s, "echo", &answer.to_string(), &[]);
        run.ok();
        assert_lines(&run, &["city: Bergen"]);

        // --json: a result, not an error (no isError), the details as structuredContent and
        // mirrored as a second text part; the error JSON under _meta.
        let run = setup.call(s, "echo", r#"{"text":"ask"}"#, &["--json"]);
        let out = run.code(5).json();
        assert!(out.get("isError").is_none(), "{out}");
        assert!(out.get("error").is_none(), "{out}");
        let structured = &out["structuredContent"];
        assert_eq!(structured["state"], "input-required", "{out}");
        assert!(
            structured["taskId"].as_str().is_some_and(|t| !t.is_empty()),
            "{out}"
        );
        assert!(
            structured["contextId"]
                .as_str()
                .is_some_and(|t| !t.is_empty()),
            "{out}"
        );
        assert_eq!(
            out["content"],
            serde_json::json!([
                {"type": "text", "text": "Agent needs more input: Which city?"},
                {"type": "text", "text": structured.to_string()},
            ]),
            "{out}"
        );
        assert_eq!(
            out["_meta"]["toolgate/error"]["kind"], "input_required",
            "{out}"
        );
        assert_eq!(
            out["_meta"]["toolgate/error"]["details"], *structured,
            "{out}"
        );
    }
}

#[test]
fn a2a_polling_auth_required_and_an_object_input_schema() {
    // One agent (1.0) as two sources: `poll` (`blocking: false`: the task is polled with
    // GetTask) and `data` (an input schema for echo: the arguments go as one data part).
    let agent = peers::a2a_echo("v1", &[]);
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        r#"version: 1
tools:
  a2a:
    - id: poll
      url: {url}
      streaming: false
      blocking: false
      poll_interval_ms: 20
    - id: data
      url: {url}
      streaming: false
      deny: [shout]
      skills:
        echo:
          input_schema:
            type: object
            properties: {{city: {{type: string}}}}
            required: [city]
"#,
        url = agent.url("")
    );
    std::fs::write(dir.path().join("tools.yaml"), yaml).unwrap();
    let run = |args: &[&str]| toolgate_in(dir.path(), args, None);

    let listed = run(&["list"]);
    let names: Vec<&str> = listed
        .code(0)
        .stdout
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with("poll.") || n.starts_with("data."))
        .collect();
    assert_eq!(
        names,
        ["poll.echo", "poll.shout", "data.echo"],
        "data.shout is denied\n{}",
        listed.context()
    );

    // Polled with GetTask until the task is done.
    let mark = agent.log().len();
    let slow = run(&["call", "poll.echo", r#"{"text":"slow 300"}"#]);
    slow.ok();
    assert_lines(&slow, &["done"]);
    let methods = rpc_methods(&agent.log()[mark..]);
    assert_eq!(methods[0], "SendMessage", "{methods:?}");
    assert!(
        methods.len() >= 2 && methods[1..].iter().all(|m| m == "GetTask"),
        "{methods:?}\n{}",
        slow.context()
    );
    // auth-required ends the call like input-required (exit 5).
    let auth = run(&["call", "poll.echo", r#"{"text":"auth"}"#]);
    auth.code(5);
    assert_eq!(
        auth.stdout.lines().next(),
        Some("Agent needs authentication: Please sign in"),
        "{}",
        auth.context()
    );
    let details: Value = serde_json::from_str(auth.stdout.lines().nth(1).unwrap()).unwrap();
    assert_eq!(details["state"], "auth-required", "{details}");

    // The arguments go as one data part, which the agent echoes.
    let mark = agent.log().len();
    let out = run(&["call", "data.echo", r#"{"city":"Oslo"}"#, "--json"])
        .code(0)
        .json();
    assert_eq!(
        out["structuredContent"],
        serde_json::json!({"city": "Oslo"}),
        "{out}"
    );
    assert_eq!(rpc_methods(&agent.log()[mark..]), ["SendMessage"]);
    // Checked against the schema before anything is sent.
    let mark = agent.log().len();
    run(&["call", "data.echo", r#"{"town":"Oslo"}"#])
        .code(1)
        .stderr_has(&["invalid_arguments", "/city"]);
    assert!(rpc_methods(&agent.log()[mark..]).is_empty());
}

#[test]
fn a2a_check_refuses_bad_entries() {
    let dir = tempfile::tempdir().unwrap();
    let check = |yaml: &str| {
        let path = dir.path().join("tools.yaml");
        std::fs::write(&path, yaml).unwrap();
        toolgate_in(dir.path(), &["check", "tools.yaml"], None)
    };
    // `check` names the place as file:line:column (of the pointer's value); the message names
    // the agent, the key and the skill.
    let run = check(
        "version: 1\ntools:\n  a2a:\n    - id: one\n      url: http://127.0.0.1:9\n      skills:\n        echo:\n          input_schema: {type: string}\n",
    );
    run.code(3).stderr_has(&[
        "tools.yaml:8:25: A2A agent `one`, skill `echo`: `input_schema` must be an object schema (`type: object`)",
    ]);
    assert_eq!(run.stdout, "", "{}", run.context());
    // The commands that load the config refuse it too.
    toolgate_in(dir.path(), &["list"], None)
        .code(3)
        .stderr_has(&["`input_schema` must be an object schema"]);
    let run = check("version: 1\ntools:\n  a2a:\n    - id: one\n      url: ftp://127.0.0.1:9\n");
    run.code(3).stderr_has(&[
        "tools.yaml:5:12: A2A agent `one`: `url` must be an http:// or https:// URL, not `ftp://127.0.0.1:9`",
    ]);
    let run =
        check("version: 1\ntools:\n  a2a:\n    - id: one\n      card_url: 127.0.0.1:9/card.json\n");
    run.code(3).stderr_has(&[
        "tools.yaml:5:17: A2A agent `one`: `card_url` must be an http:// or https:// URL",
    ]);
    let run = check("version: 1\ntools:\n  a2a:\n    - id: one\n      lazy: true\n");
    run.code(3)
        .stderr_has(&["A2A agent `one` needs `url` or `card_url`"]);
    // A valid one is fine (and not contacted).
    let run = check(
        "version: 1\ntools:\n  a2a:\n    - id: one\n      url: http://127.0.0.1:9\n      skills:\n        echo:\n          input_schema: {type: object}\n",
    );
    assert!(
        run.code(0).stdout.contains("1 A2A source(s)"),
        "{}",
        run.context()
    );
}

/// A call that runs out of time cancels its task, and the command waits for that cancel before
/// it exits (a process that exits at once would drop the request). Streaming (the task id comes
/// with the first event) and polling (`blocking: false`: it comes with the send's answer).
#[test]
fn a2a_a_timed_out_call_cancels_its_task_before_the_command_exits() {
    for (impl_, cancel) in [("v1", "CancelTask"), ("v03", "tasks/cancel")] {
        let agent = peers::a2a_echo(impl_, &[]);
        let url = agent.url("");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("tools.yaml"),
            format!(
                "version: 1\ntools:\n  a2a:\n    - {{id: s, url: {url}, streaming: true}}\n    - {{id: p, url: {url}, streaming: false, blocking: false, poll_interval_ms: 50}}\n"
            ),
        )
        .unwrap();
        for tool in ["s.echo", "p.echo"] {
            let mark = agent.log().len();
            let run = toolgate_in(
                dir.path(),
                &[
                    "call",
                    tool,
                    r#"{"text":"slow 5000"}"#,
                    "--timeout-ms",
                    "700",
                ],
                None,
            );
            assert_eq!(run.code, Some(1), "{}", run.context());
            assert!(run.stderr.contains("timeout"), "{}", run.context());
            // The cancel is in the agent's log by the time the command has exited.
            let methods = rpc_methods(&agent.log()[mark..]);
            assert_eq!(
                methods.iter().filter(|m| *m == cancel).count(),
                1,
                "{impl_} {tool}: {methods:?}"
            );
        }
    }
}

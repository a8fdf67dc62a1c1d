//! BFCL's multi-turn ground truth run as Python through code mode (docs/code-mode.md).
//!
//! Data: the PyPI wheel `bfcl-eval`, unpacked by `scripts/install-peers.sh` into
//! `$TOOLGATE_PEERS/bfcl` (default `.peers/bfcl`), its multi-turn ground truth converted by
//! `scripts/bfcl_multi_turn_calls.py` into `multi_turn_calls.jsonl` (one call a line: the
//! entry's id, turn and step, the definitions file, the function and its arguments).
//!
//! Each definitions file of `data/multi_turn_func_doc` is imported (`import_definition(Bfcl,
//! ..)`) as a source of its own named after the file (`gorilla_file_system`, `math_api`, ...)
//! whose tools record every call they get. For each entry, its calls in order become one
//! Python snippet, `tools.<file>.<function>(arg=value, ...)` a line (`call_tool(...)` when an
//! argument's name is no Python name), run by `run_python` through the toolset; the calls the
//! sources recorded must be the ground truth, in order, with the same arguments. Argument
//! validation is off: the point is the calls code mode makes (the corpus test checks the
//! ground truth against the imported schemas).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use toolgate::code_mode::{CodeModeExt, CodeModeSettings, Limits};
use toolgate::model::import::{DefinitionFormat, import_definition};
use toolgate::{
    SourceTool, ToolContext, ToolDescriptor, ToolFuture, ToolOutput, ToolSource, Toolset,
};

/// One recorded call: the definitions file, the function's name as BFCL writes it, arguments.
type Call = (String, String, Value);

/// The tools of one definitions file, recording their calls.
struct Recorder {
    id: String,
    /// Each tool, with BFCL's name of it.
    tools: Vec<(SourceTool, String)>,
    calls: Arc<Mutex<Vec<Call>>>,
}

impl ToolSource for Recorder {
    fn id(&self) -> &str {
        &self.id
    }

    fn tools(&self) -> Vec<SourceTool> {
        self.tools.iter().map(|(t, _)| t.clone()).collect()
    }

    fn call(
        self: Arc<Self>,
        tool: &SourceTool,
        args: Value,
        _ctx: ToolContext,
    ) -> ToolFuture<'static> {
        let name = tool
            .key
            .index()
            .map(|i| self.tools[i].1.clone())
            .unwrap_or_default();
        self.calls
            .lock()
            .unwrap()
            .push((self.id.clone(), name, args));
        ToolFuture::ready(Ok(ToolOutput::structured(json!({"ok": true}))))
    }
}

fn bfcl() -> PathBuf {
    let root = match std::env::var_os("TOOLGATE_PEERS") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".peers"),
    };
    let bfcl = root.join("bfcl");
    assert!(
        bfcl.join("multi_turn_calls.jsonl").is_file(),
        "the BFCL data is missing under {}: run scripts/install-peers.sh",
        bfcl.display()
    );
    bfcl
}

/// A JSON value as a Python literal.
fn python(value: &Value) -> String {
    match value {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => n.to_string(),
        // JSON's string escapes are Python's too.
        Value::String(s) => serde_json::to_string(s).unwrap_or_default(),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(python).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", python(&Value::String(k.clone())), python(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !KEYWORDS.contains(&name)
}

/// One line of Python making `call` (the toolset's name of the tool, its arguments).
fn line(source: &str, tool: &str, args: &Value) -> String {
    let map = args.as_object().cloned().unwrap_or_default();
    if is_identifier(tool) && map.keys().all(|k| is_identifier(k)) {
        let kwargs: Vec<String> = map
            .iter()
            .map(|(k, v)| format!("{k}={}", python(v)))
            .collect();
        format!("tools.{source}.{tool}({})", kwargs.join(", "))
    } else {
        format!(
            "call_tool({}, {})",
            python(&json!(format!("{source}.{tool}"))),
            python(args)
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bfcl_multi_turn_ground_truth_runs_as_python_through_code_mode() {
    let bfcl = bfcl();
    let calls = Arc::new(Mutex::new(Vec::new()));
    // Per definitions file: BFCL's function name -> the tool's name in the toolset.
    let mut names: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let settings = CodeModeSettings {
        limits: limits(),
        ..CodeModeSettings::default()
    };
    let mut builder = Toolset::builder()
        .validate_arguments(false)
        .code_mode(settings);
    let docs = bfcl.join("bfcl_eval/data/multi_turn_func_doc");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&docs)
        .unwrap_or_else(|e| panic!("{}: {e}", docs.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for path in files {
        let doc = path.file_name().unwrap().to_string_lossy().into_owned();
        let id = doc.trim_end_matches(".json").to_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut tools = Vec::new();
        for def in text.lines().filter(|l| !l.trim().is_empty()) {
            let def: Value = serde_json::from_str(def).unwrap();
            let t = import_definition(DefinitionFormat::Bfcl, &def)
                .unwrap_or_else(|e| panic!("{doc}: {e}"));
            names
                .entry(doc.clone())
                .or_default()
                .insert(t.original_name.clone(), t.name.clone());
            let descriptor = ToolDescriptor {
                name: format!("{id}.{}", t.name),
                description: t.description.clone(),
                input_schema: t.input_schema.clone(),
                source: id.clone(),
                ..ToolDescriptor::default()
            };
            let i = tools.len();
            tools.push((
                SourceTool::indexed(Arc::new(descriptor), i),
                t.original_name,
            ));
        }
        builder = builder.source(Recorder {
            id,
            tools,
            calls: Arc::clone(&calls),
        });
    }
    let toolset = builder.build().expect("the toolset");

    // The ground truth, per entry in file order: its calls in (turn, step) order.
    let text = std::fs::read_to_string(bfcl.join("multi_turn_calls.jsonl")).unwrap();
    let mut entries: Vec<(String, Vec<Call>)> = Vec::new();
    for l in text.lines().filter(|l| !l.trim().is_empty()) {
        let call: Value = serde_json::from_str(l).unwrap();
        let id = call["id"].as_str().unwrap().to_owned();
        let doc = call["doc"].as_str().unwrap().to_owned();
        let truth = (
            doc,
            call["name"].as_str().unwrap().to_owned(),
            call["arguments"].clone(),
        );
        match entries.last_mut() {
            Some((last, list)) if *last == id => list.push(truth),
            _ => entries.push((id, vec![truth])),
        }
    }

    let (mut ran, mut matched, mut total_calls) = (0usize, 0usize, 0usize);
    let mut mismatches = Vec::new();
    for (id, truth) in &entries {
        let code: Vec<String> = truth
            .iter()
            .map(|(doc, name, args)| line(doc.trim_end_matches(".json"), &names[doc][name], args))
            .collect();
        calls.lock().unwrap().clear();
        let out = toolset
            .call("run_python", json!({"code": code.join("\n")}))
            .await;
        ran += 1;
        total_calls += truth.len();
        if let Err(e) = &out {
            mismatches.push(format!("{id}: {e}\n{}", code.join("\n")));
            continue;
        }
        let recorded: Vec<Call> = calls.lock().unwrap().clone();
        let expected: Vec<Call> = truth
            .iter()
            .map(|(doc, name, args)| {
                (
                    doc.trim_end_matches(".json").to_owned(),
                    name.clone(),
                    args.clone(),
                )
            })
            .collect();
        if recorded == expected {
            matched += 1;
        } else {
            mismatches.push(format!(
                "{id}: recorded {recorded:?}\nexpected {expected:?}"
            ));
        }
    }
    println!(
        "BFCL-CODE-MODE entries={} ran={ran} matched={matched} calls={total_calls}",
        entries.len()
    );
    assert!(ran > 700, "only {ran} entries");
    assert!(
        mismatches.is_empty(),
        "{} of {ran} entries did not match:\n{}",
        mismatches.len(),
        mismatches
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n\n")
    );
}

/// Limits for the longest entry (a few dozen calls), with time to spare in an unoptimized build.
fn limits() -> Limits {
    Limits {
        time: Duration::from_secs(30),
        tool_calls: 1000,
        ..Limits::default()
    }
}

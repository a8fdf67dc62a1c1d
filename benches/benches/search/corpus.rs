//! The retrieval corpus and its queries, read from BFCL's data (`.peers/bfcl/bfcl_eval/data`,
//! PyPI `bfcl-eval`, installed by `scripts/install-peers.sh`):
//!
//! - **Tools**: every distinct BFCL function definition of the 25 files with definitions (the
//!   13 `BFCL_v4_*.json` whose entries carry a `function` list, and the 12
//!   `multi_turn_func_doc/*.json`), imported with toolgate's BFCL importer; distinct = same
//!   name, description and imported schema (as `runtime/tests/bfcl_corpus.rs` counts them). A
//!   name with several different definitions keeps every one: the first (files in name order,
//!   lines in order) under the imported name, the others under `{name}_2`, `{name}_3`, ...
//! - **Queries**: every entry of the single-call AST categories whose ground truth names exactly
//!   one distinct function (`possible_answer/BFCL_v4_<category>.json`, the function names of its
//!   `ground_truth` list; the parallel categories repeat one function several times, which is
//!   still one tool to find). The text: the entry's user messages, joined by a line break
//!   (system prompts left out), cut at [`MAX_QUERY_CHARS`] characters.
//! - **Relevant tools** of a query: every corpus tool of the ground truth's function name (all
//!   its definitions: they are versions of one function, which no ranking could tell apart by
//!   the query); `own` is the one definition of the query's own entry.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use toolgate::ToolDescriptor;
use toolgate::model::import::{DefinitionFormat, import_definition};
use toolgate::search::MAX_QUERY_CHARS;

/// The categories whose entries become queries (when their ground truth names one function).
pub const CATEGORIES: [&str; 10] = [
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
];

/// The source id of the BFCL tools in the toolset.
pub const SOURCE: &str = "bfcl";

/// One query and its ground truth.
#[derive(Debug, Clone)]
pub struct Query {
    /// The BFCL test id (`live_simple_0-0-0`).
    pub id: String,
    /// Its category (`live_simple`).
    pub category: &'static str,
    /// The text searched for.
    pub text: String,
    /// The toolset names of every definition of the ground truth's function.
    pub relevant: Vec<String>,
    /// The toolset name of the entry's own definition.
    pub own: String,
}

/// The BFCL side of the corpus.
pub struct Bfcl {
    /// One descriptor per distinct definition (source [`SOURCE`]).
    pub tools: Vec<ToolDescriptor>,
    /// The queries, in category order then file order.
    pub queries: Vec<Query>,
    /// Entries per category: (entries, queries kept).
    pub per_category: BTreeMap<&'static str, (usize, usize)>,
    /// Queries cut at [`MAX_QUERY_CHARS`].
    pub truncated: usize,
    /// BFCL definitions read (with repeats).
    pub definitions: usize,
    /// Distinct function names among the tools.
    pub names: usize,
}

/// Where the BFCL data is: `$TOOLGATE_PEERS/bfcl` or the repository's `.peers/bfcl`.
pub fn data_dir() -> PathBuf {
    peers().join("bfcl/bfcl_eval/data")
}

/// The peers' directory: `TOOLGATE_PEERS`, or the workspace's `.peers`.
pub fn peers() -> PathBuf {
    match std::env::var_os("TOOLGATE_PEERS") {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../.peers"),
    }
}

fn json_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("BFCL files are JSON Lines"))
        .collect()
}

fn files(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}: run scripts/install-peers.sh", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.starts_with(prefix) && name.ends_with(".json")
        })
        .collect();
    files.sort();
    files
}

/// The distinct definitions, as they are interned.
#[derive(Default)]
struct Interned {
    tools: Vec<ToolDescriptor>,
    original: Vec<String>,
    by_key: HashMap<String, usize>,
    taken: HashMap<String, ()>,
}

impl Interned {
    /// The index of `def`'s tool, imported and added when it is new.
    fn intern(&mut self, def: &Value) -> usize {
        let t = import_definition(DefinitionFormat::Bfcl, def)
            .unwrap_or_else(|e| panic!("a BFCL definition does not import: {e}"));
        let key = json!([t.original_name, t.description, t.input_schema]).to_string();
        if let Some(&i) = self.by_key.get(&key) {
            return i;
        }
        let mut name = t.name.clone();
        let mut n = 1;
        while self.taken.contains_key(&name) {
            n += 1;
            name = format!("{}_{n}", t.name);
        }
        self.taken.insert(name.clone(), ());
        self.tools.push(ToolDescriptor {
            name,
            description: t.description,
            input_schema: t.input_schema,
            source: SOURCE.to_string(),
            ..ToolDescriptor::default()
        });
        self.original.push(t.original_name);
        self.by_key.insert(key, self.tools.len() - 1);
        self.tools.len() - 1
    }
}

/// The user messages of a BFCL `question` (a list of turns, each a list of messages).
fn user_text(question: &Value) -> String {
    let mut parts = Vec::new();
    for turn in question.as_array().into_iter().flatten() {
        for m in turn.as_array().into_iter().flatten() {
            if m["role"] == "user"
                && let Some(c) = m["content"].as_str()
            {
                parts.push(c.trim());
            }
        }
    }
    parts.join("\n")
}

/// Reads the corpus and the queries from `data` (see the module docs); `limit` keeps the first
/// queries of each category only (test mode).
pub fn read(data: &Path, limit: Option<usize>) -> Bfcl {
    let mut interned = Interned::default();
    let mut definitions = 0;
    // (file, id) → the entry's tools.
    let mut entries: HashMap<(String, String), Vec<usize>> = HashMap::new();
    let mut sources = files(data, "BFCL_v4_");
    sources.extend(files(&data.join("multi_turn_func_doc"), ""));
    for path in &sources {
        let file = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if file == "BFCL_v4_format_sensitivity.json" {
            continue; // test ids, no definitions
        }
        for v in json_lines(path) {
            let defs: Vec<Value> = match v.get("function") {
                Some(Value::Array(list)) => list.clone(),
                Some(_) => Vec::new(),
                None if v.get("name").is_some() => vec![v.clone()],
                None => Vec::new(),
            };
            let mut own = Vec::new();
            for def in &defs {
                definitions += 1;
                own.push(interned.intern(def));
            }
            if let Some(id) = v.get("id").and_then(Value::as_str) {
                entries.insert((file.to_string(), id.to_string()), own);
            }
        }
    }
    let mut by_original: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, o) in interned.original.iter().enumerate() {
        by_original.entry(o.as_str()).or_default().push(i);
    }

    let mut queries = Vec::new();
    let mut per_category = BTreeMap::new();
    let mut truncated = 0;
    for category in CATEGORIES {
        let file = format!("BFCL_v4_{category}.json");
        let answers: HashMap<String, Value> = json_lines(&data.join("possible_answer").join(&file))
            .into_iter()
            .filter_map(|a| Some((a["id"].as_str()?.to_string(), a["ground_truth"].clone())))
            .collect();
        let all = json_lines(&data.join(&file));
        let mut kept = 0;
        for entry in &all {
            let id = entry["id"].as_str().expect("an id").to_string();
            let Some(truth) = answers.get(&id) else {
                continue;
            };
            let mut names: Vec<&str> = truth
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|call| call.as_object()?.keys().next().map(String::as_str))
                .collect();
            names.sort_unstable();
            names.dedup();
            let [name] = names[..] else { continue };
            let own_tools = &entries[&(file.clone(), id.clone())];
            let Some(&own) = own_tools.iter().find(|&&i| interned.original[i] == name) else {
                panic!("{file} {id}: the ground truth's `{name}` is none of its functions");
            };
            if limit.is_some_and(|l| kept >= l) {
                continue;
            }
            let mut text = user_text(&entry["question"]);
            if text.chars().count() > MAX_QUERY_CHARS {
                text = text.chars().take(MAX_QUERY_CHARS).collect();
                truncated += 1;
            }
            let tool_name = |i: usize| interned.tools[i].name.clone();
            queries.push(Query {
                id,
                category,
                text,
                relevant: by_original[name].iter().map(|&i| tool_name(i)).collect(),
                own: tool_name(own),
            });
            kept += 1;
        }
        per_category.insert(category, (all.len(), kept));
    }
    Bfcl {
        names: by_original.len(),
        tools: interned.tools,
        queries,
        per_category,
        truncated,
        definitions,
    }
}

/// The JSON both sides read: every tool of `tools` as a model sees it (exported name,
/// description, input schema) and the queries' ids and texts.
pub fn shared_json(tools: &[std::sync::Arc<ToolDescriptor>], queries: &[Query]) -> Value {
    json!({
        "tools": tools.iter().map(|d| json!({
            "name": toolgate::model::names::exported_name(&d.name),
            "description": d.description,
            "input_schema": d.input_schema,
            "title": d.annotations.title,
            "tags": d.tags,
            "category": d.category,
        })).collect::<Vec<_>>(),
        "queries": queries.iter().map(|q| json!({
            "id": q.id,
            "text": q.text,
            "category": q.category,
            "relevant": q.relevant.iter().map(|r| toolgate::model::names::exported_name(r)).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

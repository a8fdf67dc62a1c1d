//! The Berkeley Function Calling Leaderboard (BFCL) corpus, end to end (docs/bfcl-corpus.md).
//!
//! Data: the PyPI wheel `bfcl-eval` 2026.3.23, unpacked by `scripts/install-peers.sh` into
//! `$TOOLGATE_PEERS/bfcl` (default `<workspace>/.peers/bfcl`), with its multi-turn ground truth
//! converted to JSON by `scripts/bfcl_multi_turn_calls.py`. Without the data the test fails.
//!
//! 1. **Import**: every definition of every data file that holds definitions
//!    (`data/BFCL_v4_*.json`, JSON Lines of test entries with a `function` list, and
//!    `data/multi_turn_func_doc/*.json`, JSON Lines of definitions) is imported with
//!    `import_definition(Bfcl, ..)`; all must import. Each file is also imported whole with
//!    `import_document`, which de-duplicates.
//! 2. **Export**: every distinct imported tool is exported in every dialect through its
//!    `ToolDescriptor` (`ToolDescriptor::export_with_notes`: `export`'s value and the notes)
//!    and checked with `toolgate_model::dialect::check::check`: no export may fail or break a rule.
//!    Exports that carry notes, and OpenAI strict fallbacks to `"strict": false`, are counted.
//! 3. **Ground truth**: every ground-truth call is validated with the tool's `ArgumentValidator`
//!    (compiled once per tool) against the imported schema. A BFCL answer gives, per parameter, a
//!    list of acceptable values where `""` means "may be omitted", and a `dict` value (or each
//!    `dict` in a list) maps its keys to such lists (`dict_checker` / `list_dict_checker` in
//!    `bfcl_eval/eval_checker/ast_eval/ast_checker.py`). Each call is expanded into argument
//!    sets: the *first* set (each parameter's first acceptable value, nested dicts likewise;
//!    parameters whose only value is `""` omitted), the *minimal* set (every parameter, and
//!    nested key, that may be omitted is omitted), and one set per *other acceptable value* of a
//!    parameter (the first set with that one value swapped in). Multi-turn calls are one set each.
//!    At least 99% must be accepted, and every rejection must be of a kind listed in
//!    [`EXPLAINED`] (and every kind listed must occur).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use serde_json::{Value, json};
use toolgate_model::dialect::check::check;
use toolgate_model::import::{DefinitionFormat, ImportedTool, import_definition, import_document};
use toolgate_runtime::{ArgumentValidator, Dialect, ToolDescriptor};

#[path = "bfcl_corpus/ground_truth.rs"]
mod ground_truth;
use ground_truth::{EXPLAINED, argument_sets};

/// A file of `data/` that holds no definitions: a JSON object listing test ids per category.
const NOT_DEFINITIONS: [&str; 1] = ["BFCL_v4_format_sensitivity.json"];

fn peers() -> PathBuf {
    let root = match std::env::var_os("TOOLGATE_PEERS") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.peers"),
    };
    let bfcl = root.join("bfcl");
    assert!(
        bfcl.join("bfcl_eval/data").is_dir() && bfcl.join("multi_turn_calls.jsonl").is_file(),
        "the BFCL data is missing under {}: run scripts/install-peers.sh",
        bfcl.display()
    );
    bfcl
}

fn read(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn json_lines(text: &str) -> impl Iterator<Item = Value> + '_ {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("BFCL files are JSON Lines"))
}

fn sorted_files(dir: PathBuf, prefix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.starts_with(prefix) && name.ends_with(".json")
        })
        .collect();
    files.sort();
    files
}

fn file_name(p: &std::path::Path) -> String {
    p.file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string()
}

/// (data file, test id) -> the entry's functions: the tool's index in [`Tools::list`] and the
/// definition's own `required` list.
type Entries = HashMap<(String, String), Vec<(usize, Vec<Value>)>>;

/// The distinct imported tools of the corpus, and their validators (compiled on first use).
#[derive(Default)]
struct Tools {
    list: Vec<ImportedTool>,
    index: HashMap<String, usize>,
    validators: HashMap<usize, ArgumentValidator>,
}

impl Tools {
    fn intern(&mut self, t: ImportedTool) -> usize {
        let key = json!([t.original_name, t.description, t.input_schema]).to_string();
        *self.index.entry(key).or_insert_with(|| {
            self.list.push(t);
            self.list.len() - 1
        })
    }

    fn validator(&mut self, i: usize) -> &ArgumentValidator {
        let t = &self.list[i];
        self.validators.entry(i).or_insert_with(|| {
            ArgumentValidator::compile(&t.name, &t.input_schema)
                .unwrap_or_else(|e| panic!("`{}` does not compile: {e}", t.name))
        })
    }
}

/// A ground-truth argument set the validator rejected.
#[derive(Debug)]
struct Rejection {
    at: String,
    tool: String,
    args: Value,
    errors: Vec<(String, String)>,
}

#[derive(Default)]
struct Truth {
    calls: usize,
    /// Calls all of whose argument sets were accepted.
    calls_accepted: usize,
    sets: usize,
    accepted: usize,
    rejected: Vec<Rejection>,
    skipped_entries: BTreeMap<String, usize>,
}

impl Truth {
    fn validate(&mut self, tools: &mut Tools, i: usize, at: String, sets: Vec<Value>) {
        self.calls += 1;
        let before = self.rejected.len();
        for args in sets {
            self.sets += 1;
            let name = tools.list[i].name.clone();
            match tools.validator(i).validate(&name, &args) {
                Ok(()) => self.accepted += 1,
                Err(e) => self.rejected.push(Rejection {
                    at: at.clone(),
                    tool: tools.list[i].original_name.clone(),
                    args,
                    errors: e
                        .argument_errors()
                        .into_iter()
                        .map(|a| (a.pointer, a.message))
                        .collect(),
                }),
            }
        }
        self.calls_accepted += usize::from(self.rejected.len() == before);
    }
}

#[test]
fn bfcl_corpus_imports_exports_and_validates_its_ground_truth() {
    let bfcl = peers();
    let data = bfcl.join("bfcl_eval/data");
    let mut tools = Tools::default();
    let mut summary = BTreeMap::<String, Value>::new();

    // 1. Import.
    let mut files = 0;
    let mut definitions = 0;
    let mut document_tools = 0;
    // (file, test id) -> the entry's functions: tool index, and BFCL's own `required` list.
    let mut entries: Entries = HashMap::new();
    let mut docs: HashMap<String, HashMap<String, usize>> = HashMap::new();
    let mut sources = sorted_files(data.clone(), "BFCL_v4_");
    sources.retain(|p| !NOT_DEFINITIONS.contains(&file_name(p).as_str()));
    sources.extend(sorted_files(data.join("multi_turn_func_doc"), ""));
    for path in &sources {
        let text = read(path);
        let file = file_name(path);
        let mut found = 0;
        for (line, v) in json_lines(&text).enumerate() {
            let defs: Vec<Value> = match v.get("function") {
                Some(Value::Array(list)) => list.clone(),
                Some(_) => Vec::new(),
                None if v.get("name").is_some() => vec![v.clone()],
                None => Vec::new(), // a multi-turn / memory / web-search entry
            };
            for def in defs {
                let required = def["parameters"]["required"].as_array().cloned();
                let t = import_definition(DefinitionFormat::Bfcl, &def)
                    .unwrap_or_else(|e| panic!("{file} line {}: {e}", line + 1));
                let i = tools.intern(t);
                found += 1;
                match v.get("id").and_then(Value::as_str) {
                    Some(id) => entries
                        .entry((file.clone(), id.into()))
                        .or_default()
                        .push((i, required.unwrap_or_default())),
                    None => {
                        let name = tools.list[i].original_name.clone();
                        docs.entry(file.clone()).or_default().insert(name, i);
                    }
                }
            }
        }
        if found == 0 {
            continue; // entries whose definitions live in multi_turn_func_doc
        }
        let whole = import_document(DefinitionFormat::Bfcl, &text)
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        files += 1;
        definitions += found;
        document_tools += whole.len();
    }
    let mut by_name: BTreeMap<&str, usize> = BTreeMap::new();
    for t in &tools.list {
        *by_name.entry(&t.original_name).or_default() += 1;
    }
    let import_notes: usize = tools.list.iter().filter(|t| !t.notes.is_empty()).count();
    summary.insert("files".into(), files.into());
    summary.insert("definitions".into(), definitions.into());
    summary.insert("imported".into(), definitions.into()); // every one, or the test panicked
    summary.insert("document_tools".into(), document_tools.into());
    summary.insert("distinct_tools".into(), tools.list.len().into());
    summary.insert("distinct_names".into(), by_name.len().into());
    summary.insert(
        "names_with_several_definitions".into(),
        by_name.values().filter(|n| **n > 1).count().into(),
    );
    summary.insert("tools_with_import_notes".into(), import_notes.into());
    summary.insert(
        "import_note_kinds".into(),
        kinds(tools.list.iter().flat_map(|t| &t.notes)),
    );

    // Every imported schema is a JSON Schema 2020-12 document.
    let mut problems = Vec::new();
    for t in &tools.list {
        if let Err(e) = jsonschema::draft202012::meta::validate(&t.input_schema) {
            problems.push(format!(
                "imported `{}`: not JSON Schema 2020-12: {e}",
                t.name
            ));
        }
    }

    // 2. Export in every dialect, and check every export.
    let mut exports = BTreeMap::new();
    for d in Dialect::ALL {
        let (mut valid, mut noted, mut fallback) = (0usize, 0usize, 0usize);
        let mut notes = Vec::new();
        for t in &tools.list {
            let desc = ToolDescriptor {
                name: t.name.clone(),
                description: t.description.clone(),
                input_schema: t.input_schema.clone(),
                source: "bfcl".into(),
                ..Default::default()
            };
            match desc.export_with_notes(d) {
                Err(e) => problems.push(format!("{d} `{}`: {e}", t.name)),
                Ok((def, n)) => {
                    let violations = check(d, &def);
                    let meta = json_schema(d, &def)
                        .and_then(|s| jsonschema::draft202012::meta::validate(s).err());
                    if let Some(e) = &meta {
                        problems.push(format!("{d} `{}`: not JSON Schema 2020-12: {e}", t.name));
                    }
                    if violations.is_empty() && meta.is_none() {
                        valid += 1;
                    }
                    for v in violations {
                        problems.push(format!("{d} `{}` {v}", t.name));
                    }
                    noted += usize::from(!n.is_empty());
                    fallback += usize::from(d == Dialect::OpenAiStrict && def["strict"] == false);
                    notes.extend(n);
                }
            }
        }
        exports.insert(
            d.to_string(),
            json!({"valid": valid, "with_notes": noted, "strict_fallbacks": fallback,
                   "note_kinds": kinds(notes.iter())}),
        );
    }
    summary.insert(
        "exports".into(),
        Value::Object(exports.into_iter().collect()),
    );
    assert!(
        problems.is_empty(),
        "{} exports fail or break their dialect's rules:\n{}",
        problems.len(),
        problems[..problems.len().min(40)].join("\n")
    );

    // 3. Ground truth.
    let mut truth = Truth::default();
    for path in sorted_files(data.join("possible_answer"), "BFCL_v4_") {
        let file = file_name(&path);
        for entry in json_lines(&read(&path)) {
            let id = entry["id"].as_str().unwrap_or_default().to_string();
            let Some(calls) = entry["ground_truth"].as_array() else {
                continue;
            };
            if !calls.iter().all(Value::is_object) {
                // Multi-turn calls (read from multi_turn_calls.jsonl below), or final answers
                // (memory, web search) rather than calls.
                *truth.skipped_entries.entry(file.clone()).or_default() += 1;
                continue;
            }
            let funcs = entries
                .get(&(file.clone(), id.clone()))
                .unwrap_or_else(|| panic!("{file} {id}: no test entry"))
                .clone();
            for (k, call) in calls.iter().enumerate() {
                let Some((name, params)) = call.as_object().and_then(|c| c.iter().next()) else {
                    continue;
                };
                let (i, required) = funcs
                    .iter()
                    .find(|(i, _)| tools.list[*i].original_name == *name)
                    .unwrap_or_else(|| panic!("{file} {id}: no function `{name}`"));
                let params = params.as_object().cloned().unwrap_or_default();
                let sets = argument_sets(&params, required);
                truth.validate(&mut tools, *i, format!("{id}#{k}"), sets);
            }
        }
    }
    let ast = json!({"calls": truth.calls, "calls_accepted": truth.calls_accepted,
        "sets": truth.sets, "accepted": truth.accepted});
    for call in json_lines(&read(&bfcl.join("multi_turn_calls.jsonl"))) {
        let at = format!(
            "{}#{}.{}",
            call["id"].as_str().unwrap_or(""),
            call["turn"],
            call["step"]
        );
        assert!(call.get("error").is_none(), "{at}: {call}");
        let doc = call["doc"].as_str().unwrap_or_default();
        let name = call["name"].as_str().unwrap_or_default();
        let i = docs[doc][name];
        truth.validate(&mut tools, i, at, vec![call["arguments"].clone()]);
    }

    let mut unexplained = Vec::new();
    let mut explained: BTreeMap<&str, usize> = EXPLAINED.iter().map(|e| (e.kind, 0)).collect();
    for r in &truth.rejected {
        let kind = EXPLAINED.iter().find(|e| {
            e.tools.contains(&r.tool.as_str())
                && !r.errors.is_empty()
                && r.errors
                    .iter()
                    .all(|(_, m)| e.messages.iter().any(|x| m.contains(x)))
        });
        match kind {
            Some(e) => *explained.entry(e.kind).or_default() += 1,
            None => unexplained.push(format!(
                "{} `{}` {} -> {:?}",
                r.at, r.tool, r.args, r.errors
            )),
        }
    }
    let rate = truth.accepted as f64 / truth.sets as f64;
    summary.insert(
        "ground_truth".into(),
        json!({"calls": truth.calls, "calls_accepted": truth.calls_accepted,
               "sets": truth.sets, "accepted": truth.accepted,
               "rejected": truth.rejected.len(), "accepted_percent": (rate * 10000.0).round() / 100.0,
               "entries_without_calls": truth.skipped_entries, "rejections": explained,
               "ast_categories": ast}),
    );
    println!(
        "BFCL-SUMMARY {}",
        serde_json::to_string_pretty(&summary).unwrap_or_default()
    );
    assert!(
        unexplained.is_empty(),
        "{} ground-truth argument sets rejected without an explanation:\n{}",
        unexplained.len(),
        unexplained.join("\n")
    );
    let stale: Vec<&str> = explained
        .iter()
        .filter(|(_, n)| **n == 0)
        .map(|(k, _)| *k)
        .collect();
    assert!(
        stale.is_empty(),
        "explained kinds that no longer occur: {stale:?}"
    );
    assert!(
        rate >= 0.99,
        "only {:.2}% of ground-truth sets accepted",
        rate * 100.0
    );
}

/// The JSON Schema 2020-12 document of an exported definition (Gemini's `parameters` are an
/// OpenAPI 3.0 subset instead).
fn json_schema(d: Dialect, def: &Value) -> Option<&Value> {
    match d {
        Dialect::Mcp => def.get("inputSchema"),
        Dialect::OpenAi | Dialect::OpenAiStrict => def.get("parameters"),
        Dialect::Anthropic => def.get("input_schema"),
        Dialect::Gemini => None,
    }
}

/// Notes grouped by kind (the pointer and quoted values removed), most frequent first.
fn kinds<'a>(notes: impl Iterator<Item = &'a String>) -> Value {
    let mut count: HashMap<String, usize> = HashMap::new();
    for n in notes {
        *count.entry(kind(n)).or_default() += 1;
    }
    let mut list: Vec<(String, usize)> = count.into_iter().collect();
    list.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    list.into_iter().map(|(k, n)| json!([n, k])).collect()
}

/// `/a/b: removed `format: float` (x)` -> `removed `format` (x)`: the note without pointers and
/// with only the keyword of each quoted fragment (`…` for names and values).
fn kind(note: &str) -> String {
    let (text, mut out) = match note.split_once(": ") {
        Some((p, rest)) if p.starts_with('/') => {
            // The keyword the note is about: the pointer's last segment, if it is one.
            let last = p.rsplit('/').next().unwrap_or_default();
            let keywords = [
                "name", "type", "enum", "default", "required", "items", "response",
            ];
            let at = if keywords.contains(&last) {
                format!("{last}: ")
            } else {
                String::new()
            };
            (rest, at)
        }
        _ => (note, String::new()),
    };
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 1 {
            let keyword = part.split_once(": ").map_or(part, |(k, _)| k);
            let plain = keyword
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$'));
            let known = [
                "type", "enum", "default", "null", "any", "format", "required",
            ]
            .contains(&keyword)
                || keyword
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_lowercase())
                    && part.contains(": ");
            out.push('`');
            out.push_str(if plain && known { keyword } else { "…" });
            out.push('`');
        } else {
            let words: Vec<&str> = part
                .split(' ')
                .map(|w| if w.starts_with('/') { "…" } else { w })
                .collect();
            out.push_str(&words.join(" "));
        }
    }
    out
}

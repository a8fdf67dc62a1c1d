//! The scale benchmark's toolsets: a synthetic OpenAPI 3.1 document of N operations and a
//! tools.yaml that compiles it in (`load: build`, `typed: false`), run through
//! `toolgate_codegen::Builder` for N = 10, 1 000 and 10 000, each into its own folder of
//! `OUT_DIR` (`scale_n{N}/`: `openapi.json`, `tools.yaml`, the generated `toolset.rs` and the
//! embedded conversion `toolgate_openapi_api.json`). The codegen time of each size is measured
//! here, around `Builder::generate`, and written with the sizes of what was generated to
//! `OUT_DIR/scale_facts.rs` (included by `src/scale.rs`).
//!
//! `typed: false`: only the tools, no typed argument struct and `async fn` per operation (that
//! face costs rustc about 17 ms per operation in a dev build, see BENCHMARKS.md "OpenAPI
//! conversion"; what grows with the toolset here is the conversion embedded as JSON).
//!
//! The generation is skipped when a size's folder already holds the output of the same
//! document by the same build-script binary (`key`): the build script reruns whenever any file
//! under `src/` changes, and the 10 000-tool codegen takes seconds. The codegen time recorded
//! then is the one measured when that output was generated.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{Map, Value, json};

/// The toolset sizes generated.
const SIZES: [usize; 3] = [10, 1_000, 10_000];

/// The resource kinds operations are made for (five operations each: list, get, create,
/// update, delete), repeated under `/v1/svc{k}/` until N operations exist.
const NOUNS: [&str; 20] = [
    "invoice",
    "customer",
    "order",
    "product",
    "shipment",
    "ticket",
    "project",
    "repository",
    "dataset",
    "report",
    "campaign",
    "subscription",
    "payment",
    "refund",
    "webhook",
    "user",
    "team",
    "device",
    "sensor",
    "document",
];

/// Writes every size's folder and `scale_facts.rs` to `OUT_DIR`.
pub fn generate() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let mut facts = String::from(
        "/// What the build script generated for each size: `(tools, codegen seconds, \
         OpenAPI document bytes, embedded conversion bytes, generated Rust lines)`.\n\
         pub const FACTS: &[(usize, f64, usize, usize, usize)] = &[\n",
    );
    for n in SIZES {
        let dir = out.join(format!("scale_n{n}"));
        let (seconds, doc, embedded, lines) = generate_size(&dir, n);
        facts.push_str(&format!(
            "    ({n}, {seconds:?}, {doc}, {embedded}, {lines}),\n"
        ));
    }
    facts.push_str("];\n");
    // The profile of the build that ran this script (its own code and toolgate-codegen are
    // compiled with that profile's build-override: opt-level 0 unless configured otherwise).
    let profile = std::env::var("PROFILE").unwrap_or_default();
    facts.push_str(&format!(
        "/// The cargo profile of the build that generated them (`debug` or `release`).\n\
         pub const PROFILE: &str = {profile:?};\n"
    ));
    write_if_changed(&out.join("scale_facts.rs"), &facts);
}

/// Generates one size into `dir`; returns (codegen seconds, document bytes, embedded JSON
/// bytes, generated Rust lines).
fn generate_size(dir: &Path, n: usize) -> (f64, usize, usize, usize) {
    std::fs::create_dir_all(dir).expect("create the scale folder");
    let doc = serde_json::to_string_pretty(&document(n)).expect("serialize the document");
    let yaml = tools_yaml();
    let key = cache_key(&doc, &yaml);
    let key_file = dir.join("key");
    let seconds_file = dir.join("codegen_seconds");
    let code_file = dir.join("toolset.rs");
    let embedded_file = dir.join("toolgate_openapi_api.json");
    let cached = std::fs::read_to_string(&key_file).is_ok_and(|k| k == key)
        && code_file.is_file()
        && embedded_file.is_file();
    let seconds = match std::fs::read_to_string(&seconds_file) {
        Ok(s) if cached => s.trim().parse().unwrap_or(f64::NAN),
        _ => {
            write_if_changed(&dir.join("openapi.json"), &doc);
            write_if_changed(&dir.join("tools.yaml"), &yaml);
            let start = Instant::now();
            let generated = toolgate_codegen::Builder::new("tools.yaml")
                .manifest_dir(dir)
                // No `#[tool]` functions: a folder that does not exist is not scanned.
                .src_dir("no-src")
                .out_dir(dir)
                .out_file("toolset.rs")
                .generate();
            let seconds = start.elapsed().as_secs_f64();
            match generated {
                Ok(g) => {
                    for w in &g.report().warnings {
                        println!("cargo:warning=scale n={n}: {w}");
                    }
                }
                Err(e) => {
                    let all: Vec<String> = e.diagnostics().iter().map(|d| d.to_string()).collect();
                    panic!("scale toolset of {n} tools:\n{}", all.join("\n"));
                }
            }
            std::fs::write(&seconds_file, format!("{seconds}")).expect("write codegen_seconds");
            std::fs::write(&key_file, &key).expect("write key");
            seconds
        }
    };
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len() as usize);
    let lines = std::fs::read_to_string(&code_file).map_or(0, |c| c.lines().count());
    (seconds, doc.len(), size(&embedded_file), lines)
}

/// The identity of one generation: the inputs and the build-script binary (rebuilt whenever
/// this file or toolgate-codegen changes).
fn cache_key(doc: &str, yaml: &str) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    doc.hash(&mut h);
    yaml.hash(&mut h);
    let exe = std::env::current_exe().ok();
    let stamp = exe
        .as_ref()
        .and_then(|p| std::fs::metadata(p).ok())
        .and_then(|m| m.modified().ok());
    format!("{:016x} {exe:?} {stamp:?}", h.finish())
}

fn write_if_changed(path: &Path, text: &str) {
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return;
    }
    std::fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// tools.yaml: the document compiled in, without the typed face.
fn tools_yaml() -> String {
    "# The scale benchmark's toolset (generated by benches/build/scale.rs).\n\
     version: 1\n\
     tools:\n  openapi:\n    - id: api\n      spec: openapi.json\n      load: build\n      typed: false\n"
        .to_string()
}

fn upper(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
        .unwrap_or_default()
}

/// The synthetic document: `n` operations in groups of five per resource (list with query
/// parameters and an enum, get by path parameter, create with a JSON body, update with a
/// header and a body, delete with a boolean query parameter), `$ref`s to shared components in
/// parameters, bodies and responses.
pub fn document(n: usize) -> Value {
    let mut paths = Map::new();
    let mut made = 0;
    let mut resource = 0;
    while made < n {
        let noun = NOUNS[resource % NOUNS.len()];
        let svc = resource / NOUNS.len();
        let prefix = format!("svc{svc:03}");
        let id_param = format!("{noun}Id");
        let collection = format!("/v1/{prefix}/{noun}s");
        let item = format!("{collection}/{{{id_param}}}");
        let plural = upper(&format!("{noun}s"));
        let single = upper(noun);
        let mut ops: Vec<(String, &str, Value)> = vec![
            (collection.clone(), "get", list_op(&prefix, noun, &plural)),
            (
                item.clone(),
                "get",
                get_op(&prefix, noun, &single, &id_param),
            ),
            (
                collection.clone(),
                "post",
                create_op(&prefix, noun, &single),
            ),
            (
                item.clone(),
                "patch",
                update_op(&prefix, noun, &single, &id_param),
            ),
            (item, "delete", delete_op(&prefix, noun, &single, &id_param)),
        ];
        ops.truncate(n - made);
        for (path, method, op) in ops {
            let entry = paths
                .entry(path)
                .or_insert_with(|| Value::Object(Map::new()));
            entry[method] = op;
            made += 1;
        }
        resource += 1;
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Synthetic scale API",
            "version": "1.0.0",
            "description": format!("{n} operations over {resource} resources, generated for toolgate's scale benchmark."),
        },
        "servers": [{"url": "https://api.example.com"}],
        "paths": paths,
        "components": {
            "schemas": {
                "Status": {
                    "type": "string",
                    "description": "The lifecycle state of a resource.",
                    "enum": ["active", "archived", "deleted"],
                },
                "Owner": {
                    "type": "object",
                    "description": "Who owns a resource.",
                    "required": ["id"],
                    "properties": {
                        "id": {"type": "string", "description": "The owner's id."},
                        "email": {"type": "string", "format": "email"},
                        "name": {"type": "string", "maxLength": 200},
                    },
                },
                "Resource": {
                    "type": "object",
                    "required": ["id", "name", "status"],
                    "properties": {
                        "id": {"type": "string"},
                        "name": {"type": "string"},
                        "description": {"type": ["string", "null"]},
                        "status": {"$ref": "#/components/schemas/Status"},
                        "owner": {"$ref": "#/components/schemas/Owner"},
                        "tags": {"type": "array", "items": {"type": "string"}},
                        "created_at": {"type": "string", "format": "date-time"},
                        "updated_at": {"type": "string", "format": "date-time"},
                    },
                },
                "Page": {
                    "type": "object",
                    "required": ["items"],
                    "properties": {
                        "items": {"type": "array", "items": {"$ref": "#/components/schemas/Resource"}},
                        "next_cursor": {"type": ["string", "null"], "description": "Pass as `cursor` for the next page."},
                    },
                },
                "Error": {
                    "type": "object",
                    "required": ["code", "message"],
                    "properties": {
                        "code": {"type": "string"},
                        "message": {"type": "string"},
                    },
                },
            },
            "parameters": {
                "Limit": {
                    "name": "limit",
                    "in": "query",
                    "description": "At most this many results.",
                    "schema": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
                },
                "Cursor": {
                    "name": "cursor",
                    "in": "query",
                    "description": "Where the previous page ended.",
                    "schema": {"type": "string"},
                },
            },
        },
    })
}

fn path_param(name: &str, noun: &str) -> Value {
    json!({
        "name": name,
        "in": "path",
        "required": true,
        "description": format!("The {noun}'s id."),
        "schema": {"type": "string", "pattern": "^[a-z0-9_-]{1,40}$"},
    })
}

fn responses(status: &str, schema: Option<&str>) -> Value {
    let mut r = Map::new();
    r.insert(
        status.to_string(),
        match schema {
            Some(s) => json!({
                "description": "OK",
                "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{s}")}}},
            }),
            None => json!({"description": "Done"}),
        },
    );
    r.insert(
        "default".to_string(),
        json!({
            "description": "An error",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
        }),
    );
    Value::Object(r)
}

fn list_op(prefix: &str, noun: &str, plural: &str) -> Value {
    json!({
        "operationId": format!("{prefix}_list{plural}"),
        "summary": format!("List {noun}s"),
        "description": format!("Lists the {noun}s of the account, newest first unless `sort` says otherwise."),
        "tags": [noun],
        "parameters": [
            {"$ref": "#/components/parameters/Limit"},
            {"$ref": "#/components/parameters/Cursor"},
            {
                "name": "sort",
                "in": "query",
                "description": "The order of the results.",
                "schema": {"type": "string", "enum": ["created", "updated", "name"], "default": "created"},
            },
            {
                "name": "status",
                "in": "query",
                "schema": {"$ref": "#/components/schemas/Status"},
            },
        ],
        "responses": responses("200", Some("Page")),
    })
}

fn get_op(prefix: &str, noun: &str, single: &str, id: &str) -> Value {
    json!({
        "operationId": format!("{prefix}_get{single}"),
        "summary": format!("Get a {noun}"),
        "tags": [noun],
        "parameters": [
            path_param(id, noun),
            {
                "name": "expand",
                "in": "query",
                "description": "Related objects to include.",
                "style": "form",
                "explode": false,
                "schema": {"type": "array", "items": {"type": "string", "enum": ["owner", "tags"]}},
            },
        ],
        "responses": responses("200", Some("Resource")),
    })
}

fn create_op(prefix: &str, noun: &str, single: &str) -> Value {
    json!({
        "operationId": format!("{prefix}_create{single}"),
        "summary": format!("Create a {noun}"),
        "description": format!("Creates a {noun} owned by `owner` (the caller when left out)."),
        "tags": [noun],
        "requestBody": {
            "required": true,
            "content": {"application/json": {"schema": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "minLength": 1, "maxLength": 200},
                    "description": {"type": "string"},
                    "status": {"$ref": "#/components/schemas/Status"},
                    "owner": {"$ref": "#/components/schemas/Owner"},
                    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 20},
                    "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
                },
            }}},
        },
        "responses": responses("201", Some("Resource")),
    })
}

fn update_op(prefix: &str, noun: &str, single: &str, id: &str) -> Value {
    json!({
        "operationId": format!("{prefix}_update{single}"),
        "summary": format!("Update a {noun}"),
        "tags": [noun],
        "parameters": [
            path_param(id, noun),
            {
                "name": "If-Match",
                "in": "header",
                "description": "Only update when the current version has this ETag.",
                "schema": {"type": "string"},
            },
        ],
        "requestBody": {
            "content": {"application/json": {"schema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1, "maxLength": 200},
                    "description": {"type": "string"},
                    "status": {"$ref": "#/components/schemas/Status"},
                    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 20},
                },
            }}},
        },
        "responses": responses("200", Some("Resource")),
    })
}

fn delete_op(prefix: &str, noun: &str, single: &str, id: &str) -> Value {
    json!({
        "operationId": format!("{prefix}_delete{single}"),
        "summary": format!("Delete a {noun}"),
        "tags": [noun],
        "parameters": [
            path_param(id, noun),
            {
                "name": "force",
                "in": "query",
                "description": "Delete even when other resources refer to it.",
                "schema": {"type": "boolean", "default": false},
            },
        ],
        "responses": responses("204", None),
    })
}

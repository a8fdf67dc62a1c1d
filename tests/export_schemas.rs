//! Acceptance point 5: the exported MCP / OpenAI / Anthropic definition of every built-in tool is
//! a valid JSON Schema 2020-12 document where it holds a schema, has the shape each provider
//! documents, and its input schema really describes what the tool accepts.
//!
//! The shape rules are written from the providers' own documents:
//!
//! - **MCP** `Tool` (specification 2025-06-18, "Server features / Tools",
//!   <https://modelcontextprotocol.io/specification/2025-06-18/server/tools>, and its
//!   `schema/2025-06-18/schema.json` definition `Tool`): `name` (required string), `title`,
//!   `description`, `inputSchema` (required; an object whose `type` is the constant `"object"`,
//!   with optional `properties` and `required`), `outputSchema` (optional, same shape),
//!   `annotations` (`ToolAnnotations`: `title`, `readOnlyHint`, `destructiveHint`,
//!   `idempotentHint`, `openWorldHint`), `_meta`. The spec's schemas default to JSON Schema
//!   2020-12.
//! - **OpenAI** function tool (API reference, Responses API `tools` > "Function",
//!   <https://platform.openai.com/docs/api-reference/responses/create>, and the function-calling
//!   guide <https://platform.openai.com/docs/guides/function-calling>): `type: "function"`,
//!   `name` ("Must be a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum length of
//!   64"), `description`, `parameters` (a JSON Schema object), `strict` (boolean). With
//!   `strict: true` every property must be `required` and objects must set
//!   `additionalProperties: false` (guide, "Strict mode").
//! - **Anthropic** tool (API reference, Messages > `tools`, <https://docs.anthropic.com/en/api/messages>,
//!   and <https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use>):
//!   `name` ("Must match regex `^[a-zA-Z0-9_-]{1,64}$`"), `description`, `input_schema` (a JSON
//!   Schema object with `type: "object"`), optional `type: "custom"` and `cache_control`.
//!
//! These rules (and the stricter ones of OpenAI strict mode and Gemini's schema subset) live in
//! one public checker, `toolgate_model::dialect::check::check`, shared with the unit tests and the
//! BFCL corpus test; this file adds the JSON Schema 2020-12 meta-schema check (`jsonschema` is
//! not a dependency of toolgate-model). [`the_checks_reject_broken_definitions`] proves every
//! check can fail.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Value, json};
use toolgate::{Dialect, ErrorKind, ToolDescriptor, Toolset};
use toolgate_model::dialect::check::check;

const BUILTINS: [&str; 6] = [
    "fetch",
    "read_file",
    "list_dir",
    "calc",
    "jq",
    "current_time",
];

/// The built-in tools with the package root shared for `read_file` and `list_dir` (no root is
/// shared by default), and jq's worker processes started from the `toolgate` binary (this test
/// binary's `main` belongs to libtest).
fn toolset() -> Toolset {
    toolgate::builtin::jq::set_worker_command(toolgate::builtin::jq::WorkerCommand::new(env!(
        "CARGO_BIN_EXE_toolgate"
    )));
    let mut settings = toolgate::builtin::BuiltinSettings::default();
    settings.files.root = Some(std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    toolgate::builtin::toolset(settings)
        .build()
        .expect("the built-in toolset builds")
}

// ---------------------------------------------------------------------------------------------
// The checks
// ---------------------------------------------------------------------------------------------

/// `schema` is valid against the JSON Schema 2020-12 meta-schema, and compiles to a validator
/// (so every `$ref` in it resolves).
fn check_schema(what: &str, schema: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    if let Err(e) = jsonschema::draft202012::meta::validate(schema) {
        problems.push(format!(
            "{what}: not a valid JSON Schema 2020-12 document: {e} (at {})",
            e.instance_path()
        ));
    }
    if let Err(e) = jsonschema::draft202012::new(schema) {
        problems.push(format!("{what}: does not compile: {e}"));
    }
    if let Some(uri) = schema.get("$schema")
        && uri != "https://json-schema.org/draft/2020-12/schema"
    {
        problems.push(format!("{what}: `$schema` is {uri}, not 2020-12"));
    }
    problems
}

/// The rules of `dialect`, from the shared checker ([`check`], written from each provider's
/// documents), and the meta-schema check of every JSON Schema the definition holds (Gemini's
/// `parameters` are an OpenAPI 3.0 subset, not JSON Schema 2020-12).
fn check_dialect(dialect: Dialect, def: &Value) -> Vec<String> {
    let what = format!("{dialect} `{}`", def["name"]);
    let mut problems: Vec<String> = check(dialect, def)
        .iter()
        .map(|v| format!("{what} {v}"))
        .collect();
    let schemas: &[&str] = match dialect {
        Dialect::Mcp => &["inputSchema", "outputSchema"],
        Dialect::OpenAi | Dialect::OpenAiStrict => &["parameters"],
        Dialect::Anthropic => &["input_schema"],
        Dialect::Gemini => &[],
    };
    for key in schemas {
        if let Some(schema) = def.get(*key) {
            problems.extend(check_schema(&format!("{what}.{key}"), schema));
        }
    }
    problems
}

/// Where the input schema sits in each dialect.
fn input_schema(dialect: Dialect, def: &Value) -> &Value {
    match dialect {
        Dialect::Mcp => &def["inputSchema"],
        Dialect::OpenAi | Dialect::OpenAiStrict | Dialect::Gemini => &def["parameters"],
        Dialect::Anthropic => &def["input_schema"],
    }
}

// ---------------------------------------------------------------------------------------------
// The tests
// ---------------------------------------------------------------------------------------------

#[test]
fn every_builtin_exports_valid_definitions_in_every_dialect() {
    let tools = toolset();
    let descriptors: Vec<Arc<ToolDescriptor>> = tools.tools();
    let names: BTreeSet<&str> = descriptors.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, BTreeSet::from(BUILTINS), "the built-in toolset");

    let mut problems = Vec::new();
    for dialect in Dialect::ALL {
        let all = tools
            .export(dialect)
            .unwrap_or_else(|e| panic!("export as {dialect}: {e}"));
        assert_eq!(
            all.len(),
            descriptors.len(),
            "{dialect}: one definition per tool"
        );
        for (d, def) in descriptors.iter().zip(&all) {
            let one = d
                .export(dialect)
                .unwrap_or_else(|e| panic!("export `{}` as {dialect}: {e}", d.name));
            assert_eq!(
                &one, def,
                "{dialect}: Toolset::export and ToolDescriptor::export agree"
            );
            assert_eq!(def["name"], d.name.as_str(), "{dialect}: {def}");
            assert_eq!(
                def["description"],
                d.description.as_str(),
                "{dialect}: {def}"
            );
            // The exported input schema is the tool's, not some other one (dialects lower the
            // property schemas, but never add or drop an argument).
            let keys = |v: &Value| -> BTreeSet<String> {
                v.as_object()
                    .map(|m| m.keys().cloned().collect())
                    .unwrap_or_default()
            };
            // Except that openai-strict carries an argument it cannot describe as `{name}_json`.
            let exported: BTreeSet<String> = keys(&input_schema(dialect, def)["properties"])
                .into_iter()
                .map(|k| match k.strip_suffix("_json") {
                    Some(base)
                        if dialect == Dialect::OpenAiStrict
                            && d.input_schema["properties"].get(base).is_some()
                            && d.input_schema["properties"].get(&k).is_none() =>
                    {
                        base.to_string()
                    }
                    _ => k,
                })
                .collect();
            assert_eq!(
                exported,
                keys(&d.input_schema["properties"]),
                "{dialect} `{}`",
                d.name
            );
            problems.extend(check_dialect(dialect, def));
        }
    }
    assert!(
        problems.is_empty(),
        "exported definitions break the rules:\n{}",
        problems.join("\n")
    );
}

#[test]
fn mcp_definitions_carry_output_schemas_and_camel_case_annotations() {
    let tools = toolset();
    for d in tools.tools() {
        let def = d.export(Dialect::Mcp).unwrap();
        // Every built-in returns a JsonSchema struct, so each has an output schema.
        assert!(
            def["outputSchema"].is_object(),
            "`{}` has no outputSchema: {def}",
            d.name
        );
        // Every built-in is read-only: the hint is exported under MCP's camelCase key.
        assert_eq!(def["annotations"]["readOnlyHint"], true, "{def}");
        let keys: Vec<&String> = def["annotations"].as_object().unwrap().keys().collect();
        assert!(
            keys.iter().all(|k| !k.contains('_')),
            "annotation keys must be camelCase: {keys:?}"
        );
    }
}

/// Arguments the CLI tests use (valid), and wrong ones (each must be refused by the schema and
/// by the tool).
fn example_arguments() -> Vec<(&'static str, Vec<Value>, Vec<Value>)> {
    vec![
        (
            "fetch",
            vec![
                json!({"url": "http://127.0.0.1:8000/hello.txt"}),
                json!({"url": "http://127.0.0.1:8000/hello.txt", "max_bytes": 5}),
                json!({"url": "http://127.0.0.1:8000/", "method": "HEAD"}),
            ],
            vec![
                json!({}),
                json!({"url": 5}),
                json!({"url": "http://127.0.0.1:8000/", "method": "POST"}),
                json!({"url": "http://127.0.0.1:8000/", "max_bytes": -1}),
                json!({"url": "http://127.0.0.1:8000/", "headers": {}}),
            ],
        ),
        (
            "read_file",
            vec![
                json!({"path": "Cargo.toml"}),
                json!({"path": "README.md", "max_bytes": 1_000_000}),
            ],
            vec![
                json!({"path": "Cargo.toml", "max_bytes": "lots"}),
                json!({"path": "Cargo.toml", "max_bytes": 1.5}),
                json!({"file": "Cargo.toml"}),
                json!({}),
            ],
        ),
        (
            "list_dir",
            vec![json!({"path": "examples"}), json!({})],
            vec![json!({"path": 5}), json!({"path": "examples", "bogus": 1})],
        ),
        (
            "calc",
            vec![
                json!({"expression": "2 * (3 + 4) ^ 2"}),
                json!({"expression": "6 * 7"}),
            ],
            vec![
                json!({"expresion": "1+1"}),
                json!({"expression": 5}),
                json!({}),
            ],
        ),
        (
            "jq",
            vec![
                json!({"filter": ".[] | select(.age > 30) | .name",
                       "input": [{"name": "ada", "age": 36}, {"name": "bob", "age": 25}]}),
                json!({"filter": ".", "input": null}),
            ],
            vec![
                json!({"filter": 3, "input": 1}),
                json!({"input": 1}),
                json!({"filter": "."}),
            ],
        ),
        (
            "current_time",
            vec![json!({"time_zone": "Europe/Oslo"}), json!({})],
            vec![json!({"time_zone": 5}), json!({"tz": "UTC"})],
        ),
    ]
}

#[test]
fn exported_input_schemas_describe_what_each_tool_accepts() {
    let tools = toolset();
    let examples = example_arguments();
    let covered: BTreeSet<&str> = examples.iter().map(|(n, ..)| *n).collect();
    assert_eq!(
        covered,
        BTreeSet::from(BUILTINS),
        "every built-in has examples"
    );

    let mut problems = Vec::new();
    for (name, good, bad) in &examples {
        let d = tools.describe(name).unwrap();
        for dialect in Dialect::ALL {
            let def = d.export(dialect).unwrap();
            let schema = input_schema(dialect, &def);
            let validator = jsonschema::validator_for(schema)
                .unwrap_or_else(|e| panic!("{dialect} `{name}`: schema does not compile: {e}"));
            for args in good {
                // Strict mode makes every argument required and nullable: a model sends `null`
                // for what it leaves out.
                let args = &if dialect == Dialect::OpenAiStrict {
                    let mut full = carried_as_json_text(schema, args);
                    for k in schema["properties"]
                        .as_object()
                        .into_iter()
                        .flat_map(|m| m.keys())
                    {
                        full.as_object_mut()
                            .unwrap()
                            .entry(k.clone())
                            .or_insert(Value::Null);
                    }
                    full
                } else {
                    args.clone()
                };
                let errors: Vec<String> =
                    validator.iter_errors(args).map(|e| e.to_string()).collect();
                if !errors.is_empty() {
                    problems.push(format!(
                        "{dialect} `{name}`: valid arguments {args} rejected: {errors:?}"
                    ));
                }
            }
            for args in bad {
                // Gemini's subset has no `additionalProperties`, so it cannot refuse extra keys
                // (the export notes say so; the gateway's own validator still refuses them).
                if dialect == Dialect::Gemini
                    && args.as_object().is_some_and(|m| {
                        m.keys().any(|k| {
                            !schema["properties"]
                                .as_object()
                                .is_some_and(|p| p.contains_key(k))
                        })
                    })
                {
                    continue;
                }
                let args = &if dialect == Dialect::OpenAiStrict {
                    carried_as_json_text(schema, args)
                } else {
                    args.clone()
                };
                if validator.is_valid(args) {
                    problems.push(format!(
                        "{dialect} `{name}`: wrong arguments {args} accepted by the schema"
                    ));
                }
            }
        }
        // The tool itself refuses the wrong arguments the same way (before doing anything).
        for args in bad {
            match tools.call_blocking(name, args.clone()) {
                Err(e) if e.kind() == ErrorKind::InvalidArguments => {}
                other => problems.push(format!(
                    "`{name}` called with wrong arguments {args}: expected invalid_arguments, got {other:?}"
                )),
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `args` as a model given the openai-strict `schema` sends them: each argument the export
/// carries as JSON text (`{name}_json` in `schema`, `name` in `args`) sent JSON-encoded under
/// that name.
fn carried_as_json_text(schema: &Value, args: &Value) -> Value {
    let mut out = args.clone();
    let (Some(props), Some(map)) = (schema["properties"].as_object(), out.as_object_mut()) else {
        return out;
    };
    for carried in props.keys() {
        if let Some(base) = carried.strip_suffix("_json")
            && !props.contains_key(base)
            && let Some(value) = map.remove(base)
        {
            map.insert(carried.clone(), Value::String(value.to_string()));
        }
    }
    out
}

#[test]
fn structured_results_match_the_exported_output_schemas() {
    // MCP: "If an output schema is provided, servers MUST provide structured results that conform
    // to this schema." Every built-in that needs no network is called for real (the working
    // directory of an integration test is the package root, the `files.root` shared here).
    let tools = toolset();
    let mut checked = 0;
    for (name, good, _) in example_arguments() {
        if name == "fetch" {
            continue; // needs a server: covered by tests/cli.rs
        }
        let d = tools.describe(name).unwrap();
        let mcp = d.export(Dialect::Mcp).unwrap();
        let validator = jsonschema::validator_for(&mcp["outputSchema"]).unwrap();
        for args in good {
            let out = tools
                .call_blocking(name, args.clone())
                .unwrap_or_else(|e| panic!("`{name}` {args}: {e}"));
            let structured = out
                .structured
                .unwrap_or_else(|| panic!("`{name}` returned no structuredContent"));
            let errors: Vec<String> = validator
                .iter_errors(&structured)
                .map(|e| format!("{} at {}", e, e.instance_path()))
                .collect();
            assert!(
                errors.is_empty(),
                "`{name}` {args}: result {structured} breaks its outputSchema: {errors:?}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 8, "only {checked} results checked");
}

#[test]
fn the_checks_reject_broken_definitions() {
    // The meta-schema check is not vacuous.
    assert!(!check_schema("x", &json!({"type": "objekt"})).is_empty());
    assert!(!check_schema("x", &json!({"properties": {"a": 5}})).is_empty());
    assert!(!check_schema("x", &json!({"required": "a"})).is_empty());
    assert!(!check_schema("x", &json!({"$ref": "#/$defs/Missing"})).is_empty());
    assert!(check_schema("x", &json!({"type": "object"})).is_empty());

    let tools = toolset();
    let d = tools.describe("calc").unwrap();
    let broken = |dialect: Dialect, edit: &dyn Fn(&mut Value)| {
        let mut def = d.export(dialect).unwrap();
        assert!(
            check_dialect(dialect, &def).is_empty(),
            "the original is valid"
        );
        edit(&mut def);
        let problems = check_dialect(dialect, &def);
        assert!(
            !problems.is_empty(),
            "{dialect}: a broken definition passed: {def}"
        );
    };
    for dialect in Dialect::ALL {
        broken(dialect, &|v| v["name"] = json!("calc.v2"));
        broken(dialect, &|v| v["name"] = json!("x".repeat(65)));
        broken(dialect, &|v| v["name"] = json!(""));
        broken(dialect, &|v| v["unexpected"] = json!(1));
        let key = match dialect {
            Dialect::Mcp => "inputSchema",
            Dialect::OpenAi | Dialect::OpenAiStrict | Dialect::Gemini => "parameters",
            Dialect::Anthropic => "input_schema",
        };
        broken(dialect, &|v| v[key]["type"] = json!("array"));
        broken(dialect, &|v| {
            v[key]["properties"]["expression"]["type"] = json!("text")
        });
        broken(dialect, &|v| v[key]["required"] = json!(["nope"]));
        // (Gemini declarations without arguments have no `parameters`: removing it is legal.)
        if dialect != Dialect::Gemini {
            broken(dialect, &|v| {
                v.as_object_mut().unwrap().remove(key);
            });
        }
    }
    broken(Dialect::Mcp, &|v| {
        v["annotations"]["read_only_hint"] = json!(true)
    });
    broken(Dialect::Mcp, &|v| {
        v["outputSchema"]["type"] = json!("string")
    });
    broken(Dialect::OpenAi, &|v| v["type"] = json!("tool"));
    broken(Dialect::OpenAi, &|v| {
        v["parameters"]["$schema"] = json!("https://json-schema.org/draft/2020-12/schema");
    });
    broken(Dialect::OpenAi, &|v| {
        v["strict"] = json!(true);
        v["parameters"]["properties"]["extra"] = json!({"type": "string"});
    });
    broken(Dialect::Anthropic, &|v| {
        v["parameters"] = v["input_schema"].clone()
    });
    // The stricter rules: OpenAI strict mode and Gemini's schema subset.
    assert_eq!(d.export(Dialect::OpenAiStrict).unwrap()["strict"], true);
    broken(Dialect::OpenAiStrict, &|v| {
        v["parameters"]["additionalProperties"] = json!(true)
    });
    broken(Dialect::OpenAiStrict, &|v| {
        v["parameters"]["properties"]["expression"]["minLength"] = json!(1)
    });
    broken(Dialect::Gemini, &|v| {
        v["parameters"]["properties"]["expression"]["additionalProperties"] = json!(false)
    });
    broken(Dialect::Gemini, &|v| {
        v["parameters"]["properties"]["expression"]["type"] = json!(["string", "null"])
    });
}

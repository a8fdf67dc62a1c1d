use serde_json::{Value, json};

use super::*;

fn bfcl(def: Value) -> ImportedTool {
    import_definition(DefinitionFormat::Bfcl, &def).unwrap_or_else(|e| panic!("{e}: {def}"))
}

/// The imported schema of one BFCL parameter `p`, and the notes.
fn param(p: Value) -> (Value, Vec<String>) {
    let t = bfcl(json!({"name": "f", "description": "d", "parameters": {
        "type": "dict", "properties": {"p": p}, "required": ["p"]}}));
    (t.input_schema["properties"]["p"].clone(), t.notes)
}

fn has(notes: &[String], start: &str) -> bool {
    notes.iter().any(|n| n.starts_with(start))
}

#[test]
fn bfcl_types_map_as_gorilla_to_openapi() {
    for (bfcl_type, json_type) in [
        ("dict", "object"),
        ("float", "number"),
        ("double", "number"),
        ("tuple", "array"),
        ("list", "array"),
        ("long", "integer"),
        ("Bigint", "integer"),
        ("char", "string"),
        ("String", "string"),
        ("bool", "boolean"),
        ("Boolean", "boolean"),
        ("HashMap", "object"),
        ("ArrayList", "array"),
    ] {
        let (s, notes) = param(json!({"type": bfcl_type, "description": "x"}));
        assert_eq!(s["type"], json_type, "{bfcl_type}: {s}");
        assert_eq!(s["description"], "x");
        assert!(notes.is_empty(), "{bfcl_type}: {notes:?}");
    }
}

#[test]
fn bfcl_any_unknown_and_set_are_noted() {
    let (s, notes) = param(json!({"type": "any", "description": "x"}));
    assert_eq!(s, json!({"description": "x"}));
    assert!(
        has(
            &notes,
            "/parameters/properties/p/type: `any` imported as any value"
        ),
        "{notes:?}"
    );
    for unknown in ["", "Object"] {
        let (s, notes) = param(json!({"type": unknown}));
        assert_eq!(s, json!({"type": "string"}));
        assert!(
            has(&notes, "/parameters/properties/p/type: unknown type"),
            "{notes:?}"
        );
    }
    let (s, notes) = param(json!({"type": "Set", "items": {"type": "String"}}));
    assert_eq!(
        s,
        json!({"type": "array", "uniqueItems": true, "items": {"type": "string"}})
    );
    assert!(has(&notes, "/parameters/properties/p/type: Java `Set`"));
}

#[test]
fn bfcl_nested_objects_and_items_convert_recursively() {
    let (s, notes) = param(json!({"type": "array", "items": {"type": "dict",
        "properties": {"x": {"type": "float"}, "tags": {"type": "tuple", "items": {"type": "any"}}},
        "required": ["x"]}}));
    assert_eq!(
        s,
        json!({"type": "array", "items": {"type": "object",
            "properties": {"x": {"type": "number"}, "tags": {"type": "array", "items": {}}},
            "required": ["x"]}})
    );
    assert!(has(
        &notes,
        "/parameters/properties/p/items/properties/tags/items/type: `any`"
    ));
    // A dict without properties is an open dictionary.
    let (s, _) = param(json!({"type": "dict", "description": "kv"}));
    assert_eq!(
        s,
        json!({"type": "object", "description": "kv", "additionalProperties": true})
    );
    // Required keys described only in prose are declared.
    let (s, notes) = param(json!({"type": "dict", "required": ["adults", "children"]}));
    assert_eq!(s["properties"], json!({"adults": {}, "children": {}}));
    assert_eq!(s["required"], json!(["adults", "children"]));
    assert!(has(
        &notes,
        "/parameters/properties/p/required: `adults` is required"
    ));
}

#[test]
fn bfcl_defaults_and_optional_flags_make_parameters_optional() {
    let t = bfcl(
        json!({"name": "f", "description": "d", "parameters": {"type": "dict",
        "properties": {
            "a": {"type": "integer", "default": 3},
            "b": {"type": "string", "optional": "True"},
            "c": {"type": "string", "optional": true},
            "d": {"type": "string", "optional": false},
            "e": {"type": "string"},
            "f": {"type": "string"}},
        "required": ["a", "b", "d", "e", "f"], "optional": ["f"]}}),
    );
    assert_eq!(t.input_schema["required"], json!(["d", "e"]));
    assert_eq!(
        t.input_schema["properties"]["a"],
        json!({"type": "integer", "default": 3})
    );
    assert!(t.input_schema["properties"]["b"].get("optional").is_none());
    for n in [
        "`a` is optional: it has a `default`",
        "`b` is optional: flagged",
        "`f` is optional",
    ] {
        assert!(
            has(&t.notes, &format!("/parameters/required: {n}")),
            "{n}: {:?}",
            t.notes
        );
    }
    // A `default` that is not a value of its schema is converted, or admitted beside the type.
    let (s, notes) = param(json!({"type": "boolean", "default": "False"}));
    assert_eq!(s["default"], false);
    assert!(has(
        &notes,
        "/parameters/properties/p/default: `\"False\"` converted"
    ));
    let (s, notes) = param(json!({"type": "integer", "description": "Y", "default": "5 years"}));
    assert_eq!(
        s,
        json!({"description": "Y", "default": "5 years",
            "anyOf": [{"type": "integer"}, {"enum": ["5 years"]}]})
    );
    assert!(has(
        &notes,
        "/parameters/properties/p/default: `\"5 years\"` is not a value"
    ));
    let (s, notes) = param(json!({"type": "array", "items": {"type": "string"}, "default": "[]"}));
    assert_eq!(s["default"], json!([]));
    assert_eq!(notes.len(), 2, "{notes:?}"); // converted, and optional
    // An array default written on the items belongs to the array.
    let (s, notes) = param(json!({"type": "array",
        "items": {"type": "string", "enum": ["a", "b"], "default": ["a"]}}));
    assert_eq!(
        s,
        json!({"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "default": ["a"]})
    );
    assert!(has(
        &notes,
        "/parameters/properties/p/items/default: an array default"
    ));
    // `null` is Python's `None`: a value of the parameter.
    let (s, notes) = param(json!({"type": "string", "enum": ["a"], "default": null}));
    assert_eq!(
        s,
        json!({"type": ["string", "null"], "enum": ["a", null], "default": null})
    );
    assert!(has(&notes, "/parameters/properties/p/default: `null`"));
    let (s, _) = param(json!({"type": "any", "default": null}));
    assert_eq!(s, json!({"default": null}));
}

#[test]
fn bfcl_enums_that_contradict_their_type_are_resolved_with_notes() {
    let (s, notes) = param(json!({"type": "string", "enum": ["a", "b"]}));
    assert_eq!(s, json!({"type": "string", "enum": ["a", "b"]}));
    assert!(notes.is_empty());
    let (s, notes) =
        param(json!({"type": "array", "items": {"type": "string"}, "enum": ["a", "b"]}));
    assert_eq!(
        s,
        json!({"type": "array", "items": {"type": "string", "enum": ["a", "b"]}})
    );
    assert!(has(
        &notes,
        "/parameters/properties/p/enum: the values are items"
    ));
    let (s, notes) = param(json!({"type": "integer", "enum": ["1", "2"]}));
    assert_eq!(s, json!({"type": "integer", "enum": [1, 2]}));
    assert!(has(
        &notes,
        "/parameters/properties/p/enum: `[\"1\",\"2\"]` converted"
    ));
    let (s, notes) = param(
        json!({"type": "boolean", "enum": ["True", "False", "dontcare"],
        "default": "dontcare", "description": "d"}),
    );
    assert_eq!(
        s,
        json!({"description": "d", "default": "dontcare", "anyOf": [
            {"type": "boolean", "enum": [true, false]}, {"enum": ["dontcare"]}]})
    );
    assert!(has(
        &notes,
        "/parameters/properties/p/enum: `[\"True\",\"False\",\"dontcare\"]` mixes"
    ));
    assert_eq!(notes.len(), 2, "{notes:?}"); // and optional: the default is one of the values
    let (s, notes) =
        param(json!({"type": "integer", "enum": ["Group A", "Group B"], "default": 1}));
    assert_eq!(
        s,
        json!({"default": 1, "anyOf": [{"type": "integer"}, {"enum": ["Group A", "Group B"]}]})
    );
    assert!(has(
        &notes,
        "/parameters/properties/p/enum: `[\"Group A\",\"Group B\"]` are not"
    ));
}

#[test]
fn bfcl_unknown_keys_response_and_root_default_are_noted() {
    let t = bfcl(
        json!({"name": "f", "description": "d", "response": {"type": "dict"},
        "parameters": {"type": "dict", "default": "location",
            "properties": {"p": {"type": "integer", "maximum": 400, "x-extra": 1}}}}),
    );
    assert_eq!(
        t.input_schema,
        json!({"type": "object", "properties": {"p": {"type": "integer", "maximum": 400}}})
    );
    for n in [
        "/response: the result schema is not imported",
        "/parameters/default: removed",
        "/parameters/properties/p/x-extra: removed",
    ] {
        assert!(has(&t.notes, n), "{n}: {:?}", t.notes);
    }
    // No parameters: an empty object root.
    let t = bfcl(json!({"name": "ping", "description": "d"}));
    assert_eq!(t.input_schema, json!({"type": "object", "properties": {}}));
}

#[test]
fn names_map_dots_and_break_on_anything_else() {
    let t = bfcl(
        json!({"name": "math.gcd", "description": "d", "parameters": {"type": "dict",
        "properties": {}}}),
    );
    assert_eq!(
        (t.name.as_str(), t.original_name.as_str()),
        ("math_gcd", "math.gcd")
    );
    assert!(has(&t.notes, "/name: `math.gcd` exported as `math_gcd`"));
    for (def, pointer, text) in [
        (
            json!({"name": "a b", "description": "d"}),
            "/name",
            "' ' at position 1",
        ),
        (json!({"name": "x".repeat(65)}), "/name", "65 characters"),
        (json!({"name": 5}), "/name", "must be a string"),
        (json!({"description": "d"}), "", "no `name`"),
        (json!([1]), "", "must be a JSON object"),
        (
            json!({"name": "f", "parameters": {"type": "dict", "properties": {"p": 5}}}),
            "/parameters/properties/p",
            "definition `f`: a schema must be an object",
        ),
        (
            json!({"name": "f", "parameters": {"type": "dict", "properties": []}}),
            "/parameters/properties",
            "must be an object",
        ),
        (
            json!({"name": "f", "parameters": {"type": "string"}}),
            "/parameters/type",
            "must be a `dict`",
        ),
    ] {
        let e = import_definition(DefinitionFormat::Bfcl, &def).unwrap_err();
        assert_eq!(e.pointer, pointer, "{def}: {e}");
        assert!(e.message.contains(text), "{def}: {e}");
    }
}

#[test]
fn json_schema_definitions_keep_their_schema() {
    let schema = json!({"type": "object", "properties": {"q": {"type": "string", "minLength": 1}},
        "required": ["q"], "additionalProperties": false});
    for key in ["parameters", "input_schema", "inputSchema"] {
        let t = import_definition(
            DefinitionFormat::JsonSchema,
            &json!({"name": "search", "description": "d", key: schema}),
        )
        .unwrap();
        assert_eq!(t.input_schema, schema, "{key}");
        assert!(t.notes.is_empty(), "{key}: {:?}", t.notes);
    }
    let t = import_definition(
        DefinitionFormat::JsonSchema,
        &json!({"type": "function", "function": {"name": "ping", "parameters": {"required": []}}}),
    )
    .unwrap();
    assert_eq!(
        t.input_schema,
        json!({"type": "object", "properties": {}, "required": []})
    );
    assert!(has(&t.notes, "/description: none given"));
    let e = import_definition(
        DefinitionFormat::JsonSchema,
        &json!({"type": "function", "function": {"name": "x", "inputSchema": {"type": "array"}}}),
    )
    .unwrap_err();
    assert_eq!(e.pointer, "/function/inputSchema/type");
    assert!(e.to_string().contains("definition `x`"), "{e}");
}

#[test]
fn documents_of_every_shape() {
    let def = |n: &str| json!({"name": n, "description": "d", "parameters": {"type": "object"}});
    let names = |text: &str| -> Vec<String> {
        import_document(DefinitionFormat::JsonSchema, text)
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect()
    };
    assert_eq!(names(&json!([def("a"), def("b")]).to_string()), ["a", "b"]);
    assert_eq!(names(&json!({"tools": [def("a")]}).to_string()), ["a"]);
    assert_eq!(names(&json!({"functions": [def("a")]}).to_string()), ["a"]);
    assert_eq!(names(&def("a").to_string()), ["a"]);
    let lines = format!(
        "{}\n\n{}\n{}\n",
        json!({"id": "simple_0", "question": [], "function": [def("a"), def("b.c")]}),
        json!({"id": "multi_turn_0", "question": [], "involved_classes": ["X"]}),
        def("d"),
    );
    assert_eq!(names(&lines), ["a", "b_c", "d"]);
    let e =
        import_document(DefinitionFormat::Bfcl, &format!("{}\n{{oops\n", def("a"))).unwrap_err();
    assert_eq!(e.pointer, "/1");
    assert!(
        e.message.contains("line 2 is not JSON") && e.message.contains("at column 2"),
        "{e}"
    );
    // A pretty-printed document with a mistake on line 3: the whole document's error.
    let e = import_document(
        DefinitionFormat::JsonSchema,
        "[\n  {\"name\": \"a\"},\n  {\"name\": \"b\",},\n]\n",
    )
    .unwrap_err();
    assert_eq!(e.pointer, "");
    assert!(
        e.message.starts_with("the document is not JSON: ") && e.message.contains("line 3"),
        "{e}"
    );
    let bad = json!({"id": "x", "question": [], "function": [def("a"), {"name": "a b"}]});
    let e = import_document(DefinitionFormat::Bfcl, &format!("{bad}\n{bad}")).unwrap_err();
    assert_eq!(e.pointer, "/0/function/1/name", "{e}");
    let e = import_document(DefinitionFormat::Bfcl, "{\"foo\": 1}").unwrap_err();
    assert!(e.message.contains("neither a definition"), "{e}");
}

#[test]
fn duplicates_collapse_or_get_numbered() {
    let def = |n: &str, d: &str| {
        json!({"name": n, "description": d, "parameters": {"type": "dict",
        "properties": {}}})
    };
    let doc = [
        json!({"id": "e_0", "question": [], "function": [def("f.g", "one"), def("h", "x")]}),
        json!({"id": "e_1", "question": [], "function": [def("f.g", "one")]}),
        json!({"id": "e_2", "question": [], "function": [def("f.g", "two"), def("f_g", "one")]}),
        json!({"id": "e_3", "question": [], "function": [def("f.g", "two"), def("f_g_2", "z")]}),
    ]
    .map(|l| l.to_string())
    .join("\n");
    let tools = import_document(DefinitionFormat::Bfcl, &doc).unwrap();
    let got: Vec<(&str, &str, &str)> = tools
        .iter()
        .map(|t| {
            (
                t.name.as_str(),
                t.original_name.as_str(),
                t.description.as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("f_g", "f.g", "one"),
            ("h", "h", "x"),
            ("f_g_2", "f.g", "two"),
            ("f_g_3", "f_g", "one"),
            ("f_g_2_2", "f_g_2", "z"),
        ]
    );
    assert!(
        tools[2]
            .notes
            .contains(&"/name: renamed `f_g` to `f_g_2`: an earlier, different definition (at /0/function/0) has that name".to_string()),
        "{:?}",
        tools[2].notes
    );
    // The same document gives the same result.
    assert_eq!(
        import_document(DefinitionFormat::Bfcl, &doc).unwrap(),
        tools
    );
    // A long name keeps 64 characters with its suffix.
    let long = "n".repeat(64);
    let doc = json!([def(&long, "a"), def(&long, "b")]).to_string();
    let tools = import_document(DefinitionFormat::Bfcl, &doc).unwrap();
    assert_eq!(tools[1].name, format!("{}_2", "n".repeat(62)));
}

#[test]
fn mcp_shapes_and_their_mistakes() {
    // A saved `tools/list` response, whole.
    let saved = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [
        {"name": "a", "title": "Top", "annotations": {"title": "Inner", "readOnlyHint": true},
         "inputSchema": {"type": "object", "properties": {}}}]}});
    let tools = import_document(DefinitionFormat::JsonSchema, &saved.to_string()).unwrap();
    assert_eq!(tools[0].location, "/result/tools/0");
    // MCP: the tool's `title` takes precedence over `annotations.title`.
    assert_eq!(
        tools[0].annotations,
        Some(json!({"title": "Top", "readOnlyHint": true}))
    );
    let bad = |def: Value| import_definition(DefinitionFormat::JsonSchema, &def).unwrap_err();
    let e = bad(json!({"name": "t", "annotations": "readonly"}));
    assert_eq!(e.pointer, "/annotations", "{e}");
    assert!(e.message.contains("must be an object"), "{e}");
    let e = bad(json!({"name": "t", "title": 7}));
    assert_eq!(e.pointer, "/title", "{e}");
    let e = bad(json!({"name": "t", "parameters": {"type": "object"},
                        "inputSchema": {"type": "object", "properties": {"q": {"type": "integer"}}}}));
    assert_eq!(e.pointer, "/inputSchema", "{e}");
    assert!(
        e.message
            .contains("two different input schemas, `parameters` and `inputSchema`"),
        "{e}"
    );
    // The same schema twice is one schema.
    let same = json!({"type": "object", "properties": {}});
    import_definition(
        DefinitionFormat::JsonSchema,
        &json!({"name": "t", "parameters": same, "input_schema": same}),
    )
    .unwrap();
}

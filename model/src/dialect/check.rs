//! The rules each dialect's definitions must obey, checked on an exported definition: one checker
//! for the unit tests, the integration tests and the BFCL corpus test.
//!
//! [`check`] returns every [`Violation`] (a JSON pointer into the definition and the rule broken);
//! an empty list means the definition obeys every rule below. The rules are written from the
//! providers' own documents, not from what the exporters do:
//!
//! - **Every dialect**: the name matches `^[a-zA-Z0-9_-]{1,64}$` (OpenAI API reference, function
//!   `name`: "Must be a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum length of
//!   64"; Anthropic tool `name`: `^[a-zA-Z0-9_-]{1,64}$`; MCP is laxer, but toolgate exports one
//!   name to every consumer, see [`crate::dialect`]); only the keys the format defines; the input
//!   schema is an object root (`type: "object"`, `properties` an object of schemas, `required`
//!   naming properties), and every schema in it is well formed for JSON Schema 2020-12
//!   (Validation §6.1.1 `type` is a name among `string`, `number`, `integer`, `boolean`,
//!   `object`, `array`, `null` or a list of them; §6.1.2 `enum` an array; §6.5.3 `required` an
//!   array of unique strings; Core §10 subschemas are objects or booleans, `anyOf` / `allOf` /
//!   `oneOf` non-empty arrays of them; §8.2.3.1 a `$ref` resolves, here `#` or `#/$defs/NAME`).
//! - **MCP** (specification 2025-06-18, "Server features / Tools", and the `Tool` definition of
//!   `schema/2025-06-18/schema.json`): `name` and `inputSchema` required; `title`,
//!   `description`, `outputSchema`, `annotations`, `_meta` allowed; both schemas object roots;
//!   `$schema`, when present, is 2020-12 (the specification's default dialect); `annotations` only
//!   `ToolAnnotations` fields (`title`, `readOnlyHint`, `destructiveHint`, `idempotentHint`,
//!   `openWorldHint`).
//! - **OpenAI** (API reference, Responses API `tools` → "Function"): `type: "function"`, `name`,
//!   `parameters` required; `description`, `strict` (boolean; always present in
//!   `openai-strict`) allowed; no `$schema` in `parameters`. With `"strict": true`, the
//!   "Structured Outputs" → "Supported schemas" rules ([`super::openai_strict`]): the root is an
//!   object, not `anyOf`; only the supported keywords (`type`, `properties`, `required`,
//!   `additionalProperties`, `items`, `enum`, `anyOf`, `$ref`, `$defs`, `description`, `title`,
//!   `pattern`, `format`, `multipleOf`, `minimum`, `maximum`, `exclusiveMinimum`,
//!   `exclusiveMaximum`, `minItems`, `maxItems`) and string formats (`date-time`, `time`, `date`,
//!   `duration`, `email`, `hostname`, `ipv4`, `ipv6`, `uuid`); every schema has a `type`,
//!   `enum`, `anyOf` or `$ref`; every object sets `additionalProperties: false` and lists all its
//!   properties (and only those) in `required`; at most 5000 properties, 10 levels of nesting
//!   and 1000 `enum` values. A definition with `"strict": false` (the documented fallback) obeys
//!   only the non-strict rules.
//! - **Anthropic** (API reference, Messages → `tools`, custom tool): `name`, `input_schema`
//!   required; `type` (absent or `"custom"`), `description`, `cache_control` allowed;
//!   `input_schema` an object root.
//! - **Gemini** (API reference, `FunctionDeclaration` and `Schema`, "a select subset of an
//!   OpenAPI 3.0 schema object"): `name` and `description` required, `parameters` optional (a
//!   tool without arguments has none); the name starts with a letter or `_` (the API's
//!   `Invalid function name. Must start with a letter or an underscore`, cline/cline#7339);
//!   `parameters` an object root with non-empty `properties`
//!   (`properties: should be non-empty for OBJECT type`, agno-agi/agno#2112); only `Schema`
//!   fields (`type`, `format`, `title`, `description`, `nullable`, `enum`, `maxItems`,
//!   `minItems`, `properties`, `required`, `minProperties`, `maxProperties`, `minLength`,
//!   `maxLength`, `pattern`, `example`, `anyOf`, `propertyOrdering`, `default`, `items`,
//!   `minimum`, `maximum`; anything else is `Unknown name ... Cannot find field`,
//!   nanbingxyz/5ire#42); `type` a single name among `STRING`, `NUMBER`, `INTEGER`, `BOOLEAN`,
//!   `ARRAY`, `OBJECT` (any case); `enum` only strings on `type: string` (decolua/9router#359);
//!   `format` only `float` / `double` on numbers, `int32` / `int64` on integers, `enum` /
//!   `date-time` on strings (the `Schema.format` field's list); an `ARRAY` has `items`
//!   (`items: missing field`, crmne/ruby_llm#480); every `required` name is a property
//!   (`required[0]: property is not defined`, moltis-org/moltis#849).

use std::fmt;

use crate::config::location::escape;
use serde_json::{Map, Value};

use super::Dialect;

/// One rule a definition breaks.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Violation {
    /// JSON pointer (RFC 6901) into the definition, `""` for the definition itself.
    pub pointer: String,
    /// The rule broken, with what was found.
    pub rule: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() {
            "/"
        } else {
            &self.pointer
        };
        write!(f, "{at}: {}", self.rule)
    }
}

/// Every rule of `dialect` that `definition` (one exported tool definition) breaks; empty when it
/// obeys them all. See the module documentation for the rules and their sources.
pub fn check(dialect: Dialect, definition: &Value) -> Vec<Violation> {
    let mut c = Checker::default();
    let Some(def) = definition.as_object() else {
        c.push(
            "",
            format!("a definition must be a JSON object, got `{definition}`"),
        );
        return c.out;
    };
    match dialect {
        Dialect::Mcp => c.mcp(def),
        Dialect::OpenAi | Dialect::OpenAiStrict => c.openai(def, dialect),
        Dialect::Anthropic => c.anthropic(def),
        Dialect::Gemini => c.gemini(def),
    }
    c.out
}

/// JSON Schema 2020-12 Validation §6.1.1: the names `type` may take.
const JSON_TYPES: &str = "string number integer boolean object array null";
/// OpenAI "Supported schemas": the keywords strict mode accepts.
const STRICT_KEYWORDS: &str = "\
    type properties required additionalProperties items enum anyOf $ref $defs description \
    title pattern format multipleOf minimum maximum exclusiveMinimum exclusiveMaximum minItems \
    maxItems";
/// OpenAI "Supported schemas": the string formats strict mode accepts.
const STRICT_FORMATS: &str = "date-time time date duration email hostname ipv4 ipv6 uuid";
/// Gemini API reference, `Schema`: its fields.
const GEMINI_KEYWORDS: &str = "\
    type format title description nullable enum maxItems minItems properties required \
    minProperties maxProperties minLength maxLength pattern example anyOf propertyOrdering \
    default items minimum maximum";
/// Gemini API reference, `Type` (any case).
const GEMINI_TYPES: &str = "string number integer boolean array object";

/// Whether `word` is one of the whitespace-separated words of `list`.
fn listed(list: &str, word: &str) -> bool {
    list.split_whitespace().any(|w| w == word)
}

#[derive(Default)]
struct Checker {
    out: Vec<Violation>,
}

impl Checker {
    fn push(&mut self, pointer: &str, rule: impl Into<String>) {
        self.out.push(Violation {
            pointer: pointer.to_string(),
            rule: rule.into(),
        });
    }

    /// The keys of a definition: each of `required` present, none outside `allowed` (both
    /// whitespace-separated lists).
    fn keys(&mut self, def: &Map<String, Value>, required: &str, allowed: &str) {
        for r in required.split_whitespace() {
            if !def.contains_key(r) {
                self.push("", format!("missing required `{r}`"));
            }
        }
        for k in def.keys() {
            if !listed(allowed, k) {
                self.push(&format!("/{}", escape(k)), format!("unexpected key `{k}`"));
            }
        }
    }

    fn name(&mut self, def: &Map<String, Value>) {
        let Some(name) = def.get("name") else { return };
        let ok = name.as_str().is_some_and(|n| {
            (1..=64).contains(&n.chars().count())
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        });
        if !ok {
            self.push(
                "/name",
                format!("name {name} does not match ^[a-zA-Z0-9_-]{{1,64}}$"),
            );
        }
    }

    fn strings(&mut self, def: &Map<String, Value>, keys: &[&str]) {
        for k in keys {
            if def.get(*k).is_some_and(|v| !v.is_string()) {
                self.push(&format!("/{k}"), format!("`{k}` is not a string"));
            }
        }
    }

    /// An object-root schema at `at`: `type: "object"`, `properties` an object of schema
    /// objects, `required` naming properties.
    fn object_root(&mut self, at: &str, schema: &Value) {
        let Some(m) = schema.as_object() else {
            self.push(
                at,
                format!("the schema must be a JSON object, got `{schema}`"),
            );
            return;
        };
        if m.get("type").and_then(Value::as_str) != Some("object") {
            let t = m.get("type").unwrap_or(&Value::Null);
            self.push(at, format!("`type` must be \"object\", got {t}"));
        }
        match m.get("properties") {
            Some(Value::Object(ps)) => {
                for (k, v) in ps {
                    if !v.is_object() {
                        let p = format!("{at}/properties/{}", escape(k));
                        self.push(&p, format!("property `{k}` is not a schema object"));
                    }
                }
                if let Some(Value::Array(names)) = m.get("required") {
                    for (i, n) in names.iter().enumerate() {
                        if !n.as_str().is_some_and(|n| ps.contains_key(n)) {
                            let p = format!("{at}/required/{i}");
                            self.push(&p, format!("required {n} is not a property"));
                        }
                    }
                }
            }
            Some(other) => self.push(at, format!("`properties` is not an object: {other}")),
            None => {}
        }
    }

    /// JSON Schema 2020-12 well-formedness of every schema under `root` (at `at`).
    fn well_formed(&mut self, at: &str, root: &Value) {
        let defs = root.get("$defs").and_then(Value::as_object);
        each_schema(root, at, &mut |m, p| {
            match m.get("type") {
                None => {}
                Some(Value::String(t)) if listed(JSON_TYPES, t) => {}
                Some(Value::Array(ts))
                    if !ts.is_empty()
                        && ts.iter().enumerate().all(|(i, t)| {
                            t.as_str().is_some_and(|t| listed(JSON_TYPES, t))
                                && !ts[..i].contains(t)
                        }) => {}
                Some(t) => self.push(p, format!("`type: {t}` is not a JSON Schema type")),
            }
            if m.get("enum").is_some_and(|e| !e.is_array()) {
                self.push(p, "`enum` must be an array");
            }
            if let Some(r) = m.get("required") {
                let ok = r.as_array().is_some_and(|a| {
                    a.iter()
                        .enumerate()
                        .all(|(i, n)| n.is_string() && !a[..i].contains(n))
                });
                if !ok {
                    self.push(
                        p,
                        format!("`required` must be an array of unique strings: {r}"),
                    );
                }
            }
            for k in ["properties", "$defs", "patternProperties"] {
                match m.get(k) {
                    None | Some(Value::Object(_)) => {}
                    Some(_) => self.push(p, format!("`{k}` must be an object of schemas")),
                }
            }
            for k in ["anyOf", "allOf", "oneOf", "prefixItems"] {
                if m.get(k)
                    .is_some_and(|v| v.as_array().is_none_or(Vec::is_empty))
                {
                    self.push(p, format!("`{k}` must be a non-empty array of schemas"));
                }
            }
            for (c, v) in children(m, p) {
                if !(v.is_object() || v.is_boolean()) {
                    self.push(
                        &c,
                        "a subschema must be an object or a boolean (Core §4.3.1)",
                    );
                }
            }
            if m.get("items").is_some_and(Value::is_array) {
                self.push(
                    p,
                    "`items` must be one schema (a list is `prefixItems` in 2020-12)",
                );
            }
            for k in ["description", "title", "pattern", "format"] {
                if m.get(k).is_some_and(|v| !v.is_string()) {
                    self.push(p, format!("`{k}` must be a string"));
                }
            }
            if let Some(r) = m.get("$ref") {
                let ok = r.as_str().is_some_and(|r| {
                    r == "#"
                        || r.strip_prefix("#/$defs/")
                            .is_some_and(|n| defs.is_some_and(|d| d.contains_key(n)))
                });
                if !ok {
                    self.push(p, format!("`$ref: {r}` does not resolve in this document"));
                }
            }
        });
    }

    fn mcp(&mut self, def: &Map<String, Value>) {
        let allowed = "name title description inputSchema outputSchema annotations _meta";
        self.keys(def, "name inputSchema", allowed);
        if def.get("name").is_some_and(|n| !n.is_string()) {
            self.push("/name", "`name` is not a string");
        }
        self.strings(def, &["title", "description"]);
        self.name(def);
        for key in ["inputSchema", "outputSchema"] {
            if let Some(schema) = def.get(key) {
                let at = format!("/{key}");
                self.object_root(&at, schema);
                self.well_formed(&at, schema);
                if let Some(uri) = schema.get("$schema")
                    && uri != "https://json-schema.org/draft/2020-12/schema"
                {
                    self.push(&at, format!("`$schema` is {uri}, not 2020-12"));
                }
            }
        }
        let Some(a) = def.get("annotations") else {
            return;
        };
        let Some(a) = a.as_object() else {
            self.push("/annotations", "`annotations` is not an object");
            return;
        };
        for (k, v) in a {
            let ok = match k.as_str() {
                "title" => v.is_string(),
                "readOnlyHint" | "destructiveHint" | "idempotentHint" | "openWorldHint" => {
                    v.is_boolean()
                }
                _ => false,
            };
            if !ok {
                let p = format!("/annotations/{}", escape(k));
                self.push(
                    &p,
                    format!("`{k}: {v}` is not an MCP ToolAnnotations field"),
                );
            }
        }
    }

    fn openai(&mut self, def: &Map<String, Value>, dialect: Dialect) {
        let required = match dialect {
            Dialect::OpenAiStrict => "type name parameters strict",
            _ => "type name parameters",
        };
        self.keys(def, required, "type name description parameters strict");
        if def.get("type").is_some_and(|t| t != "function") {
            self.push(
                "/type",
                format!("`type` must be \"function\", got {}", def["type"]),
            );
        }
        self.name(def);
        self.strings(def, &["description"]);
        if def.get("strict").is_some_and(|v| !v.is_boolean()) {
            self.push("/strict", "`strict` is not a boolean");
        }
        let Some(params) = def.get("parameters") else {
            return;
        };
        self.object_root("/parameters", params);
        self.well_formed("/parameters", params);
        if params.get("$schema").is_some() {
            self.push("/parameters", "`$schema` is not allowed in `parameters`");
        }
        if def.get("strict") == Some(&Value::Bool(true)) {
            self.strict(params);
        }
    }

    /// OpenAI "Structured Outputs" → "Supported schemas".
    fn strict(&mut self, root: &Value) {
        const AT: &str = "/parameters";
        if root.get("anyOf").is_some() {
            self.push(AT, "strict: the root must be an object, not `anyOf`");
        }
        let mut props = 0usize;
        each_schema(root, AT, &mut |m, p| {
            for k in m.keys() {
                if !listed(STRICT_KEYWORDS, k) {
                    self.push(p, format!("strict: `{k}` is not supported"));
                }
            }
            if !["type", "enum", "anyOf", "$ref"]
                .iter()
                .any(|k| m.contains_key(*k))
            {
                self.push(
                    p,
                    "strict: every schema needs `type`, `enum`, `anyOf` or `$ref`",
                );
            }
            if let Some(f) = m.get("format").and_then(Value::as_str)
                && !listed(STRICT_FORMATS, f)
            {
                self.push(p, format!("strict: format `{f}` is not supported"));
            }
            if m.get("enum")
                .and_then(Value::as_array)
                .is_some_and(|e| e.len() > 1000)
            {
                self.push(p, "strict: more than 1000 `enum` values");
            }
            let is_object = m.contains_key("properties") || has_type(m, "object");
            if !is_object {
                return;
            }
            if m.get("additionalProperties") != Some(&Value::Bool(false)) {
                self.push(p, "strict: objects must set `additionalProperties: false`");
            }
            let names: Vec<&String> = match m.get("properties") {
                Some(Value::Object(ps)) => ps.keys().collect(),
                _ => Vec::new(),
            };
            props += names.len();
            let required: Vec<&str> = match m.get("required") {
                Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            for n in &names {
                if !required.contains(&n.as_str()) {
                    self.push(p, format!("strict: property `{n}` is not in `required`"));
                }
            }
            for r in required {
                if !names.iter().any(|n| *n == r) {
                    self.push(p, format!("strict: required `{r}` is not a property"));
                }
            }
        });
        if props > 5000 {
            self.push(AT, format!("strict: {props} properties (at most 5000)"));
        }
        let depth = depth(root);
        if depth > 10 {
            self.push(
                AT,
                format!("strict: {depth} levels of nesting (at most 10)"),
            );
        }
    }

    fn anthropic(&mut self, def: &Map<String, Value>) {
        let allowed = "type name description input_schema cache_control";
        self.keys(def, "name input_schema", allowed);
        if def.get("type").is_some_and(|t| t != "custom") {
            self.push("/type", "`type` must be absent or \"custom\"");
        }
        self.name(def);
        self.strings(def, &["description"]);
        if let Some(schema) = def.get("input_schema") {
            self.object_root("/input_schema", schema);
            self.well_formed("/input_schema", schema);
        }
    }

    fn gemini(&mut self, def: &Map<String, Value>) {
        self.keys(def, "name description", "name description parameters");
        self.name(def);
        self.strings(def, &["description"]);
        if let Some(first) = def
            .get("name")
            .and_then(Value::as_str)
            .and_then(|n| n.chars().next())
            && !(first.is_ascii_alphabetic() || first == '_')
        {
            self.push(
                "/name",
                "a Gemini function name must start with a letter or `_`",
            );
        }
        let Some(params) = def.get("parameters") else {
            return;
        };
        const AT: &str = "/parameters";
        self.object_root(AT, params);
        if params
            .get("properties")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty)
        {
            self.push(
                AT,
                "`properties` must be non-empty for an OBJECT (omit `parameters`)",
            );
        }
        each_schema(params, AT, &mut |m, p| self.gemini_schema(m, p));
    }

    fn gemini_schema(&mut self, m: &Map<String, Value>, p: &str) {
        for k in m.keys() {
            if !listed(GEMINI_KEYWORDS, k) {
                self.push(p, format!("`{k}` is not a field of Gemini's Schema"));
            }
        }
        let ty = match m.get("type") {
            None => None,
            Some(Value::String(t)) if listed(GEMINI_TYPES, &t.to_ascii_lowercase()) => {
                Some(t.to_ascii_lowercase())
            }
            Some(t) => {
                self.push(p, format!("`type: {t}` is not a single Gemini type"));
                None
            }
        };
        if let Some(e) = m.get("enum") {
            let strings = e.as_array().is_some_and(|a| a.iter().all(Value::is_string));
            if !strings || ty.as_deref() != Some("string") {
                self.push(
                    p,
                    "`enum` is only allowed with string values on `type: string`",
                );
            }
        }
        if let Some(f) = m.get("format") {
            let allowed: &[&str] = match ty.as_deref() {
                Some("number") => &["float", "double"],
                Some("integer") => &["int32", "int64"],
                Some("string") => &["enum", "date-time"],
                _ => &[],
            };
            match f.as_str() {
                Some(f) if allowed.contains(&f) => {}
                Some(f) => self.push(p, format!("`format: {f}` is not supported on this type")),
                None => self.push(p, format!("`format: {f}` is not a string")),
            }
        }
        if ty.as_deref() == Some("array") && !m.contains_key("items") {
            self.push(p, "an ARRAY needs `items`");
        }
        if let Some(Value::Array(req)) = m.get("required") {
            let props = m.get("properties").and_then(Value::as_object);
            for (i, n) in req.iter().enumerate() {
                if !n
                    .as_str()
                    .is_some_and(|n| props.is_some_and(|ps| ps.contains_key(n)))
                {
                    let at = format!("{p}/required/{i}");
                    self.push(&at, format!("required {n} is not a property"));
                }
            }
        }
    }
}

fn has_type(m: &Map<String, Value>, t: &str) -> bool {
    match m.get("type") {
        Some(Value::String(s)) => s == t,
        Some(Value::Array(a)) => a.iter().any(|x| x == t),
        _ => false,
    }
}

/// Levels of object nesting (schemas with `properties`) on the deepest path.
fn depth(v: &Value) -> usize {
    let own = usize::from(v.get("properties").is_some());
    let inner = match v {
        Value::Object(m) => m.values().map(depth).max().unwrap_or(0),
        Value::Array(a) => a.iter().map(depth).max().unwrap_or(0),
        _ => 0,
    };
    own + inner
}

/// JSON Schema 2020-12 Core §10: the keywords whose value is one subschema, those whose value
/// maps names to subschemas, and those whose value lists subschemas.
const ONE: &str = "\
    items additionalProperties not if then else contains propertyNames unevaluatedItems \
    unevaluatedProperties";
const MAPS: &str = "properties $defs patternProperties dependentSchemas";
const LISTS: &str = "anyOf oneOf allOf prefixItems";

/// The values of `m` (a schema at `ptr`) in subschema positions, with their pointers.
fn children<'a>(m: &'a Map<String, Value>, ptr: &str) -> Vec<(String, &'a Value)> {
    let mut out = Vec::new();
    for (k, c) in m {
        match c {
            Value::Object(ps) if listed(MAPS, k) => {
                out.extend(
                    ps.iter()
                        .map(|(n, s)| (format!("{ptr}/{k}/{}", escape(n)), s)),
                );
            }
            Value::Array(a) if listed(LISTS, k) || k == "items" => {
                out.extend(
                    a.iter()
                        .enumerate()
                        .map(|(i, s)| (format!("{ptr}/{k}/{i}"), s)),
                );
            }
            _ if listed(ONE, k) => out.push((format!("{ptr}/{k}"), c)),
            _ => {}
        }
    }
    out
}

/// Calls `f` on every schema object under `v` (including `v`) with its pointer.
fn each_schema(v: &Value, ptr: &str, f: &mut dyn FnMut(&Map<String, Value>, &str)) {
    let Value::Object(m) = v else { return };
    f(m, ptr);
    for (at, c) in children(m, ptr) {
        each_schema(c, &at, f);
    }
}

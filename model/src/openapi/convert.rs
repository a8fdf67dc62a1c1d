//! The conversion driver: every path × method of the document, in document order, to a tool or
//! a [`Skipped`] entry; then adapters, then the name-uniqueness check.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::names::{derived, path_matches, sanitize, shorten};
use super::operation::OpContext;
use super::refs::{self, escape};
use super::schema::Schemas;
use super::{
    Conversion, ConvertOptions, Document, OpenApiError, Operation, OperationFilter, Server,
    Skipped, Warning, adapters, parse, security, servers,
};

/// The methods of a Path Item (OAS 3.0 §4.7.9 / 3.1 §4.8.9), plus OAS 3.2's `query`.
pub(crate) const METHODS: [&str; 9] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace", "query",
];

fn warning(code: &str, pointer: &str, message: impl Into<String>) -> Warning {
    Warning {
        code: code.to_string(),
        pointer: pointer.to_string(),
        message: message.into(),
    }
}

fn matches(f: &OperationFilter, op_id: Option<&str>, tags: &[String], path: &str) -> bool {
    op_id.is_some_and(|id| f.operations.iter().any(|o| o == id))
        || tags.iter().any(|t| f.tags.contains(t))
        || f.paths.iter().any(|g| path_matches(g, path))
}

#[allow(clippy::too_many_lines)] // one loop over the document
pub(crate) fn run(doc: &Document, options: &ConvertOptions) -> Result<Conversion, OpenApiError> {
    let root = &doc.root;
    let openapi = parse::check_version(root, &doc.origin)?;
    let v31 = !openapi.starts_with("3.0");
    let text = |p: &str| {
        root.pointer(p)
            .map(|v| match v {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            })
            .unwrap_or_default()
    };
    let mut servers = servers::servers(root.get("servers"));
    if servers.is_empty() {
        servers.push(Server {
            url: "/".into(),
            description: None,
            variables: Default::default(),
        });
    }
    let schemes = security::security_schemes(root);
    let doc_security = root
        .get("security")
        .map(security::security)
        .unwrap_or_default();
    let mut schemas = Schemas::new(root, v31);
    let mut ctx = OpContext {
        root,
        schemas: &mut schemas,
        schemes: &schemes,
        max_output: options.max_output_schema_bytes,
        xml_wrapped_default: super::xml::wrapped_by_default(root),
    };
    let mut out = Conversion {
        title: text("/info/title"),
        version: text("/info/version"),
        openapi,
        servers,
        security_schemes: schemes.clone(),
        tools: Vec::new(),
        operations: 0,
        excluded: 0,
        skipped: Vec::new(),
        warnings: Vec::new(),
    };
    let mut loosened = 0usize;
    // `names:` keys of the "METHOD /path" form, the method upper-cased (`get /y` = `GET /y`).
    let route_names: HashMap<String, (&String, &String)> = options
        .names
        .iter()
        .filter_map(|(k, v)| {
            let (m, p) = k.split_once(' ')?;
            let p = p.trim_start();
            (p.starts_with('/') && METHODS.iter().any(|x| x.eq_ignore_ascii_case(m)))
                .then(|| (format!("{} {p}", m.to_ascii_uppercase()), (k, v)))
        })
        .collect();
    let mut used_names: HashSet<&str> = HashSet::new();
    let empty = serde_json::Map::new();
    let paths = root
        .get("paths")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for (path, item) in paths {
        if !path.starts_with('/') {
            continue;
        }
        let item_ptr = format!("#/paths/{}", escape(path));
        let (item, item_at) = match refs::follow(root, item, &item_ptr) {
            Ok(x) => x,
            Err(e) => {
                let e = super::schema::SchemaError::from_ref(e, &item_ptr);
                out.warnings.push(warning(
                    e.code,
                    &e.pointer,
                    format!("{}; the path's operations are not read", e.message),
                ));
                continue;
            }
        };
        let path_params = item
            .get("parameters")
            .map(|p| (p, format!("{item_at}/parameters")));
        let path_servers = servers::servers(item.get("servers"));
        for m in METHODS {
            let Some(op) = item.get(m).filter(|o| o.is_object()) else {
                continue;
            };
            out.operations += 1;
            let method = m.to_ascii_uppercase();
            let ptr = format!("{item_at}/{m}");
            let op_id = op
                .get("operationId")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty());
            let tags: Vec<String> = op
                .get("tags")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            let key = format!("{method} {path}");
            // `names:` by "METHOD /path" (method in any case) wins over the operationId key.
            let by_route = route_names.get(&key).copied();
            let by_id = op_id.and_then(|id| options.names.get_key_value(id));
            for (k, _) in by_route.iter().chain(by_id.iter()) {
                used_names.insert(k.as_str());
            }
            if let (Some((rk, rn)), Some((ik, iname))) = (by_route, by_id)
                && rn != iname
            {
                out.warnings.push(warning(
                    "W_NAMES_CONFLICT",
                    &ptr,
                    format!(
                        "`names:` gives {key} the name `{rn}` under \"{rk}\" and `{iname}` \
                         under \"{ik}\"; \"{rk}\" wins"
                    ),
                ));
            }
            let included =
                options.include.is_empty() || matches(&options.include, op_id, &tags, path);
            if !included || matches(&options.exclude, op_id, &tags, path) {
                out.excluded += 1;
                continue;
            }
            let chosen = by_route.or(by_id).map(|(_, n)| n);
            let name = if let Some(n) = chosen {
                if let Err(e) = crate::names::validate_tool_name(n) {
                    return Err(OpenApiError::Names {
                        origin: doc.origin.clone(),
                        message: format!("`names:` gives {key} the name `{n}`: {e}"),
                    });
                }
                if n.len() > options.max_name_len {
                    return Err(OpenApiError::Names {
                        origin: doc.origin.clone(),
                        message: format!(
                            "`names:` gives {key} the name `{n}`, longer than the {} characters \
                             left by the source prefix",
                            options.max_name_len
                        ),
                    });
                }
                n.clone()
            } else {
                let (base, original) = match op_id {
                    Some(id) => (sanitize(id), id.to_string()),
                    None => {
                        let d = derived(&method, path);
                        out.warnings.push(warning(
                            "W_NO_OPERATION_ID",
                            &ptr,
                            format!("{key} has no operationId: the tool is named `{d}`"),
                        ));
                        (d.clone(), d)
                    }
                };
                match shorten(&base, &original, options.max_name_len) {
                    Some(short) => {
                        out.warnings.push(warning(
                            "W_NAME_SHORTENED",
                            &ptr,
                            format!(
                                "`{base}` is longer than {} characters: the tool is named `{short}`",
                                options.max_name_len
                            ),
                        ));
                        short
                    }
                    None if base.is_empty() => "operation".to_string(),
                    None => base,
                }
            };
            let security = op
                .get("security")
                .map_or_else(|| doc_security.clone(), security::security);
            let parts = match ctx.convert(op, &ptr, path_params.clone(), &security) {
                Ok(p) => p,
                Err(e) => {
                    out.skipped.push(Skipped {
                        method,
                        path: path.clone(),
                        operation_id: op_id.map(str::to_string),
                        reason: warning(e.code, &e.pointer, e.message),
                    });
                    continue;
                }
            };
            if parts.loosened {
                loosened += 1;
            }
            out.warnings.extend(
                parts
                    .warnings
                    .into_iter()
                    .map(|(c, p, m)| warning(&c, &p, m)),
            );
            let summary = op
                .get("summary")
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim();
            let details = op
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim();
            let description = match (summary.is_empty(), details.is_empty()) {
                (false, false) => format!("{summary}\n\n{details}"),
                (false, true) => summary.to_string(),
                (true, false) => details.to_string(),
                (true, true) => key.clone(),
            };
            let mut op_servers = servers::servers(op.get("servers"));
            if op_servers.is_empty() {
                op_servers.clone_from(&path_servers);
            }
            out.tools.push(Operation {
                name,
                operation_id: op_id.map(str::to_string),
                method,
                path: path.clone(),
                pointer: ptr,
                description,
                tags,
                deprecated: op
                    .get("deprecated")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                input_schema: parts.input_schema,
                output_schema: parts.output_schema,
                output_wrapped: parts.output_wrapped,
                output_xml: parts.output_xml,
                parameters: parts.parameters,
                body: parts.body,
                security,
                servers: op_servers,
                accept: parts.accept,
                fills: Vec::new(),
            });
        }
    }
    for key in options.names.keys() {
        if !used_names.contains(key.as_str()) {
            out.warnings.push(warning(
                "W_NAMES_UNUSED",
                "#",
                format!(
                    "`names:` key \"{key}\" matches no operation (keys are an operationId or \
                     \"METHOD /path\" with the path template as the document writes it)"
                ),
            ));
        }
    }
    if ctx.xml_wrapped_default
        && out
            .tools
            .iter()
            .any(|t| t.output_xml.is_some() || t.body.as_ref().is_some_and(|b| b.xml.is_some()))
    {
        out.warnings.push(warning(
            "W_XML_WRAPPED_DEFAULT",
            "#",
            "the document marks arrays `xml.wrapped: false` and none `wrapped: true`: its \
             arrays without `wrapped` are read and written wrapped (one element around the \
             items)",
        ));
    }
    adapters::apply(&options.adapters, &mut out.tools, &mut out.warnings);
    let mut by_name: HashMap<&str, &Operation> = HashMap::new();
    for t in &out.tools {
        if let Some(prev) = by_name.insert(&t.name, t) {
            let describe = |o: &Operation| match &o.operation_id {
                Some(id) => format!("{} {} (operationId `{id}`)", o.method, o.path),
                None => format!("{} {}", o.method, o.path),
            };
            return Err(OpenApiError::Names {
                origin: doc.origin.clone(),
                message: format!(
                    "{} and {} both get the tool name `{}`; give one of them another name under \
                     `names:` (key: its operationId or \"{} {}\")",
                    describe(prev),
                    describe(t),
                    t.name,
                    t.method,
                    t.path
                ),
            });
        }
    }
    if loosened > 0 {
        out.warnings.push(warning(
            "W_OUTPUT_SCHEMA_LOOSENED",
            "#",
            format!(
                "the output schemas of {loosened} tools exceed {} bytes: the definitions beyond \
                 that accept any value",
                options.max_output_schema_bytes
            ),
        ));
    }
    Ok(out)
}

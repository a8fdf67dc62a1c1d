//! Servers (OAS 3.0 §4.7.5 / 3.1 §4.8.5 "Server Object", "Server Variable Object"): the `servers` lists of the document, a path item or an operation (the most specific
//! non-empty one applies), and [`Server::resolve`], which fills a URL's `{variables}`.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{Conversion, Server, ServerVariable};

/// `servers` (OAS 3.0 §4.7.5).
pub(crate) fn servers(v: Option<&Value>) -> Vec<Server> {
    let Some(a) = v.and_then(Value::as_array) else {
        return Vec::new();
    };
    a.iter()
        .filter_map(|s| {
            let url = s.get("url")?.as_str()?.to_string();
            let variables = s
                .get("variables")
                .and_then(Value::as_object)
                .map(|vars| {
                    vars.iter()
                        .map(|(k, v)| {
                            let text = |x: &Value| match x {
                                Value::String(s) => s.clone(),
                                other => other.to_string(),
                            };
                            (
                                k.clone(),
                                ServerVariable {
                                    default: v.get("default").map(text).unwrap_or_default(),
                                    allowed: v
                                        .get("enum")
                                        .and_then(Value::as_array)
                                        .map(|e| e.iter().map(text).collect())
                                        .unwrap_or_default(),
                                    description: v
                                        .get("description")
                                        .and_then(Value::as_str)
                                        .map(str::to_string),
                                },
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            Some(Server {
                url,
                description: s
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                variables,
            })
        })
        .collect()
}

impl Server {
    /// The URL with its variables filled: `values` first, else each variable's default.
    ///
    /// # Errors
    /// `server variable 'region' must be one of [eu, us]`; an unknown variable in `values`; a
    /// `{name}` with no variable.
    pub fn resolve(&self, values: &BTreeMap<String, String>) -> Result<String, String> {
        for k in values.keys() {
            if !self.variables.contains_key(k) {
                let known: Vec<&str> = self.variables.keys().map(String::as_str).collect();
                return Err(format!(
                    "unknown server variable '{k}' (the server `{}` has [{}])",
                    self.url,
                    known.join(", ")
                ));
            }
        }
        let mut url = self.url.clone();
        for (name, var) in &self.variables {
            let value = values.get(name).unwrap_or(&var.default);
            if !var.allowed.is_empty() && !var.allowed.contains(value) {
                return Err(format!(
                    "server variable '{name}' must be one of [{}]",
                    var.allowed.join(", ")
                ));
            }
            url = url.replace(&format!("{{{name}}}"), value);
        }
        if let Some(start) = url.find('{') {
            let rest = url.get(start + 1..).unwrap_or("");
            let name = rest.split('}').next().unwrap_or(rest);
            return Err(format!(
                "server URL `{}` uses `{{{name}}}`, which is not one of its variables",
                self.url
            ));
        }
        Ok(url)
    }
}

/// A server variable value that is not allowed, found before start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerVariableError {
    /// The variable.
    pub name: String,
    /// Whether the value came from the configuration (`server_variables`), else the default.
    pub configured: bool,
    /// `server variable 'region' must be one of [eu, us]`.
    pub message: String,
}

impl Conversion {
    /// The server-variable values the runtime would refuse, resolving the servers it uses as
    /// it does: the document's first server and each operation's first own server, each with
    /// only the configured `values` it has a variable for (else defaults). Call it only when
    /// the source has no `base_url` (then servers are not used). Names no server has are not
    /// reported here.
    pub fn server_variable_errors(
        &self,
        values: &BTreeMap<String, String>,
    ) -> Vec<ServerVariableError> {
        let mut out: Vec<ServerVariableError> = Vec::new();
        let chosen = self
            .servers
            .first()
            .into_iter()
            .chain(self.tools.iter().filter_map(|t| t.servers.first()));
        for server in chosen {
            for (name, var) in &server.variables {
                let (value, configured) = match values.get(name) {
                    Some(v) => (v, true),
                    None => (&var.default, false),
                };
                if var.allowed.is_empty() || var.allowed.contains(value) {
                    continue;
                }
                let e = ServerVariableError {
                    name: name.clone(),
                    configured,
                    message: format!(
                        "server variable '{name}' must be one of [{}]",
                        var.allowed.join(", ")
                    ),
                };
                if !out.contains(&e) {
                    out.push(e);
                }
            }
        }
        out
    }
}

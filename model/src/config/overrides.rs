//! `tools.overrides`: how one tool is presented to models, and the arguments toolgate fills in.
//!
//! ```yaml
//! tools:
//!   overrides:
//!     github.repos_get:                 # the tool's name inside toolgate
//!       name: get_repo                  # the name models see and call it by
//!       title: Get a repository
//!       description: Reads one repository of my-org.
//!       annotations: {read_only_hint: true}
//!       arguments:
//!         owner: {value: my-org}        # hidden: removed from the schema, always sent
//!         repo: {description: The repository's name, without the owner.}
//!         per_page: {default: 30}       # sent when the caller leaves it out
//! ```
//!
//! An override changes what a tool looks like (its name, title, description, annotations, the
//! descriptions of its arguments) and fills in arguments; the call still reaches the source
//! under the tool's original name. [`rewrite_schema`] makes the input schema models see,
//! [`fill_arguments`] the arguments a call is checked and sent with.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The override of one tool (`tools.overrides.<tool name>`). Every field is optional: an unset
/// one keeps what the source says.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolOverride {
    /// The name the tool is offered and called under instead of its own
    /// (`^[a-zA-Z0-9_-]{1,64}$`). The original name is no longer offered; `policy.tools` and
    /// `policy.rules` name the tool by this name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A human-readable title (MCP's `annotations.title`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The description models read, instead of the source's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MCP hints replacing the source's, each one that is set.
    #[serde(default, skip_serializing_if = "AnnotationOverride::is_empty")]
    pub annotations: AnnotationOverride,
    /// Per top-level argument (a property of the input schema), by its name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub arguments: BTreeMap<String, ArgumentOverride>,
}

/// MCP tool hints set by an override (`annotations:` of [`ToolOverride`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnnotationOverride {
    /// The tool does not change its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy or overwrite data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling it again with the same arguments has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool reaches entities outside a closed domain (the web, third parties).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl AnnotationOverride {
    /// Whether no hint is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// What an override does to one argument. `value` and `default` exclude each other.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArgumentOverride {
    /// The argument's description models read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A fixed value: the argument is hidden (taken out of the schema's `properties` and
    /// `required`) and this value is always sent; a caller who sends the argument anyway gets
    /// `invalid_arguments`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// Sent when the caller leaves the argument out (or sends `null`); shown as the schema's
    /// `default`, and the argument is no longer `required`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
}

impl ToolOverride {
    /// Whether the override fills in any argument (a call then goes through
    /// [`fill_arguments`]).
    pub fn fills_arguments(&self) -> bool {
        self.arguments
            .values()
            .any(|a| a.value.is_some() || a.default.is_some())
    }
}

/// Why an override does not fit its tool's input schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct OverrideError {
    /// The argument the problem is about, when it is about one (its key under `arguments`).
    pub argument: Option<String>,
    /// What is wrong.
    pub message: String,
}

/// The input schema models see, from the tool's own `schema` and its override's `arguments`:
/// a hidden argument (with a `value`) is removed from `properties` and `required`; a `default`
/// is set as the property's `default` and the argument removed from `required`; a
/// `description` replaces the property's. Anything else (`$defs`, other properties, nested
/// schemas) is left as it is.
///
/// # Errors
/// [`OverrideError`] naming the argument when the schema has no such top-level property, or
/// when an argument has both `value` and `default`.
pub fn rewrite_schema(
    schema: &Value,
    arguments: &BTreeMap<String, ArgumentOverride>,
) -> Result<Value, OverrideError> {
    let mut out = schema.clone();
    if arguments.is_empty() {
        return Ok(out);
    }
    let Some(root) = out.as_object_mut() else {
        return Err(OverrideError {
            argument: None,
            message: "the tool's input schema is not an object schema".into(),
        });
    };
    for (name, a) in arguments {
        let missing = || OverrideError {
            argument: Some(name.clone()),
            message: format!("argument `{name}` is not a property of the tool's input schema"),
        };
        if a.value.is_some() && a.default.is_some() {
            return Err(OverrideError {
                argument: Some(name.clone()),
                message: format!("argument `{name}` has both `value` and `default`"),
            });
        }
        let properties = root
            .get_mut("properties")
            .and_then(Value::as_object_mut)
            .ok_or_else(missing)?;
        if !properties.contains_key(name) {
            return Err(missing());
        }
        if a.value.is_some() {
            properties.shift_remove(name);
        } else if let Some(property) = properties.get_mut(name) {
            let property = as_object(property);
            if let Some(d) = &a.description {
                property.insert("description".into(), Value::String(d.clone()));
            }
            if let Some(d) = &a.default {
                property.insert("default".into(), d.clone());
            }
        }
        if (a.value.is_some() || a.default.is_some())
            && let Some(Value::Array(required)) = root.get_mut("required")
        {
            required.retain(|r| r.as_str() != Some(name));
        }
    }
    if matches!(root.get("required"), Some(Value::Array(r)) if r.is_empty()) {
        root.shift_remove("required");
    }
    Ok(out)
}

/// A property schema as an object (`true` becomes `{}`, `false` stays refusing as `{"not": {}}`).
fn as_object(property: &mut Value) -> &mut Map<String, Value> {
    if !property.is_object() {
        let replacement = match property {
            Value::Bool(false) => serde_json::json!({"not": {}}),
            _ => Value::Object(Map::new()),
        };
        *property = replacement;
    }
    match property {
        Value::Object(map) => map,
        _ => unreachable!("made an object above"),
    }
}

/// A schema and an instance to check the override's fixed values and defaults with, against
/// the tool's own `schema`: the schema keeps its `$defs` and keywords, its `properties` only
/// the overridden arguments, no `required`; the instance holds each value and default. `None`
/// when the override fills in nothing.
pub fn values_check(
    schema: &Value,
    arguments: &BTreeMap<String, ArgumentOverride>,
) -> Option<(Value, Value)> {
    let filled: Map<String, Value> = arguments
        .iter()
        .filter_map(|(k, a)| Some((k.clone(), a.value.clone().or(a.default.clone())?)))
        .collect();
    if filled.is_empty() {
        return None;
    }
    let mut check = schema.clone();
    let root = check.as_object_mut()?;
    root.shift_remove("required");
    let properties: Map<String, Value> = root
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| {
            p.iter()
                .filter(|(k, _)| filled.contains_key(*k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    root.insert("properties".into(), Value::Object(properties));
    Some((check, Value::Object(filled)))
}

/// Fills a call's `args` (a JSON object; `null` counts as `{}`) per the override's
/// `arguments`: each fixed value is set, each default set when the argument is absent or
/// `null`.
///
/// # Errors
/// A message for `invalid_arguments` when the caller sent a hidden argument (a model that was
/// never shown it made it up, and a caller who means another value must not be silently
/// overruled), or when `args` is not an object.
pub fn fill_arguments(
    args: &mut Value,
    arguments: &BTreeMap<String, ArgumentOverride>,
) -> Result<(), String> {
    if args.is_null() {
        *args = Value::Object(Map::new());
    }
    let Some(map) = args.as_object_mut() else {
        return Err("the arguments must be a JSON object".into());
    };
    for (name, a) in arguments {
        if let Some(value) = &a.value {
            if map.contains_key(name) {
                return Err(format!(
                    "argument `{name}` is set by the gateway's configuration and cannot be sent"
                ));
            }
            map.insert(name.clone(), value.clone());
        } else if let Some(default) = &a.default {
            match map.get(name) {
                None | Some(Value::Null) => {
                    map.insert(name.clone(), default.clone());
                }
                Some(_) => {}
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;

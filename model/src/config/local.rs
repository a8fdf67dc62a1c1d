//! `tools.local`: the crate's own `#[tool]` functions, listed by path or discovered.

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One entry of `tools.local`: a function by path (with optional overrides of what its
/// `#[tool]` attribute says), or a discovery of every `#[tool]` function of the crate (or of a
/// folder of it).
///
/// ```yaml
/// tools:
///   local:
///     - fn: crate::builtin::files::read_file
///       name: read_text_file        # overrides #[tool(name = ...)] / the fn name
///       timeout_ms: 5000
///       read_only: true
///     - discover: src/builtin/math  # every #[tool] fn under this folder
///     - discover: true              # every #[tool] fn of the crate
/// ```
///
/// A function listed by path and also discovered appears once, with the listed overrides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(try_from = "RawLocalEntry", into = "RawLocalEntry")]
pub enum LocalEntry {
    /// `fn: crate::path::to::function` and overrides.
    Function(LocalFunction),
    /// `discover: true | "src/subdir"`.
    Discover(Discover),
}

/// A `#[tool]` function listed by path, with overrides of its attribute. Unset overrides keep
/// what the attribute (and the doc comment) says.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LocalFunction {
    /// The function's path, from the crate root: `crate::builtin::files::read_file` (the `fn:`
    /// key).
    #[serde(rename = "fn")]
    pub path: String,
    /// The exported tool name (`^[a-zA-Z0-9_-]{1,64}$`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The description shown to models (replaces the doc comment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A category for grouping and filtering.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// Tags (replace the attribute's tags).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// The tool's timeout in milliseconds (wins over `policy.tools.<name>.timeout_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// The tool can do harm (delete, pay, send).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dangerous: Option<bool>,
    /// Callers must be authenticated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires_auth: Option<bool>,
    /// MCP annotation `readOnlyHint`: the tool does not modify its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// MCP annotation `idempotentHint`: calling it twice has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// The tool's version, a semantic version (replaces `#[tool(version)]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// A semver constraint (`"^2"`) the tool's version must meet: checked at build time; a
    /// tool that does not meet it, or has no version, fails the build at this line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require: Option<String>,
}

/// What `discover:` covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Discover {
    /// `discover: true`: every `#[tool]` function of the crate's source folder.
    All,
    /// `discover: "src/subdir"`: those in files under this folder (relative to the crate root,
    /// the folder of `Cargo.toml`).
    Under(String),
}

/// The YAML shape of a `tools.local` entry, before it is checked to be one of the two kinds.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    rename = "LocalEntry",
    description = "A `#[tool]` function by path (`fn:`, with optional overrides) or a \
                   discovery of the crate's `#[tool]` functions (`discover: true` or a folder).",
    transform = one_of_fn_or_discover
)]
struct RawLocalEntry {
    /// The function's path, from the crate root: `crate::module::function`.
    #[serde(rename = "fn", default, skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    /// `true`: every `#[tool]` function of the crate; a folder (`src/tools`): those under it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    discover: Option<Discover>,
    /// The exported tool name (`^[a-zA-Z0-9_-]{1,64}$`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    /// The description shown to models (replaces the doc comment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    /// A category for grouping and filtering.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    category: Option<String>,
    /// Tags (replace the attribute's tags).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tags: Option<Vec<String>>,
    /// The tool's timeout in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    timeout_ms: Option<u64>,
    /// The tool can do harm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dangerous: Option<bool>,
    /// Callers must be authenticated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    requires_auth: Option<bool>,
    /// MCP `readOnlyHint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    read_only: Option<bool>,
    /// MCP `idempotentHint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    idempotent: Option<bool>,
    /// The tool's version (semver).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    /// A semver constraint the tool's version must meet (checked at build time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    require: Option<String>,
}

fn one_of_fn_or_discover(schema: &mut schemars::Schema) {
    schema.insert(
        "oneOf".into(),
        serde_json::json!([
            {"required": ["fn"]},
            {"required": ["discover"], "not": {"anyOf": [
                {"required": ["name"]}, {"required": ["description"]},
                {"required": ["category"]}, {"required": ["tags"]},
                {"required": ["timeout_ms"]}, {"required": ["dangerous"]},
                {"required": ["requires_auth"]}, {"required": ["read_only"]},
                {"required": ["idempotent"]}, {"required": ["version"]},
                {"required": ["require"]}
            ]}}
        ]),
    );
}

impl TryFrom<RawLocalEntry> for LocalEntry {
    type Error = String;
    fn try_from(r: RawLocalEntry) -> Result<Self, String> {
        match (r.path, r.discover) {
            (Some(path), None) => {
                if let Some(v) = &r.version {
                    super::check_version(v)?;
                }
                if let Some(c) = &r.require {
                    super::Constraint::parse(c)?;
                }
                Ok(LocalEntry::Function(LocalFunction {
                    path,
                    name: r.name,
                    description: r.description,
                    category: r.category,
                    tags: r.tags,
                    timeout_ms: r.timeout_ms,
                    dangerous: r.dangerous,
                    requires_auth: r.requires_auth,
                    read_only: r.read_only,
                    idempotent: r.idempotent,
                    version: r.version,
                    require: r.require,
                }))
            }
            (None, Some(discover)) => {
                let overrides = [
                    ("name", r.name.is_some()),
                    ("description", r.description.is_some()),
                    ("category", r.category.is_some()),
                    ("tags", r.tags.is_some()),
                    ("timeout_ms", r.timeout_ms.is_some()),
                    ("dangerous", r.dangerous.is_some()),
                    ("requires_auth", r.requires_auth.is_some()),
                    ("read_only", r.read_only.is_some()),
                    ("idempotent", r.idempotent.is_some()),
                    ("version", r.version.is_some()),
                    ("require", r.require.is_some()),
                ];
                match overrides.iter().find(|(_, set)| *set) {
                    Some((key, _)) => Err(format!(
                        "`{key}` cannot be used with `discover`: overrides belong to an entry \
                         with `fn: crate::path::to::function`"
                    )),
                    None => Ok(LocalEntry::Discover(discover)),
                }
            }
            (Some(_), Some(_)) => Err(
                "an entry of `tools.local` has either `fn:` or `discover:`, not both".to_string(),
            ),
            (None, None) => Err(
                "an entry of `tools.local` needs `fn: crate::path::to::function` \
                 or `discover: true` (or `discover: src/folder`)"
                    .to_string(),
            ),
        }
    }
}

impl From<LocalEntry> for RawLocalEntry {
    fn from(e: LocalEntry) -> Self {
        match e {
            LocalEntry::Discover(d) => RawLocalEntry {
                discover: Some(d),
                ..Default::default()
            },
            LocalEntry::Function(f) => RawLocalEntry {
                path: Some(f.path),
                discover: None,
                name: f.name,
                description: f.description,
                category: f.category,
                tags: f.tags,
                timeout_ms: f.timeout_ms,
                dangerous: f.dangerous,
                requires_auth: f.requires_auth,
                read_only: f.read_only,
                idempotent: f.idempotent,
                version: f.version,
                require: f.require,
            },
        }
    }
}

impl Serialize for Discover {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Discover::All => s.serialize_bool(true),
            Discover::Under(dir) => s.serialize_str(dir),
        }
    }
}

impl<'de> Deserialize<'de> for Discover {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Discover;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("`true` or a folder of the crate such as `src/tools`")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Discover, E> {
                if v {
                    Ok(Discover::All)
                } else {
                    Err(E::custom(
                        "`discover: false` discovers nothing: remove the entry, or write \
                         `discover: true` or a folder such as `discover: src/tools`",
                    ))
                }
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Discover, E> {
                if v.trim().is_empty() {
                    return Err(E::custom(
                        "`discover:` needs `true` or a folder such as `src/tools`",
                    ));
                }
                Ok(Discover::Under(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

impl schemars::JsonSchema for Discover {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Discover".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "`true`: every `#[tool]` function of the crate; a folder relative to \
                            the crate root (`src/tools`): those in files under it.",
            "anyOf": [{"const": true}, {"type": "string", "minLength": 1}]
        })
    }
}

impl LocalEntry {
    /// The function entry, if this is one.
    pub fn as_function(&self) -> Option<&LocalFunction> {
        match self {
            LocalEntry::Function(f) => Some(f),
            LocalEntry::Discover(_) => None,
        }
    }

    /// The discovery, if this is one.
    pub fn as_discover(&self) -> Option<&Discover> {
        match self {
            LocalEntry::Discover(d) => Some(d),
            LocalEntry::Function(_) => None,
        }
    }
}

//! Argument validation: a tool's arguments checked against its input schema (JSON Schema 2020-12)
//! with a validator compiled once per tool, before the tool runs.
//!
//! - [`ArgumentValidator`] compiles one tool's `input_schema` with the `jsonschema` crate and
//!   reports **every** violation as an [`ArgumentError`] (JSON pointer + a short reason written for
//!   a model) inside one `invalid_arguments` [`ToolError`].
//! - Unknown keys (where the schema says `additionalProperties: false` or
//!   `unevaluatedProperties: false`) are reported as one combined message naming the allowed keys
//!   (`unknown argument(s) 'force', 'id' for tool archive; allowed: name, reason`).
//! - Known `format`s (`date-time`, `email`, `uuid`, ...) are asserted; unknown ones (`uint64`,
//!   `double`, ...) are annotations and never an error, nor a compile error.
//! - Arguments valid as sent are forwarded untouched. Otherwise a copy is changed and checked
//!   again, each change reported as a [`Coercion`]:
//!   - in every mode, the strict-dialect round trip: a `null` sent for an
//!     optional argument that does not admit `null` is removed, since the OpenAI strict export
//!     makes such arguments required and nullable, so `null` means "omitted" (and a serde
//!     default or `None` applies);
//!   - [`ValidationMode::Lenient`] also parses what models commonly get wrong (numbers and
//!     booleans sent as strings, JSON sent as a string where an object or array is expected);
//!     ambiguous cases (the string `"null"`, a union that admits strings) are left alone;
//!   - [`ExtraArguments::Strip`] removes keys the schema refuses instead of rejecting the call;
//!   - in every mode, a whole number sent as a float (`2.0`) where the schema wants an integer
//!     is forwarded as the integer (JSON Schema counts `2.0` as an integer; serde's `u8` does not).
//! - Arguments sent as one string holding JSON are decoded before any of this, by
//!   [`Toolset::call`](crate::Toolset::call) ([`CoercionKind::JsonText`]).
//! - [`ValidatorCache`] keeps one compiled validator per tool.
//!
//! No `$ref` is ever resolved over the network or the file system: the crate is built without
//! those features, so a schema referring outside itself fails to compile (an `internal` error
//! naming the tool).

use jsonschema::error::ValidationErrorKind;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use toolgate_model::config::location::escape;

use crate::ToolError;

pub use toolgate_model::config::{ExtraArguments, ValidationMode};

mod cache;
mod coerce;
mod messages;
pub(crate) mod text;

pub use cache::ValidatorCache;
use coerce::{Coercer, MAX_DEPTH, has_whole_float};
use messages::cut;
pub(crate) use messages::short;

/// How one tool's arguments are checked: the [`ValidationMode`] and what happens to
/// [`ExtraArguments`]. `From<ValidationMode>` gives the default for extra keys (reject).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ArgumentPolicy {
    /// Strict or lenient.
    pub mode: ValidationMode,
    /// Reject or strip keys the schema refuses.
    pub extra: ExtraArguments,
}

impl From<ValidationMode> for ArgumentPolicy {
    fn from(mode: ValidationMode) -> Self {
        Self {
            mode,
            extra: ExtraArguments::Reject,
        }
    }
}

/// Why a value of the arguments was changed before the tool ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CoercionKind {
    /// A `null` sent for an optional argument that does not admit `null` was removed: the
    /// OpenAI strict dialect makes every optional argument required and nullable, so `null`
    /// there means "omitted". Applied in every mode.
    NullOmitted,
    /// A number, boolean, object or array sent as a string was parsed (lenient mode only).
    Parsed,
    /// A key the schema refuses was removed ([`ExtraArguments::Strip`] only).
    Stripped,
    /// A number without fraction sent as a float (`2.0`) where the schema wants an integer was
    /// forwarded as the integer (`2`): JSON Schema counts both as integers, serde's integer
    /// types accept only the second. Applied in every mode.
    WholeNumber,
    /// The arguments object was sent as one string holding JSON (as OpenAI's function calling
    /// hands a tool call's `arguments` to its client, and some clients and models forward
    /// them), and the object it holds was used. Pointer `""`. Or one argument was sent as
    /// `{name}_json`, a string of JSON text, as the `openai-strict` export asks for an argument
    /// strict mode cannot describe, and the value it holds was used as `name` (pointer
    /// `/name`). Applied in every mode, whether or not arguments are validated, on every front.
    JsonText,
}

/// One change made to the arguments before the tool ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coercion {
    /// JSON pointer of the changed value in the arguments object.
    pub pointer: String,
    /// Why it was changed.
    pub kind: CoercionKind,
    /// The value as sent.
    pub from: Value,
    /// The value forwarded instead; `None` when the key was removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<Value>,
}

/// The arguments that passed validation, as forwarded to the tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Validated {
    /// The arguments to forward (a changed copy when [`coercions`](Self::coercions) is not
    /// empty, else the arguments as sent).
    pub args: Value,
    /// Every change applied, in order (empty when the arguments were valid as sent).
    pub coercions: Vec<Coercion>,
}

/// One tool's compiled input-schema validator. Cheap to share behind an [`Arc`]; immutable.
pub struct ArgumentValidator {
    schema: Value,
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for ArgumentValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArgumentValidator")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

impl ArgumentValidator {
    /// Compiles `schema` (the input schema of tool `tool`).
    ///
    /// The draft is the schema's `$schema`, 2020-12 when absent. Known formats are asserted,
    /// unknown ones ignored. An integer whose `format` names a machine width (OpenAPI's `int32`
    /// and `int64`, schemars' `int8` ... `uint64`) must fit it: the format's range is checked as
    /// `minimum`/`maximum` where the schema sets none (JSON Schema asserts formats of strings
    /// only, and an upstream given `2^63` for an `int64` refuses the call).
    ///
    /// # Errors
    /// `internal`, naming the tool, when the schema is not a valid JSON Schema or refers to a
    /// resource outside itself.
    pub fn compile(tool: &str, schema: &Value) -> Result<Self, ToolError> {
        let mut bounded = schema.clone();
        bound_integer_formats(&mut bounded);
        let validator = jsonschema::options()
            .should_validate_formats(true)
            .should_ignore_unknown_formats(true)
            .build(&bounded)
            .map_err(|e| {
                ToolError::internal(format!(
                    "the input schema of tool `{tool}` cannot be compiled: {}",
                    cut(&e.to_string(), 300)
                ))
            })?;
        Ok(Self {
            schema: schema.clone(),
            validator,
        })
    }

    /// The schema this validator was compiled from.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Whether `args` are valid (the fast path: no error is built).
    pub fn is_valid(&self, args: &Value) -> bool {
        match args {
            Value::Null => self.validator.is_valid(&Value::Object(Map::new())),
            other => self.validator.is_valid(other),
        }
    }

    /// Checks `args` (a JSON object; `null` reads as `{}`, as when decoding) as sent.
    ///
    /// Violations are listed ordered by pointer, each once.
    ///
    /// # Errors
    /// `invalid_arguments` for `tool`, listing every violation with its JSON pointer.
    pub fn validate(&self, tool: &str, args: &Value) -> Result<(), ToolError> {
        let empty;
        let args = if args.is_null() {
            empty = Value::Object(Map::new());
            &empty
        } else {
            args
        };
        if self.validator.is_valid(args) {
            return Ok(());
        }
        let errors = self.describe_all(tool, args);
        Err(ToolError::invalid_arguments(tool, errors))
    }

    /// The changes `mode` makes to `args`, applied to a copy: the copy and what was changed.
    /// Does not validate. In every mode a `null` sent for an optional argument that does not
    /// admit `null` is removed ([`CoercionKind::NullOmitted`]); lenient mode also parses
    /// numbers, booleans and JSON sent as strings ([`CoercionKind::Parsed`]).
    pub fn coerce(&self, args: &Value, mode: ValidationMode) -> (Value, Vec<Coercion>) {
        let mut copy = if args.is_null() {
            Value::Object(Map::new())
        } else {
            args.clone()
        };
        let mut coercer = Coercer {
            root: &self.schema,
            lenient: mode == ValidationMode::Lenient,
            out: Vec::new(),
        };
        coercer.coerce(&mut copy, &self.schema, &mut String::new(), 0);
        (copy, coercer.out)
    }

    /// Checks `args` under `policy` (a [`ValidationMode`] converts into one).
    ///
    /// Arguments valid as sent are forwarded untouched (the fast path: no copy). Otherwise a
    /// copy is [coerced](Self::coerce) and, with [`ExtraArguments::Strip`], keys the schema
    /// refuses are removed from it; the copy is validated, so an error names the real violation
    /// (`"0"` for a `minimum: 1` integer reads `0 is less than minimum 1` in lenient mode, not a
    /// type error).
    ///
    /// # Errors
    /// `invalid_arguments` for `tool`, listing every violation with its JSON pointer.
    pub fn check(
        &self,
        tool: &str,
        args: Value,
        policy: impl Into<ArgumentPolicy>,
    ) -> Result<Validated, ToolError> {
        let policy = policy.into();
        if self.is_valid(&args) && !has_whole_float(&args) {
            return Ok(Validated {
                args,
                coercions: Vec::new(),
            });
        }
        let (mut copy, mut coercions) = self.coerce(&args, policy.mode);
        if policy.extra == ExtraArguments::Strip {
            self.strip_unknown(&mut copy, &mut coercions);
        }
        if !self.is_valid(&copy) {
            return Err(ToolError::invalid_arguments(
                tool,
                self.describe_all(tool, &copy),
            ));
        }
        if coercions.is_empty() {
            // Valid as sent after all (a whole float where a `number` is wanted).
            return Ok(Validated { args, coercions });
        }
        Ok(Validated {
            args: copy,
            coercions,
        })
    }

    /// Removes every key that an `additionalProperties: false` / `unevaluatedProperties: false`
    /// refuses, innermost first, until none is left (a removal can only make more of the
    /// document valid).
    fn strip_unknown(&self, args: &mut Value, out: &mut Vec<Coercion>) {
        for _ in 0..MAX_DEPTH {
            let mut found: Vec<(String, String)> = Vec::new();
            for e in self.validator.iter_errors(args) {
                if let ValidationErrorKind::AdditionalProperties { unexpected }
                | ValidationErrorKind::UnevaluatedProperties { unexpected } = e.kind()
                {
                    let at = e.instance_path().as_str().to_string();
                    found.extend(unexpected.iter().map(|k| (at.clone(), k.clone())));
                }
            }
            if found.is_empty() {
                return;
            }
            // Each once, in the order they were sent.
            let mut seen = std::collections::HashSet::new();
            found.retain(|f| seen.insert(f.clone()));
            let mut removed = false;
            for (at, key) in found {
                if let Some(Value::Object(map)) = args.pointer_mut(&at)
                    && let Some(value) = map.remove(&key)
                {
                    removed = true;
                    out.push(Coercion {
                        pointer: format!("{at}/{}", escape(&key)),
                        kind: CoercionKind::Stripped,
                        from: value,
                        to: None,
                    });
                }
            }
            if !removed {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests;

/// Adds to every integer schema in `schema` whose `format` is a machine width the range of that
/// width, as `minimum` / `maximum`, where it has no bound of its own.
fn bound_integer_formats(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            let integer = match map.get("type") {
                Some(Value::String(t)) => t == "integer",
                Some(Value::Array(types)) => types.iter().any(|t| t == "integer"),
                _ => false,
            };
            let range: Option<(Value, Value)> = match map.get("format").and_then(Value::as_str) {
                Some(_) if !integer => None,
                Some("int8") => Some((i8::MIN.into(), i8::MAX.into())),
                Some("int16") => Some((i16::MIN.into(), i16::MAX.into())),
                Some("int32") => Some((i32::MIN.into(), i32::MAX.into())),
                Some("int64") => Some((i64::MIN.into(), i64::MAX.into())),
                Some("uint8") => Some((0.into(), u8::MAX.into())),
                Some("uint16") => Some((0.into(), u16::MAX.into())),
                Some("uint32") => Some((0.into(), u32::MAX.into())),
                Some("uint64") => Some((0.into(), u64::MAX.into())),
                _ => None,
            };
            if let Some((low, high)) = range {
                if !map.contains_key("minimum") && !map.contains_key("exclusiveMinimum") {
                    map.insert("minimum".into(), low);
                }
                if !map.contains_key("maximum") && !map.contains_key("exclusiveMaximum") {
                    map.insert("maximum".into(), high);
                }
            }
            // Values (`enum`, `const`, `default`, `examples`) are data, not schemas.
            for (key, value) in map.iter_mut() {
                if !matches!(key.as_str(), "enum" | "const" | "default" | "examples") {
                    bound_integer_formats(value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(bound_integer_formats),
        _ => {}
    }
}

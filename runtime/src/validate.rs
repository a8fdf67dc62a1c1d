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
//!     ambiguous cases (the string `"null"`, a union that admits strings) are left alone (C34);
//!   - [`ExtraArguments::Strip`] removes keys the schema refuses instead of rejecting the call
//!     (C37);
//!   - in every mode, a whole number sent as a float (`2.0`) where the schema wants an integer
//!     is forwarded as the integer (JSON Schema counts `2.0` as an integer; serde's `u8` does not).
//! - [`ValidatorCache`] keeps one compiled validator per tool.
//!
//! No `$ref` is ever resolved over the network or the file system: the crate is built without
//! those features, so a schema referring outside itself fails to compile (an `internal` error
//! naming the tool).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use jsonschema::ValidationError;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use toolgate_model::config::location::escape;

use crate::{ArgumentError, ToolDescriptor, ToolError};

pub use toolgate_model::config::{ExtraArguments, ValidationMode};

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
    /// unknown ones ignored.
    ///
    /// # Errors
    /// `internal`, naming the tool, when the schema is not a valid JSON Schema or refers to a
    /// resource outside itself.
    pub fn compile(tool: &str, schema: &Value) -> Result<Self, ToolError> {
        let validator = jsonschema::options()
            .should_validate_formats(true)
            .should_ignore_unknown_formats(true)
            .build(schema)
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

    /// Every violation, ordered by pointer (the object's own problems first).
    fn describe_all(&self, tool: &str, args: &Value) -> Vec<ArgumentError> {
        let mut errors: Vec<ArgumentError> = self
            .validator
            .iter_errors(args)
            .flat_map(|e| self.describe(Some(tool), &e))
            .collect();
        errors.sort_by(|a, b| a.pointer.cmp(&b.pointer));
        errors.dedup();
        errors
    }

    /// The model-facing violations one `jsonschema` error stands for (a `required` error
    /// points at the missing key itself).
    fn describe(&self, tool: Option<&str>, e: &ValidationError<'_>) -> Vec<ArgumentError> {
        let at = e.instance_path().as_str().to_string();
        let instance: &Value = e.instance();
        let one = |message: String| {
            vec![ArgumentError {
                pointer: at.clone(),
                message,
            }]
        };
        match e.kind() {
            ValidationErrorKind::Type { kind } => {
                let expected = match kind {
                    TypeKind::Single(t) => t.to_string(),
                    TypeKind::Multiple(set) => set
                        .iter()
                        .map(|t| t.to_string())
                        .collect::<Vec<_>>()
                        .join(" or "),
                };
                if at.is_empty() && tool.is_some() {
                    // The root: what the decoder says too, in the same words.
                    return one(format!(
                        "the arguments must be a JSON object, got {}",
                        got(instance)
                    ));
                }
                one(format!("expected {expected}, got {}", got(instance)))
            }
            ValidationErrorKind::Required { property } => {
                let name = property
                    .as_str()
                    .map_or_else(|| property.to_string(), str::to_string);
                vec![ArgumentError {
                    pointer: format!("{at}/{}", escape(&name)),
                    message: "required but missing".to_string(),
                }]
            }
            ValidationErrorKind::AdditionalProperties { unexpected }
            | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
                let listed = unexpected
                    .iter()
                    .map(|k| format!("'{k}'"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let mut message = match tool {
                    Some(tool) if at.is_empty() => {
                        format!("unknown argument(s) {listed} for tool {tool}")
                    }
                    _ => format!("unknown key(s) {listed}"),
                };
                if let Some(allowed) = self.allowed_keys(e.schema_path().as_str()) {
                    let allowed = if allowed.is_empty() {
                        "none".to_string()
                    } else {
                        allowed.join(", ")
                    };
                    let _ = write!(message, "; allowed: {allowed}");
                }
                one(message)
            }
            ValidationErrorKind::Minimum { limit } => {
                one(format!("{} is less than minimum {limit}", short(instance)))
            }
            ValidationErrorKind::Maximum { limit } => one(format!(
                "{} is greater than maximum {limit}",
                short(instance)
            )),
            ValidationErrorKind::ExclusiveMinimum { limit } => {
                one(format!("{} must be greater than {limit}", short(instance)))
            }
            ValidationErrorKind::ExclusiveMaximum { limit } => {
                one(format!("{} must be less than {limit}", short(instance)))
            }
            ValidationErrorKind::Enum { options } => {
                let options = match options.as_ref() {
                    Value::Array(items) => items.iter().map(short).collect::<Vec<_>>().join(", "),
                    other => short(other),
                };
                one(format!("{} is not one of {options}", short(instance)))
            }
            ValidationErrorKind::Constant { expected_value } => one(format!(
                "expected {}, got {}",
                short(expected_value),
                short(instance)
            )),
            ValidationErrorKind::Format { format } => {
                one(format!("{} is not a valid {format}", short(instance)))
            }
            ValidationErrorKind::Pattern { pattern } => one(format!(
                "{} does not match the pattern {pattern}",
                short(instance)
            )),
            ValidationErrorKind::MinLength { limit } => one(format!(
                "{} is shorter than {limit} character(s)",
                short(instance)
            )),
            ValidationErrorKind::MaxLength { limit } => one(format!(
                "{} is longer than {limit} character(s)",
                short(instance)
            )),
            ValidationErrorKind::MinItems { limit } => one(format!(
                "has {} item(s), fewer than the minimum of {limit}",
                instance.as_array().map_or(0, Vec::len)
            )),
            ValidationErrorKind::MaxItems { limit } => one(format!(
                "has {} item(s), more than the maximum of {limit}",
                instance.as_array().map_or(0, Vec::len)
            )),
            ValidationErrorKind::AnyOf { context }
            | ValidationErrorKind::OneOfNotValid { context } => {
                // `Option<T>` (`anyOf: [T, {type: null}]`) sent a non-null value: the model meant
                // `T`, so report `T`'s violations as they are.
                if !instance.is_null()
                    && context.len() == 2
                    && let [only] = context
                        .iter()
                        .filter(|branch| !is_null_mismatch(branch))
                        .collect::<Vec<_>>()[..]
                {
                    return only.iter().flat_map(|b| self.describe(tool, b)).collect();
                }
                // An enum written as one `const` per option (schemars' documented enums).
                let constants: Option<Vec<String>> = context
                    .iter()
                    .map(|branch| match &branch[..] {
                        [b] => match b.kind() {
                            ValidationErrorKind::Constant { expected_value } => {
                                Some(short(expected_value))
                            }
                            _ => None,
                        },
                        _ => None,
                    })
                    .collect();
                if let Some(constants) = constants {
                    return one(format!(
                        "{} is not one of {}",
                        short(instance),
                        constants.join(", ")
                    ));
                }
                let options = context
                    .iter()
                    .enumerate()
                    .map(|(i, branch)| {
                        let reasons = branch
                            .iter()
                            .flat_map(|b| self.describe(None, b))
                            .map(|a| {
                                if a.pointer == at {
                                    a.message
                                } else {
                                    format!("{}: {}", a.pointer, a.message)
                                }
                            })
                            .collect::<Vec<_>>()
                            .join(", ");
                        format!("option {}: {reasons}", i + 1)
                    })
                    .collect::<Vec<_>>()
                    .join(" | ");
                one(cut(
                    &format!(
                        "{} matches none of the allowed forms ({options})",
                        short(instance)
                    ),
                    600,
                ))
            }
            _ => one(cut(&e.to_string(), 300)),
        }
    }

    /// The property names the schema object holding the failing `additionalProperties` /
    /// `unevaluatedProperties` keyword declares (with its `$ref` and `allOf` parts).
    fn allowed_keys(&self, schema_path: &str) -> Option<Vec<String>> {
        let parent = &schema_path[..schema_path.rfind('/')?];
        let object = self.schema.pointer(parent)?;
        let mut names = Vec::new();
        for view in views(&self.schema, object, 0) {
            if let Some(Value::Object(props)) = view.get("properties") {
                for k in props.keys() {
                    if !names.contains(k) {
                        names.push(k.clone());
                    }
                }
            }
        }
        Some(names)
    }
}

/// One compiled [`ArgumentValidator`] per tool, compiled on first use and reused.
///
/// Keyed by tool name; an entry is reused while the tool's descriptor is the same `Arc` (or an
/// equal input schema), and recompiled when a source replaced the tool with a different schema.
/// A schema that fails to compile is remembered too (its `internal` error is returned again,
/// not recompiled on every call).
#[derive(Default)]
pub struct ValidatorCache {
    entries: RwLock<HashMap<String, Entry>>,
    compilations: AtomicUsize,
}

type Compiled = Result<Arc<ArgumentValidator>, ToolError>;

struct Entry {
    descriptor: Arc<ToolDescriptor>,
    compiled: Compiled,
}

impl Entry {
    fn serves(&self, descriptor: &Arc<ToolDescriptor>) -> bool {
        Arc::ptr_eq(&self.descriptor, descriptor)
            || self.descriptor.input_schema == descriptor.input_schema
    }
}

impl std::fmt::Debug for ValidatorCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValidatorCache")
            .field("tools", &self.len())
            .field("compilations", &self.compilations())
            .finish()
    }
}

impl ValidatorCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The validator of `descriptor`'s tool, compiled on first use.
    ///
    /// # Errors
    /// `internal`, naming the tool, when its input schema cannot be compiled.
    pub fn get(
        &self,
        descriptor: &Arc<ToolDescriptor>,
    ) -> Result<Arc<ArgumentValidator>, ToolError> {
        {
            let entries = self.entries.read().unwrap_or_else(|p| p.into_inner());
            if let Some(entry) = entries.get(&descriptor.name)
                && entry.serves(descriptor)
            {
                return entry.compiled.clone();
            }
        }
        let mut entries = self.entries.write().unwrap_or_else(|p| p.into_inner());
        // Another caller may have compiled it while this one waited for the lock.
        if let Some(entry) = entries.get(&descriptor.name)
            && entry.serves(descriptor)
        {
            return entry.compiled.clone();
        }
        self.compilations.fetch_add(1, Ordering::Relaxed);
        let compiled =
            ArgumentValidator::compile(&descriptor.name, &descriptor.input_schema).map(Arc::new);
        entries.insert(
            descriptor.name.clone(),
            Entry {
                descriptor: Arc::clone(descriptor),
                compiled: compiled.clone(),
            },
        );
        compiled
    }

    /// Checks `args` for `descriptor`'s tool under `policy` (see [`ArgumentValidator::check`]).
    ///
    /// # Errors
    /// `invalid_arguments` listing every violation; `internal` when the schema cannot be
    /// compiled.
    pub fn check(
        &self,
        descriptor: &Arc<ToolDescriptor>,
        args: Value,
        policy: impl Into<ArgumentPolicy>,
    ) -> Result<Validated, ToolError> {
        self.get(descriptor)?.check(&descriptor.name, args, policy)
    }

    /// How many schemas were compiled so far (a recompiled tool counts again).
    pub fn compilations(&self) -> usize {
        self.compilations.load(Ordering::Relaxed)
    }

    /// How many tools have an entry.
    pub fn len(&self) -> usize {
        self.entries.read().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Whether no tool has an entry yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

// ---------------------------------------------------------------------------------------------
// Message helpers

/// `value` as compact JSON, cut to a length fit for a message (80 bytes).
pub(crate) fn short(value: &Value) -> String {
    cut(&value.to_string(), 80)
}

/// `text` cut to `max` bytes for a message ([`toolgate_model::text::cut_bytes`]).
fn cut(text: &str, max: usize) -> String {
    toolgate_model::text::cut_bytes(text, max).into_owned()
}

/// `string "5.5"`, `number 3`, `object`: what was sent, for a type error.
fn got(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(_) => format!("string {}", short(value)),
        Value::Array(_) => "array".to_string(),
        Value::Object(_) => "object".to_string(),
    }
}

/// The errors of an `anyOf` branch that is `{"type": "null"}` and got something else.
fn is_null_mismatch(branch: &[ValidationError<'_>]) -> bool {
    matches!(
        branch,
        [e] if matches!(e.kind(), ValidationErrorKind::Type { kind: TypeKind::Single(jsonschema::JsonType::Null) })
    )
}

// ---------------------------------------------------------------------------------------------
// Lenient coercion

const MAX_DEPTH: usize = 48;

/// The JSON types a schema admits, as bit flags (`NUMBER` admits integers too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Types(u8);

impl Types {
    const NULL: u8 = 1;
    const BOOLEAN: u8 = 2;
    const INTEGER: u8 = 4;
    const NUMBER: u8 = 8;
    const STRING: u8 = 16;
    const ARRAY: u8 = 32;
    const OBJECT: u8 = 64;
    const ALL: u8 = 127;

    fn named(name: &str) -> u8 {
        match name {
            "null" => Self::NULL,
            "boolean" => Self::BOOLEAN,
            "integer" => Self::INTEGER,
            "number" => Self::NUMBER,
            "string" => Self::STRING,
            "array" => Self::ARRAY,
            "object" => Self::OBJECT,
            _ => Self::ALL,
        }
    }

    fn of(value: &Value) -> u8 {
        match value {
            Value::Null => Self::NULL,
            Value::Bool(_) => Self::BOOLEAN,
            Value::Number(n) if n.is_i64() || n.is_u64() => Self::INTEGER,
            Value::Number(_) => Self::NUMBER,
            Value::String(_) => Self::STRING,
            Value::Array(_) => Self::ARRAY,
            Value::Object(_) => Self::OBJECT,
        }
    }

    fn has(self, flag: u8) -> bool {
        self.0 & flag != 0
    }

    fn integers(self) -> bool {
        self.has(Self::INTEGER | Self::NUMBER)
    }

    /// Both admit it (an integer is admitted by `integer` and by `number`).
    fn and(self, other: Types) -> Types {
        let mut bits = self.0 & other.0;
        if self.integers() && other.integers() {
            bits |= Self::INTEGER;
        }
        Types(bits)
    }
}

/// The types `schema` admits; `None` when it does not constrain them.
fn types(root: &Value, schema: &Value, depth: usize) -> Option<Types> {
    let Value::Object(s) = schema else {
        return None;
    };
    if depth > MAX_DEPTH {
        return None;
    }
    let mut known: Option<Types> = None;
    let mut and = |t: Types| {
        known = Some(known.map_or(t, |k| k.and(t)));
    };
    match s.get("type") {
        Some(Value::String(t)) => and(Types(Types::named(t))),
        Some(Value::Array(ts)) => and(Types(
            ts.iter()
                .map(|t| t.as_str().map_or(Types::ALL, Types::named))
                .fold(0, |a, b| a | b),
        )),
        _ => {}
    }
    if let Some(c) = s.get("const") {
        and(Types(Types::of(c)));
    }
    if let Some(Value::Array(options)) = s.get("enum") {
        and(Types(options.iter().map(Types::of).fold(0, |a, b| a | b)));
    }
    if let Some(target) = s.get("$ref").and_then(|r| resolve(root, r))
        && let Some(t) = types(root, target, depth + 1)
    {
        and(t);
    }
    if let Some(Value::Array(all)) = s.get("allOf") {
        for branch in all {
            if let Some(t) = types(root, branch, depth + 1) {
                and(t);
            }
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = s.get(key) {
            let mut union = 0;
            let mut constrained = true;
            for branch in branches {
                match types(root, branch, depth + 1) {
                    Some(t) => union |= t.0,
                    None => constrained = false,
                }
            }
            if constrained {
                and(Types(union));
            }
        }
    }
    known
}

/// A local `$ref` (`#`, `#/$defs/x`); anything else is not followed.
fn resolve<'s>(root: &'s Value, reference: &Value) -> Option<&'s Value> {
    let fragment = reference.as_str()?.strip_prefix('#')?;
    root.pointer(fragment)
}

/// The schema objects that together describe the same instance as `schema`: itself, its `$ref`
/// target, its `allOf` members, and the one branch of an `anyOf` / `oneOf` that is not plain
/// `null` when there is exactly one (the shape of `Option<Struct>`).
fn views<'s>(root: &'s Value, schema: &'s Value, depth: usize) -> Vec<&'s Value> {
    let mut out = Vec::new();
    collect_views(root, schema, depth, &mut out);
    out
}

fn collect_views<'s>(root: &'s Value, schema: &'s Value, depth: usize, out: &mut Vec<&'s Value>) {
    let Value::Object(s) = schema else {
        return;
    };
    if depth > MAX_DEPTH || out.iter().any(|v| std::ptr::eq(*v, schema)) {
        return;
    }
    out.push(schema);
    if let Some(target) = s.get("$ref").and_then(|r| resolve(root, r)) {
        collect_views(root, target, depth + 1, out);
    }
    if let Some(Value::Array(all)) = s.get("allOf") {
        for branch in all {
            collect_views(root, branch, depth + 1, out);
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = s.get(key) {
            let mut not_null = branches
                .iter()
                .filter(|b| types(root, b, depth + 1) != Some(Types(Types::NULL)));
            if let (Some(only), None) = (not_null.next(), not_null.next()) {
                collect_views(root, only, depth + 1, out);
            }
        }
    }
}

struct Coercer<'s> {
    root: &'s Value,
    /// Whether strings are parsed too (lenient mode), or only `null`s omitted.
    lenient: bool,
    out: Vec<Coercion>,
}

impl<'s> Coercer<'s> {
    fn coerce(&mut self, value: &mut Value, schema: &'s Value, pointer: &mut String, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        if self.lenient
            && let Value::String(text) = value
            && let Some(admitted) = types(self.root, schema, 0)
            && let Some(new) = coerce_string(text, admitted)
        {
            self.out.push(Coercion {
                pointer: pointer.clone(),
                kind: CoercionKind::Parsed,
                from: value.clone(),
                to: Some(new.clone()),
            });
            *value = new;
        }
        if let Value::Number(n) = value
            && let Some(whole) = whole_number(n)
            && let Some(admitted) = types(self.root, schema, 0)
            && admitted.has(Types::INTEGER)
            && !admitted.has(Types::NUMBER)
        {
            self.out.push(Coercion {
                pointer: pointer.clone(),
                kind: CoercionKind::WholeNumber,
                from: value.clone(),
                to: Some(whole.clone()),
            });
            *value = whole;
        }
        let views = views(self.root, schema, 0);
        match value {
            Value::Object(map) => {
                let required: Vec<&str> = views
                    .iter()
                    .filter_map(|v| v.get("required").and_then(Value::as_array))
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                let keys: Vec<String> = map.keys().cloned().collect();
                for key in keys {
                    let declared = declared_property(&views, &key);
                    let Some(sub) = declared.or_else(|| additional_schema(&views)) else {
                        continue;
                    };
                    let len = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&escape(&key));
                    let is_null = map.get(&key).is_some_and(Value::is_null);
                    if is_null {
                        let optional = !required.contains(&key.as_str());
                        let admits_null =
                            types(self.root, sub, 0).is_none_or(|t| t.has(Types::NULL));
                        // Only declared properties: a `null` map value is not an omission.
                        if optional && !admits_null && declared.is_some() {
                            map.remove(&key);
                            self.out.push(Coercion {
                                pointer: pointer.clone(),
                                kind: CoercionKind::NullOmitted,
                                from: Value::Null,
                                to: None,
                            });
                        }
                    } else if let Some(v) = map.get_mut(&key) {
                        self.coerce(v, sub, pointer, depth + 1);
                    }
                    pointer.truncate(len);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    let Some(sub) = item_schema(&views, i) else {
                        continue;
                    };
                    let len = pointer.len();
                    let _ = write!(pointer, "/{i}");
                    self.coerce(item, sub, pointer, depth + 1);
                    pointer.truncate(len);
                }
            }
            _ => {}
        }
    }
}

/// The schema of declared property `key`: the first view's `properties[key]`.
fn declared_property<'s>(views: &[&'s Value], key: &str) -> Option<&'s Value> {
    views
        .iter()
        .find_map(|v| v.get("properties").and_then(|p| p.get(key)))
}

/// The schema of undeclared keys: the first view's `additionalProperties` schema.
fn additional_schema<'s>(views: &[&'s Value]) -> Option<&'s Value> {
    views
        .iter()
        .find_map(|v| v.get("additionalProperties").filter(|a| a.is_object()))
}

/// The schema of item `i`: `prefixItems[i]`, else `items`.
fn item_schema<'s>(views: &[&'s Value], i: usize) -> Option<&'s Value> {
    views
        .iter()
        .find_map(|v| v.get("prefixItems").and_then(|p| p.get(i)))
        .or_else(|| {
            views
                .iter()
                .find_map(|v| v.get("items").filter(|a| a.is_object()))
        })
}

/// `n` as an integer when it is a float without fraction that fits `i64`/`u64` (`2.0` → `2`).
fn whole_number(n: &serde_json::Number) -> Option<Value> {
    let f = n.as_f64().filter(|_| n.is_f64())?;
    if f.fract() != 0.0 || !f.is_finite() {
        return None;
    }
    // Exact conversions only: within ±2^63 every whole f64 is an exact i64.
    #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
    if f >= -(2f64.powi(63)) && f < 2f64.powi(63) {
        return Some(Value::from(f as i64));
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    if f >= 0.0 && f < 2f64.powi(64) {
        return Some(Value::from(f as u64));
    }
    None
}

/// Whether `v` holds a float without fraction anywhere (`2.0`): JSON Schema counts it as an
/// integer, serde's integer types refuse it, so such arguments take the slow path.
fn has_whole_float(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_f64() && whole_number(n).is_some(),
        Value::Array(a) => a.iter().any(has_whole_float),
        Value::Object(m) => m.values().any(has_whole_float),
        _ => false,
    }
}

/// What `text` becomes where the schema admits `admitted` (never a string), if unambiguous.
fn coerce_string(text: &str, admitted: Types) -> Option<Value> {
    if admitted.has(Types::STRING) || admitted.0 == 0 || admitted.0 == Types::ALL || text == "null"
    {
        return None;
    }
    if admitted.integers()
        && text.trim() == text
        && let Ok(Value::Number(n)) = serde_json::from_str::<Value>(text)
    {
        let integral = n.is_i64() || n.is_u64();
        return (integral || admitted.has(Types::NUMBER)).then_some(Value::Number(n));
    }
    if admitted.has(Types::BOOLEAN) {
        match text {
            "true" => return Some(Value::Bool(true)),
            "false" => return Some(Value::Bool(false)),
            _ => {}
        }
    }
    if admitted.has(Types::OBJECT | Types::ARRAY) {
        let t = text.trim_start();
        if t.starts_with('{') || t.starts_with('[') {
            match serde_json::from_str::<Value>(text) {
                Ok(v @ Value::Object(_)) if admitted.has(Types::OBJECT) => return Some(v),
                Ok(v @ Value::Array(_)) if admitted.has(Types::ARRAY) => return Some(v),
                _ => {}
            }
        }
    }
    None
}

#[cfg(test)]
mod tests;

//! What a model is told: each `jsonschema` error made an [`ArgumentError`] with a JSON pointer
//! and a short reason.

use std::fmt::Write as _;

use jsonschema::ValidationError;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::Value;
use toolgate_model::config::location::escape;

use super::ArgumentValidator;
use super::coerce::views;
use crate::ArgumentError;

impl ArgumentValidator {
    /// Every violation, ordered by pointer (the object's own problems first).
    pub(super) fn describe_all(&self, tool: &str, args: &Value) -> Vec<ArgumentError> {
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

/// `value` as compact JSON, cut to a length fit for a message (80 bytes).
pub(crate) fn short(value: &Value) -> String {
    cut(&value.to_string(), 80)
}

/// `text` cut to `max` bytes for a message ([`toolgate_model::text::cut_bytes`]).
pub(super) fn cut(text: &str, max: usize) -> String {
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

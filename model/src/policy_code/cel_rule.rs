//! A CEL rule: one expression, parsed once, executed with the variables `caller`, `tool` and
//! `arguments`. CEL has no loops or recursion: an evaluation is bounded by the size of its input.

use std::sync::Arc;

use cel::{Context, Env, Program, Value};

use super::{CodeError, Decision};
use crate::config::Location;

pub(super) struct CelRule {
    env: Arc<Env>,
    program: Program,
}

impl CelRule {
    pub(super) fn compile(text: &str) -> Result<Self, CodeError> {
        let env = Arc::new(Env::stdlib());
        let program = env.compile(text).map_err(|e| {
            let first = e.errors.first();
            CodeError {
                message: first.map_or_else(|| e.to_string(), |p| p.msg.clone()),
                location: first.and_then(|p| {
                    Some(Location::new(
                        usize::try_from(p.pos.0).ok()?,
                        usize::try_from(p.pos.1).ok()? + 1,
                    ))
                }),
            }
        })?;
        Ok(Self { env, program })
    }

    pub(super) fn needs_arguments(&self) -> bool {
        self.program.references().has_variable("arguments")
    }

    pub(super) fn decide(&self, input: &serde_json::Value) -> Result<Decision, String> {
        let mut ctx = Context::with_env(Arc::clone(&self.env));
        let null = serde_json::Value::Null;
        for name in ["caller", "tool", "arguments"] {
            ctx.add_variable(name, input.get(name).unwrap_or(&null))
                .map_err(|e| format!("the CEL expression's input `{name}`: {e}"))?;
        }
        ctx.add_function("url_host", |text: Arc<String>| -> Value {
            super::url_host(&text).map_or(Value::Null, |h| Value::String(Arc::new(h)))
        })
        .map_err(|e| format!("{e:?}"))?;
        match self.program.execute(&ctx) {
            Ok(Value::Bool(true)) => Ok(Decision::Allow),
            Ok(Value::Bool(false)) => Ok(Decision::Deny(None)),
            Ok(other) => Err(format!(
                "the CEL expression gave {other:?}, not a boolean (true allows, false refuses)"
            )),
            Err(e) => Err(format!("the CEL expression could not decide: {e}")),
        }
    }
}

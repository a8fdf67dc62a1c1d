//! A Rego rule: one policy module, compiled into a prototype engine that each evaluation clones
//! (or reuses from a small pool: evaluating needs `&mut Engine`).

use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::Duration;

use regorus::utils::limits::ExecutionTimerConfig;
use regorus::{Engine, Value};

use super::{CodeError, Decision};
use crate::config::Location;

/// Engines kept for reuse, at most (more evaluate at once: the extra ones are dropped after).
const POOL: usize = 16;

pub(super) struct RegoRule {
    /// `data.<package>.allow`, when the policy declares `allow`.
    allow: Option<String>,
    /// `data.<package>.deny`, when the policy declares `deny`.
    deny: Option<String>,
    /// The compiled engine evaluations start from, and engines to reuse.
    engines: Mutex<(Engine, Vec<Engine>)>,
}

impl RegoRule {
    pub(super) fn compile(text: &str, name: &str, limit: Duration) -> Result<Self, CodeError> {
        let mut engine = Engine::new();
        engine.set_execution_timer_config(ExecutionTimerConfig {
            limit,
            check_interval: NonZeroU32::new(64).unwrap_or(NonZeroU32::MIN),
        });
        engine
            .add_extension(
                "url_host".to_string(),
                1,
                Box::new(|args: Vec<Value>| {
                    Ok(match args.first() {
                        Some(Value::String(s)) => super::url_host(s)
                            .map(|h| Value::String(h.into()))
                            .unwrap_or(Value::Null),
                        _ => Value::Null,
                    })
                }),
            )
            .map_err(|e| error(&e.to_string()))?;
        let package = engine
            .add_policy(name.to_string(), text.to_string())
            .map_err(|e| error(&e.to_string()))?;
        let declared = |rule: &str| {
            engine
                .has_declared_rule_rooted_at(name, rule)
                .unwrap_or(false)
                .then(|| format!("{package}.{rule}"))
        };
        let (allow, deny) = (declared("allow"), declared("deny"));
        if allow.is_none() && deny.is_none() {
            return Err(CodeError {
                message: format!(
                    "the policy (package `{package}`) declares neither `allow` nor `deny`, so it decides nothing"
                ),
                location: None,
            });
        }
        // Analysis (unsafe variables, recursion, unknown functions) happens before the first
        // evaluation: done now, so that such errors stop the start-up too.
        engine
            .eval_query("true".to_string(), false)
            .map_err(|e| error(&e.to_string()))?;
        Ok(Self {
            allow,
            deny,
            engines: Mutex::new((engine, Vec::new())),
        })
    }

    pub(super) fn decide(&self, input: &serde_json::Value) -> Result<Decision, String> {
        let mut engine = {
            let mut pool = self.engines.lock().unwrap_or_else(|e| e.into_inner());
            match pool.1.pop() {
                Some(e) => e,
                None => pool.0.clone(),
            }
        };
        engine.set_input(Value::from(input.clone()));
        let decision = self.evaluate(&mut engine);
        let mut pool = self.engines.lock().unwrap_or_else(|e| e.into_inner());
        if pool.1.len() < POOL {
            pool.1.push(engine);
        }
        decision
    }

    fn evaluate(&self, engine: &mut Engine) -> Result<Decision, String> {
        if let Some(deny) = &self.deny {
            let value = engine
                .eval_rule(deny.clone())
                .map_err(|e| format!("the Rego policy could not decide: {e}"))?;
            let messages: Vec<String> = match &value {
                Value::Set(set) => set.iter().map(text).collect(),
                Value::Array(items) => items.iter().map(text).collect(),
                Value::Bool(true) => vec![String::new()],
                _ => Vec::new(),
            };
            if !messages.is_empty() {
                let messages: Vec<String> =
                    messages.into_iter().filter(|m| !m.is_empty()).collect();
                return Ok(Decision::Deny(
                    (!messages.is_empty()).then(|| messages.join("; ")),
                ));
            }
        }
        if let Some(allow) = &self.allow {
            let value = engine
                .eval_rule(allow.clone())
                .map_err(|e| format!("the Rego policy could not decide: {e}"))?;
            if value != Value::Bool(true) {
                return Ok(Decision::Deny(None));
            }
        }
        Ok(Decision::Allow)
    }
}

/// A `deny` message as text: a string as it is, anything else as JSON.
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.to_string(),
        other => other.to_json_str().unwrap_or_default(),
    }
}

/// regorus' error as a [`CodeError`]. regorus writes
/// `\n--> {path}:{line}:{col}\n  |\n5 | {source line}\n  | ^\nerror: {message}`: the location is read
/// from the `-->` line, the message from the `error:` line (else the first non-empty line).
fn error(message: &str) -> CodeError {
    let location = message
        .lines()
        .find_map(|l| l.trim().strip_prefix("--> "))
        .and_then(|at| {
            let mut nums = at.rsplitn(3, ':');
            let column = nums.next()?.trim().parse().ok()?;
            let line = nums.next()?.trim().parse().ok()?;
            Some(Location::new(line, column))
        });
    let what = message
        .lines()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .or_else(|| message.lines().map(str::trim).find(|l| !l.is_empty()))
        .unwrap_or("the policy does not compile");
    CodeError {
        message: what.to_string(),
        location,
    }
}

//! One monty run: interpreter steps on the blocking pool, tool calls awaited between them.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use monty::{FunctionCall, MontyRun, RunProgress};
use monty_types::{
    CompileOptions, DictPairs, ExcType, ExtFunctionResult, MontyClassInstance, MontyClassType,
    MontyException, MontyObject, MontyUuid, NameLookupResult, PrintWriter, PrintWriterCallback,
    ResourceLimits, ResourceTracker,
};
use serde_json::Value;
use tokio::time::Instant;

use super::{convert, files};
use crate::{Limits, Mount, RunOutput, RunRequest, SandboxError, ToolHost};

/// How long past [`Limits::time`] the watchdog waits for a step monty has not stopped itself.
pub(super) const WATCHDOG_GRACE: Duration = Duration::from_secs(1);
/// The stack of the interpreter's thread. monty bounds recursion (1000 levels of Python calls,
/// `repr` or comparison of nested containers), not the native stack those levels take: an
/// unoptimized build needs more than the 2 MiB of a default thread for the deepest `repr`.
/// Only the pages touched are ever committed.
pub(super) const STACK_BYTES: usize = 256 << 20;
/// The script name tracebacks show.
const SCRIPT: &str = "main.py";

/// What the code printed, up to the output limit.
struct Capture {
    stdout: String,
    limit: usize,
    exceeded: bool,
}

impl Capture {
    fn push(&mut self, text: &str) -> Result<(), MontyException> {
        if self.exceeded || self.stdout.len().saturating_add(text.len()) > self.limit {
            self.exceeded = true;
            return Err(MontyException::new(
                ExcType::RuntimeError,
                Some(format!("output limit of {} bytes reached", self.limit)),
            ));
        }
        self.stdout.push_str(text);
        Ok(())
    }
}

impl PrintWriterCallback for Capture {
    fn stdout_write(&mut self, output: Cow<'_, str>) -> Result<(), MontyException> {
        self.push(&output)
    }

    fn stdout_push(&mut self, end: char) -> Result<(), MontyException> {
        self.push(end.encode_utf8(&mut [0; 4]))
    }
}

/// The `tools` namespace: the object ids the code sees and the tool each method names.
struct Namespace {
    /// The `tools` object.
    root: MontyObject,
    /// Its id.
    root_id: MontyUuid,
    /// (object id, Python name) → the tool's name for the host.
    methods: HashMap<(MontyUuid, String), String>,
}

fn namespace_object(class: &str, class_id: u128, id: MontyUuid, attrs: DictPairs) -> MontyObject {
    MontyObject::ClassInstance(Box::new(MontyClassInstance {
        class_type: MontyClassType {
            name: class.to_owned(),
            id: MontyUuid::from_u128(class_id),
            host_defined: true,
            is_dataclass: false,
            attrs: DictPairs::default(),
        },
        instance_id: id,
        attrs,
    }))
}

impl Namespace {
    /// `tools`: a local tool `calc` is `tools.calc(...)`, a source's tool `github.get_repo` is
    /// `tools.github.get_repo(...)`.
    fn new(tools: &[String]) -> Self {
        let root_id = MontyUuid::from_u128(1);
        let mut methods = HashMap::new();
        let mut sources: Vec<(String, MontyUuid)> = Vec::new();
        for name in tools {
            match name.split_once('.') {
                Some((source, tool)) => {
                    let py = crate::python_name(source);
                    let id = match sources.iter().find(|(s, _)| *s == py) {
                        Some((_, id)) => *id,
                        None => {
                            let id = MontyUuid::from_u128(2 + sources.len() as u128);
                            sources.push((py, id));
                            id
                        }
                    };
                    methods.insert((id, crate::python_name(tool)), name.clone());
                }
                None => {
                    methods.insert((root_id, crate::python_name(name)), name.clone());
                }
            }
        }
        let attrs: Vec<_> = sources
            .into_iter()
            .map(|(py, id)| {
                let obj = namespace_object("ToolSource", 2, id, DictPairs::default());
                (MontyObject::String(py), obj)
            })
            .collect();
        Self {
            root: namespace_object("Tools", 1, root_id, DictPairs::from(attrs)),
            root_id,
            methods,
        }
    }
}

/// Why a run ended early on the host's side.
enum Stop {
    ToolCalls,
}

/// The next thing the interpreter does.
enum Step {
    Start(Box<MontyRun>),
    Resume(Box<FunctionCall>, ExtFunctionResult),
    Abort(Box<FunctionCall>, MontyException),
}

/// A step's outcome: done, or a tool call to make.
enum Outcome {
    Complete(MontyObject),
    Call {
        call: Box<FunctionCall>,
        tool: String,
        arguments: Value,
    },
}

fn exception(kind: ExcType, message: impl Into<String>) -> MontyException {
    MontyException::new(kind, Some(message.into()))
}

/// The tool a suspended call names and its arguments, or the exception the call raises.
fn tool_call(call: &mut FunctionCall, ns: &Namespace) -> Result<(String, Value), MontyException> {
    let args = std::mem::take(&mut call.args);
    let kwargs = std::mem::take(&mut call.kwargs);
    if let Some(object) = call.object_id {
        let tool = match ns.methods.get(&(object, call.function_name.clone())) {
            Some(tool) => tool.clone(),
            // A tool without source that the run was not offered (one the caller may not call,
            // or none at all): the host answers, with the policy's error or `not_found`.
            None if object == ns.root_id => call.function_name.clone(),
            None => {
                return Err(exception(
                    ExcType::AttributeError,
                    format!(
                        "no tool named '{}' here (see describe_code_api)",
                        call.function_name
                    ),
                ));
            }
        };
        if !args.is_empty() {
            return Err(exception(
                ExcType::TypeError,
                format!("{tool}() takes keyword arguments only"),
            ));
        }
        return Ok((tool, Value::Object(convert::kwargs_to_json(kwargs))));
    }
    if call.function_name != "call_tool" {
        return Err(exception(
            ExcType::NameError,
            format!("name '{}' is not defined", call.function_name),
        ));
    }
    let mut kwargs = convert::kwargs_to_json(kwargs);
    let mut args = args.into_iter();
    let name = args
        .next()
        .map(convert::to_json)
        .or_else(|| kwargs.remove("name"));
    let arguments = args
        .next()
        .map(convert::to_json)
        .or_else(|| kwargs.remove("args"))
        .or_else(|| kwargs.remove("arguments"))
        .unwrap_or_else(|| Value::Object(serde_json::Map::new()));
    let usage = "call_tool(name, args) takes a tool name (str) and its arguments (dict)";
    if args.next().is_some() || !kwargs.is_empty() {
        return Err(exception(ExcType::TypeError, usage));
    }
    match (name, arguments) {
        (Some(Value::String(name)), arguments @ Value::Object(_)) => Ok((name, arguments)),
        _ => Err(exception(ExcType::TypeError, usage)),
    }
}

/// Runs the interpreter from `step` until it completes or calls a tool.
fn run_step(
    step: Step,
    capture: &mut Capture,
    ns: &Namespace,
    mounts: &[Mount],
    memory: u64,
    deadline: std::time::Instant,
) -> Result<Outcome, MontyException> {
    let time_left = deadline.saturating_duration_since(std::time::Instant::now());
    let mut progress = match step {
        Step::Start(runner) => {
            let inputs = vec![
                MontyObject::Function {
                    name: "call_tool".into(),
                    docstring: Some(
                        "call_tool(name, args): calls a tool, returns its result".into(),
                    ),
                },
                ns.root.clone(),
            ];
            let limits = ResourceLimits {
                max_duration: Some(time_left),
                max_memory: Some(usize::try_from(memory).unwrap_or(usize::MAX)),
                ..ResourceLimits::default()
            };
            runner.start(
                inputs,
                ResourceTracker::new(limits),
                PrintWriter::Callback(capture),
            )?
        }
        Step::Resume(mut call, result) => {
            call.tracker_mut().set_max_duration(time_left);
            call.resume(result, PrintWriter::Callback(capture))?
        }
        Step::Abort(call, exc) => call.abort(exc, PrintWriter::Callback(capture))?,
    };
    loop {
        progress = match progress {
            RunProgress::Complete(value) => return Ok(Outcome::Complete(value)),
            RunProgress::FunctionCall(mut call) => match tool_call(&mut call, ns) {
                Ok((tool, arguments)) => {
                    return Ok(Outcome::Call {
                        call: Box::new(call),
                        tool,
                        arguments,
                    });
                }
                Err(exc) => call.resume(exc, PrintWriter::Callback(capture))?,
            },
            RunProgress::OsCall(os) => {
                let answer = match files::answer(&os.function_call, mounts, memory) {
                    Ok(value) => ExtFunctionResult::Return(value),
                    Err(exc) => ExtFunctionResult::Error(exc),
                };
                os.resume(answer, PrintWriter::Callback(capture))?
            }
            RunProgress::NameLookup(lookup) => {
                lookup.resume(NameLookupResult::Undefined, PrintWriter::Callback(capture))?
            }
            RunProgress::ResolveFutures(futures) => futures.abort(
                exception(
                    ExcType::RuntimeError,
                    "awaiting tool calls is not supported",
                ),
                PrintWriter::Callback(capture),
            )?,
        };
    }
}

/// The exception a tool's error raises in Python: its type follows the error's kind, its
/// message is `"{kind}: {message}"`.
fn tool_exception(kind: &str, message: &str) -> MontyException {
    let exc_type = match kind {
        "permission_denied" | "policy_denied" | "unauthenticated" => ExcType::PermissionError,
        "invalid_arguments" | "invalid_argument" => ExcType::ValueError,
        "not_found" => ExcType::LookupError,
        "timeout" => ExcType::TimeoutError,
        _ => ExcType::RuntimeError,
    };
    exception(exc_type, format!("{kind}: {message}"))
}

/// The run's error for an exception that ended it.
fn classify(exc: &MontyException, capture: &Capture, limits: &Limits) -> SandboxError {
    if capture.exceeded {
        return SandboxError::Output {
            limit_bytes: limits.output_bytes,
        };
    }
    let message = exc.message().unwrap_or_default().to_owned();
    match exc.exc_type() {
        ExcType::SyntaxError => SandboxError::Syntax {
            line: exc.traceback().last().map_or(1, |f| f.start.line),
            message,
        },
        ExcType::TimeoutError if message.starts_with("time limit exceeded") => {
            SandboxError::Timeout {
                limit_ms: millis(limits.time),
            }
        }
        ExcType::MemoryError if message.starts_with("memory limit exceeded") => {
            SandboxError::Memory {
                limit_bytes: limits.memory_bytes,
            }
        }
        other => {
            let full = exc.to_string();
            let traceback = full
                .rsplit_once('\n')
                .map_or_else(String::new, |(tb, _)| tb.to_owned());
            SandboxError::Exception {
                exception: other.to_string(),
                message,
                traceback,
                stdout: capture.stdout.clone(),
            }
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn engine_error(message: impl Into<String>) -> SandboxError {
    SandboxError::Engine {
        engine: "monty".into(),
        message: message.into(),
    }
}

/// What the interpreter thread answers after a step.
struct Reply {
    outcome: Result<Outcome, MontyException>,
    /// Whether the output limit was reached.
    exceeded: bool,
    /// What the code printed; filled only once the run is over.
    stdout: String,
}

/// Starts the thread that runs `code`'s interpreter: its first reply comes unasked, each next
/// one after a [`Step`] sent to it. The thread ends with the run, or when the driver hangs up.
fn spawn_interpreter(
    code: String,
    ns: Namespace,
    mounts: Vec<Mount>,
    limits: &Limits,
    deadline: std::time::Instant,
) -> Result<
    (
        std::sync::mpsc::Sender<Step>,
        tokio::sync::mpsc::UnboundedReceiver<Reply>,
    ),
    SandboxError,
> {
    let (step_tx, step_rx) = std::sync::mpsc::channel::<Step>();
    let (reply_tx, reply_rx) = tokio::sync::mpsc::unbounded_channel();
    let memory = limits.memory_bytes;
    let mut capture = Capture {
        stdout: String::new(),
        limit: usize::try_from(limits.output_bytes).unwrap_or(usize::MAX),
        exceeded: false,
    };
    std::thread::Builder::new()
        .name("toolgate-monty".into())
        .stack_size(STACK_BYTES)
        .spawn(move || {
            let inputs = vec!["call_tool".into(), "tools".into()];
            let mut step = match MontyRun::new(code, SCRIPT, inputs, CompileOptions::default()) {
                Ok(runner) => Step::Start(Box::new(runner)),
                Err(exc) => {
                    let _ = reply_tx.send(Reply {
                        outcome: Err(exc),
                        exceeded: false,
                        stdout: String::new(),
                    });
                    return;
                }
            };
            loop {
                let outcome = run_step(step, &mut capture, &ns, &mounts, memory, deadline);
                let over = !matches!(outcome, Ok(Outcome::Call { .. }));
                let stdout = if over {
                    std::mem::take(&mut capture.stdout)
                } else {
                    String::new()
                };
                let reply = Reply {
                    outcome,
                    exceeded: capture.exceeded,
                    stdout,
                };
                if reply_tx.send(reply).is_err() || over {
                    return;
                }
                match step_rx.recv() {
                    Ok(next) => step = next,
                    Err(_) => return,
                }
            }
        })
        .map_err(|e| engine_error(format!("cannot start the interpreter thread: {e}")))?;
    Ok((step_tx, reply_rx))
}

/// Runs `request` to its end.
pub(super) async fn run(
    request: RunRequest,
    host: Option<Arc<dyn ToolHost>>,
) -> Result<RunOutput, SandboxError> {
    let started = std::time::Instant::now();
    let limits = request.limits.clone();
    let deadline = started + limits.time;
    let watchdog = Instant::from_std(deadline + WATCHDOG_GRACE);
    let timeout = || SandboxError::Timeout {
        limit_ms: millis(limits.time),
    };
    let ns = Namespace::new(&request.tools);
    let (steps, mut replies) =
        spawn_interpreter(request.code, ns, request.mounts, &limits, deadline)?;
    let mut calls: u32 = 0;
    let mut stop: Option<Stop> = None;
    loop {
        let reply = match tokio::time::timeout_at(watchdog, replies.recv()).await {
            Ok(Some(reply)) => reply,
            Ok(None) => {
                return Err(engine_error(
                    "the interpreter thread ended without an answer",
                ));
            }
            // The step outlived the limit and the grace: monty's own check stops the thread.
            Err(_) => return Err(timeout()),
        };
        if reply.exceeded {
            return Err(SandboxError::Output {
                limit_bytes: limits.output_bytes,
            });
        }
        let (call, tool, arguments) = match reply.outcome {
            Err(exc) => {
                if let Some(Stop::ToolCalls) = stop {
                    return Err(SandboxError::ToolCalls {
                        limit: limits.tool_calls,
                    });
                }
                let capture = Capture {
                    stdout: reply.stdout,
                    limit: 0,
                    exceeded: false,
                };
                return Err(classify(&exc, &capture, &limits));
            }
            Ok(Outcome::Complete(value)) => {
                let result = match convert::to_json(value) {
                    Value::Null => None,
                    value => Some(value),
                };
                return Ok(RunOutput {
                    stdout: reply.stdout,
                    stderr: String::new(),
                    result,
                    duration_ms: millis(started.elapsed()),
                    tool_calls: calls,
                });
            }
            Ok(Outcome::Call {
                call,
                tool,
                arguments,
            }) => (call, tool, arguments),
        };
        let next = if calls >= limits.tool_calls {
            stop = Some(Stop::ToolCalls);
            let message = format!("more than {} tool calls", limits.tool_calls);
            Step::Abort(call, exception(ExcType::RuntimeError, message))
        } else if let Some(host) = host.as_ref() {
            calls += 1;
            let answer = host.call_tool(&tool, arguments);
            let answer = match tokio::time::timeout_at(Instant::from_std(deadline), answer).await {
                Err(_) => return Err(timeout()),
                Ok(Ok(value)) => ExtFunctionResult::Return(convert::to_python(value)),
                Ok(Err(e)) => ExtFunctionResult::Error(tool_exception(&e.kind, &e.message)),
            };
            Step::Resume(call, answer)
        } else {
            calls += 1;
            let exc = exception(ExcType::RuntimeError, "no tools are available to this run");
            Step::Resume(call, ExtFunctionResult::Error(exc))
        };
        if steps.send(next).is_err() {
            return Err(engine_error("the interpreter thread ended early"));
        }
    }
}

//! One tool call: send the message, follow the task to its end, and turn what the agent
//! produced into a [`ToolOutput`] or a [`ToolError`].
//!
//! * A bare `Message` answer is the result.
//! * A `Task` in `submitted` / `working` is followed: over the event stream when the call
//!   streams, else by polling `GetTask` (the first wait is the entry's `poll_interval_ms`,
//!   doubled each time up to 5 s). A stream that ends before the task does is followed by
//!   polling too.
//! * Streamed artifact chunks are merged by artifact id in arrival order (`append: true`
//!   extends the artifact, adjacent text joined into one part); a chunk without `append`
//!   replaces the artifact of that id. After a chunk with `lastChunk: true` the artifact is
//!   final: later chunks for it are ignored, with a warning. An `append` to an artifact id not
//!   seen yet starts that artifact, with a warning (A2A 1.0, `TaskArtifactUpdateEvent`).
//! * `completed`: the artifacts' parts, in order, are the content (the status message when
//!   there are none); one JSON object among the data parts is also `structuredContent`.
//! * `input-required` / `auth-required`: waiting stops at once; the call ends in
//!   [`ErrorKind::InputRequired`] with the agent's question as the message and
//!   `{"state", "taskId", "contextId"}` as details. A second call with those `taskId` and
//!   `contextId` arguments continues the task.
//! * `failed`, `rejected`, `canceled`: [`ErrorKind::Upstream`] naming the state and the agent's
//!   status message, with the same details.
//! * If the call is dropped before the task ends (its deadline passed, the caller cancelled),
//!   the task is cancelled (`CancelTask`) in the background, once the agent has named it: a
//!   streaming call learns the task id from the first event, a polled one (`blocking: false`)
//!   from the send's answer. A blocking send that runs out of time before the agent answers
//!   cannot name a task to cancel (A2A lets only the agent choose task ids); long tasks should
//!   stream or poll.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Map, Value, json};

use super::rpc::Rpc;
use super::tools::{content, text_of};
use super::wire::{self, Artifact, Event, Message, Part, State, Task};
use crate::{ErrorKind, ToolContext, ToolError, ToolOutput};

/// The `_meta` key of an A2A result: `{"taskId"?, "contextId"?, "state"}`.
pub const META_KEY: &str = "toolgate/a2a";

/// The longest wait between two polls.
const MAX_POLL_INTERVAL: Duration = Duration::from_secs(5);
/// The shortest wait between two polls (after the first), whatever the configuration says.
const MIN_POLL_INTERVAL: Duration = Duration::from_millis(10);

/// How a call talks to the agent.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mode {
    pub streaming: bool,
    pub blocking: bool,
    pub poll_interval: Duration,
}

/// Cancel requests still on their way, awaited (briefly) when the source closes, so that a
/// command-line call that timed out still cancels its task before the process exits.
pub(crate) type Pending = Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>;

/// Cancels the task when the call is dropped before the task ended.
struct CancelOnDrop {
    rpc: Arc<Rpc>,
    task_id: Option<String>,
    done: bool,
    pending: Pending,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let Some(task_id) = self.task_id.take() else {
            return;
        };
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let rpc = self.rpc.clone();
        let spawned = handle.spawn(async move {
            let method = rpc.version.cancel_task_method();
            let sent = tokio::time::timeout(
                Duration::from_secs(10),
                rpc.call(method, wire::task_params(&task_id)),
            )
            .await;
            match sent {
                Ok(Ok(_)) => tracing::info!(source = %rpc.source, task = %task_id, "task cancelled: the call ended before it"),
                Ok(Err(e)) => tracing::warn!(source = %rpc.source, task = %task_id, error = %e, "could not cancel the task"),
                Err(_) => tracing::warn!(source = %rpc.source, task = %task_id, "cancelling the task timed out"),
            }
        });
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        pending.retain(|h| !h.is_finished());
        pending.push(spawned);
    }
}

/// What is known of the task while it is followed.
struct Progress {
    task_id: String,
    context_id: Option<String>,
    state: State,
    message: Option<Message>,
    artifacts: Vec<Artifact>,
    /// Ids of the artifacts whose last chunk came.
    finished: Vec<String>,
}

impl Progress {
    fn from_task(task: Task) -> Self {
        Self {
            task_id: task.id,
            context_id: task.context_id,
            state: task.state,
            message: task.message,
            artifacts: task.artifacts,
            finished: Vec::new(),
        }
    }

    /// A full task snapshot replaces everything but streamed artifacts it does not list.
    fn update(&mut self, task: Task) {
        self.state = task.state;
        self.context_id = task.context_id.or(self.context_id.take());
        if task.message.is_some() {
            self.message = task.message;
        }
        for artifact in task.artifacts {
            match self
                .artifacts
                .iter_mut()
                .find(|a| a.id == artifact.id && !a.id.is_empty())
            {
                Some(known) => *known = artifact,
                None => self.artifacts.push(artifact),
            }
        }
    }

    /// Merges one streamed chunk; `agent` names the agent in warnings.
    fn merge_chunk(&mut self, agent: &str, artifact: Artifact, append: bool, last_chunk: bool) {
        let id = artifact.id.clone();
        if !id.is_empty() && self.finished.contains(&id) {
            tracing::warn!(agent, task = %self.task_id, artifact = %id, "the agent sent a chunk of an artifact after its last chunk (lastChunk: true); the chunk is ignored");
            return;
        }
        if last_chunk && !id.is_empty() {
            self.finished.push(id.clone());
        }
        let known = self
            .artifacts
            .iter_mut()
            .find(|a| a.id == artifact.id && !a.id.is_empty());
        if known.is_none() && append {
            tracing::warn!(agent, task = %self.task_id, artifact = %id, "the agent appended to an artifact it never started; the chunk starts it");
        }
        match (known, append) {
            (Some(known), true) => {
                for part in artifact.parts {
                    match (known.parts.last_mut(), part) {
                        (Some(Part::Text(old)), Part::Text(new)) => old.push_str(&new),
                        (_, part) => known.parts.push(part),
                    }
                }
                if known.name.is_none() {
                    known.name = artifact.name;
                }
            }
            (Some(known), false) => *known = artifact,
            (None, _) => self.artifacts.push(artifact),
        }
    }
}

/// Sends `message` to the agent behind `rpc` and follows what it starts (see the module docs).
pub(crate) async fn call(
    rpc: Arc<Rpc>,
    tool: &str,
    message: Message,
    mode: Mode,
    ctx: &ToolContext,
    pending: Pending,
) -> Result<ToolOutput, ToolError> {
    let mut guard = CancelOnDrop {
        rpc: rpc.clone(),
        task_id: None,
        done: false,
        pending,
    };
    let cancelled = ctx.cancellation().clone();
    let run = crate::trace_context::CURRENT.scope(
        ctx.traceparent()
            .map(|t| (Arc::from(t), ctx.tracestate().map(Arc::from))),
        follow(&rpc, message, mode, &mut guard),
    );
    // The guard is dropped after this: when `follow` did not see the task end (the caller
    // cancelled, the deadline dropped this future, the connection broke), it cancels the task.
    tokio::select! {
        out = run => out,
        () = cancelled.cancelled() => Err(ToolError::cancelled(tool)),
    }
}

async fn follow(
    rpc: &Rpc,
    message: Message,
    mode: Mode,
    guard: &mut CancelOnDrop,
) -> Result<ToolOutput, ToolError> {
    // A message continuing a task (its answer to `input-required`) is sent blocking even when
    // polling: right after a non-blocking send the task may still show the old
    // `input-required`, which would end the call with the question just answered.
    let continues = message.task_id.is_some();
    let blocking = mode.blocking || mode.streaming || continues;
    let params = wire::send_params(rpc.version, &message, blocking);
    let method = rpc.version.send_method(mode.streaming);
    let mut progress: Option<Progress> = None;
    if mode.streaming {
        let mut events = rpc.stream(method, params).await?;
        while let Some(event) = events.next().await {
            let event = decode(rpc, method, &event?)?;
            match event {
                Event::Message(m) if progress.is_none() => return Ok(message_output(m)),
                Event::Message(m) => {
                    if let Some(p) = progress.as_mut() {
                        p.message = Some(m);
                    }
                }
                Event::Task(t) => match progress.as_mut() {
                    Some(p) => p.update(t),
                    None => {
                        guard.task_id = Some(t.id.clone());
                        let mut p = Progress::from_task(t);
                        // An answer to `input-required` may be streamed back starting with the
                        // task as it was: still waiting for that answer. Not the end.
                        if continues && p.state.is_interrupted() {
                            p.state = State::Working;
                        }
                        progress = Some(p);
                    }
                },
                Event::Status {
                    task_id,
                    context_id,
                    state,
                    message,
                    last,
                } => {
                    let p = progress.get_or_insert_with(|| {
                        guard.task_id = Some(task_id.clone());
                        Progress::from_task(Task {
                            id: task_id.clone(),
                            context_id: context_id.clone(),
                            state,
                            message: None,
                            artifacts: Vec::new(),
                        })
                    });
                    p.state = state;
                    if message.is_some() {
                        p.message = message;
                    }
                    if p.context_id.is_none() {
                        p.context_id = context_id;
                    }
                    if last {
                        break;
                    }
                }
                Event::Artifact {
                    task_id,
                    context_id,
                    artifact,
                    append,
                    last_chunk,
                } => {
                    let p = progress.get_or_insert_with(|| {
                        guard.task_id = Some(task_id.clone());
                        Progress::from_task(Task {
                            id: task_id.clone(),
                            context_id,
                            state: State::Working,
                            message: None,
                            artifacts: Vec::new(),
                        })
                    });
                    p.merge_chunk(&rpc.source, artifact, append, last_chunk);
                }
            }
            if progress
                .as_ref()
                .is_some_and(|p| p.state.is_terminal() || p.state.is_interrupted())
            {
                break;
            }
        }
        drop(events);
        if progress.is_none() {
            return Err(ToolError::new(
                ErrorKind::Protocol,
                format!(
                    "agent `{}`: the {method} stream ended without a task or a message",
                    rpc.source
                ),
            ));
        }
    } else {
        let result = rpc.call(method, params).await?;
        match decode(rpc, method, &result)? {
            Event::Message(m) => return Ok(message_output(m)),
            Event::Task(t) => {
                guard.task_id = Some(t.id.clone());
                progress = Some(Progress::from_task(t));
            }
            other => {
                return Err(ToolError::new(
                    ErrorKind::Protocol,
                    format!(
                        "agent `{}` answered {method} with a task update instead of a task or a message: {other:?}",
                        rpc.source
                    ),
                ));
            }
        }
    }
    let mut p = progress.expect("set above");
    // Poll until the task ends or waits for the caller.
    let mut wait = mode.poll_interval;
    while !(p.state.is_terminal() || p.state.is_interrupted()) {
        tokio::time::sleep(wait).await;
        wait = (wait * 2).clamp(MIN_POLL_INTERVAL, MAX_POLL_INTERVAL);
        let method = rpc.version.get_task_method();
        let result = rpc.call(method, wire::task_params(&p.task_id)).await?;
        let task = match decode(rpc, method, &result)? {
            Event::Task(t) => t,
            other => {
                return Err(ToolError::new(
                    ErrorKind::Protocol,
                    format!(
                        "agent `{}` answered {method} with something other than a task: {other:?}",
                        rpc.source
                    ),
                ));
            }
        };
        p.update(task);
    }
    guard.done = true;
    finish(rpc, p)
}

fn decode(rpc: &Rpc, method: &str, v: &Value) -> Result<Event, ToolError> {
    wire::decode_event(v).map_err(|e| {
        ToolError::new(
            ErrorKind::Protocol,
            format!("agent `{}` answered {method} with {e}", rpc.source),
        )
    })
}

fn meta(p: &Progress) -> Map<String, Value> {
    Map::from_iter([(
        META_KEY.to_string(),
        json!({ "taskId": p.task_id, "contextId": p.context_id, "state": p.state.as_str() }),
    )])
}

fn message_output(m: Message) -> ToolOutput {
    let mut out = parts_output(&m.parts, "a2a://message");
    let mut info = Map::new();
    if let Some(c) = &m.context_id {
        info.insert("contextId".into(), json!(c));
    }
    if let Some(t) = &m.task_id {
        info.insert("taskId".into(), json!(t));
    }
    if !info.is_empty() {
        out.meta = Some(Map::from_iter([(
            META_KEY.to_string(),
            Value::Object(info),
        )]));
    }
    out
}

/// The content of `parts`, in order; a single JSON object among data parts is also the
/// structured result.
fn parts_output(parts: &[Part], where_: &str) -> ToolOutput {
    let mut out = ToolOutput::default();
    let mut objects = parts.iter().filter_map(|p| match p {
        Part::Data(d @ Value::Object(_)) => Some(d),
        _ => None,
    });
    if let (Some(only), None) = (objects.next(), objects.next()) {
        out.structured = Some(only.clone());
    }
    out.content = parts
        .iter()
        .enumerate()
        .map(|(i, p)| content(p, where_, i))
        .collect();
    out
}

/// `parts` with adjacent text parts joined: an artifact streamed in chunks (`"a"`, `" b"`)
/// reads the same whether it was streamed or fetched whole (agents keep the chunks as parts).
fn joined(parts: &[Part]) -> Vec<Part> {
    let mut out: Vec<Part> = Vec::with_capacity(parts.len());
    for part in parts {
        match (out.last_mut(), part) {
            (Some(Part::Text(old)), Part::Text(new)) => old.push_str(new),
            (_, part) => out.push(part.clone()),
        }
    }
    out
}

fn finish(rpc: &Rpc, p: Progress) -> Result<ToolOutput, ToolError> {
    let details = json!({
        "state": p.state.as_str(),
        "taskId": p.task_id,
        "contextId": p.context_id,
    });
    let said = text_of(p.message.as_ref());
    match p.state {
        State::Completed => {
            let mut out = if p.artifacts.is_empty() {
                match &p.message {
                    Some(m) => parts_output(&m.parts, &format!("a2a://tasks/{}", p.task_id)),
                    None => ToolOutput::text("(the agent completed the task without a result)"),
                }
            } else {
                let mut out = ToolOutput::default();
                let mut structured = Vec::new();
                for a in &p.artifacts {
                    let part_out = parts_output(
                        &joined(&a.parts),
                        &format!("a2a://tasks/{}/artifacts/{}", p.task_id, a.id),
                    );
                    structured.extend(part_out.structured);
                    out.content.extend(part_out.content);
                }
                if structured.len() == 1 {
                    out.structured = structured.pop();
                }
                out
            };
            out.meta = Some(meta(&p));
            Ok(out)
        }
        State::InputRequired | State::AuthRequired => {
            let lead = if p.state == State::InputRequired {
                "Agent needs more input"
            } else {
                "Agent needs authentication"
            };
            let text = if said.is_empty() {
                format!("{lead} (task {}).", p.task_id)
            } else {
                format!("{lead}: {said}")
            };
            Err(ToolError::new(ErrorKind::InputRequired, text).with_details(details))
        }
        state => {
            let reason = if said.is_empty() {
                String::new()
            } else {
                format!(": {said}")
            };
            Err(ToolError::new(
                ErrorKind::Upstream,
                format!(
                    "agent `{}`: task {} ended {}{reason}",
                    rpc.source,
                    p.task_id,
                    state.as_str()
                ),
            )
            .with_details(details))
        }
    }
}

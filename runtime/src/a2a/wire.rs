//! The A2A data model as toolgate uses it, and its two wire forms.
//!
//! * **A2A 1.0** (the protobuf JSON mapping, PyPI `a2a-sdk` 1.x): parts are `{"text": …}`,
//!   `{"raw": base64, "mediaType", "filename"}`, `{"url": …}`, `{"data": …}`; roles
//!   `ROLE_USER` / `ROLE_AGENT`; states `TASK_STATE_COMPLETED`, …; a send result is
//!   `{"task": …}` or `{"message": …}`, a stream event one of `task`, `message`,
//!   `statusUpdate`, `artifactUpdate`.
//! * **A2A 0.3**: every object carries a `kind` (`message`, `task`, `status-update`,
//!   `artifact-update`; parts `text`, `file`, `data`); roles `user` / `agent`; states
//!   `completed`, `input-required`, ….
//!
//! Decoding accepts both forms whatever the version (an agent that mixes them still works);
//! encoding follows the version the agent card declares.

use serde_json::{Map, Value, json};

/// The A2A protocol version spoken with an agent, chosen from its card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Version {
    /// A2A 1.0: `SendMessage`, `GetTask`, …, header `A2A-Version: 1.0`.
    V1,
    /// A2A 0.3 (and the 0.2 cards that look like it): `message/send`, `tasks/get`, ….
    V03,
}

impl Version {
    /// `1.0` or `0.3`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V1 => "1.0",
            Self::V03 => "0.3",
        }
    }

    /// The JSON-RPC method that sends a message.
    pub fn send_method(self, streaming: bool) -> &'static str {
        match (self, streaming) {
            (Self::V1, false) => "SendMessage",
            (Self::V1, true) => "SendStreamingMessage",
            (Self::V03, false) => "message/send",
            (Self::V03, true) => "message/stream",
        }
    }

    /// The JSON-RPC method that reads a task.
    pub fn get_task_method(self) -> &'static str {
        match self {
            Self::V1 => "GetTask",
            Self::V03 => "tasks/get",
        }
    }

    /// The JSON-RPC method that cancels a task.
    pub fn cancel_task_method(self) -> &'static str {
        match self {
            Self::V1 => "CancelTask",
            Self::V03 => "tasks/cancel",
        }
    }

    /// The JSON-RPC method that returns the authenticated extended agent card.
    pub fn extended_card_method(self) -> &'static str {
        match self {
            Self::V1 => "GetExtendedAgentCard",
            Self::V03 => "agent/getAuthenticatedExtendedCard",
        }
    }
}

/// One part of a message or an artifact.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Text.
    Text(String),
    /// A file, inline (`bytes`, base64) or by reference (`uri`).
    File {
        /// Base64 of the bytes.
        bytes: Option<String>,
        /// Where the file is.
        uri: Option<String>,
        /// Its media type.
        mime_type: Option<String>,
        /// Its file name.
        name: Option<String>,
    },
    /// Structured data (any JSON value).
    Data(Value),
}

/// A task's state, both versions' spellings folded into one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Accepted, not started.
    Submitted,
    /// Running.
    Working,
    /// Interrupted: the agent asks a question.
    InputRequired,
    /// Interrupted: the agent needs the caller to authenticate.
    AuthRequired,
    /// Done; its artifacts are the result.
    Completed,
    /// Ended in failure.
    Failed,
    /// The agent refused the task.
    Rejected,
    /// Cancelled.
    Canceled,
    /// A state this client does not know (treated as still running).
    Unknown,
}

impl State {
    /// Reads `TASK_STATE_INPUT_REQUIRED`, `input-required`, `input_required`, … alike.
    pub fn parse(s: &str) -> Self {
        let s = s.trim();
        let s = s.strip_prefix("TASK_STATE_").unwrap_or(s);
        match s.to_ascii_lowercase().replace('_', "-").as_str() {
            "submitted" => Self::Submitted,
            "working" => Self::Working,
            "input-required" => Self::InputRequired,
            "auth-required" => Self::AuthRequired,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "rejected" => Self::Rejected,
            "canceled" | "cancelled" => Self::Canceled,
            _ => Self::Unknown,
        }
    }

    /// The 0.3 spelling (`input-required`), used in toolgate's own output whatever the version.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Submitted => "submitted",
            Self::Working => "working",
            Self::InputRequired => "input-required",
            Self::AuthRequired => "auth-required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Rejected => "rejected",
            Self::Canceled => "canceled",
            Self::Unknown => "unknown",
        }
    }

    /// `completed`, `failed`, `rejected` or `canceled`: the task will not change again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Completed | Self::Failed | Self::Rejected | Self::Canceled
        )
    }

    /// `input-required` or `auth-required`: the task waits for the caller.
    pub fn is_interrupted(self) -> bool {
        matches!(self, Self::InputRequired | Self::AuthRequired)
    }
}

/// A message (the caller's, or an agent's reply or status message).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Message {
    /// The message id.
    pub message_id: String,
    /// The task it belongs to.
    pub task_id: Option<String>,
    /// The conversation it belongs to.
    pub context_id: Option<String>,
    /// Its parts, in order.
    pub parts: Vec<Part>,
    /// Free-form metadata (toolgate sends `{"skill": <skill id>}`: A2A has no field that
    /// addresses a skill).
    pub metadata: Option<Value>,
}

/// An artifact: a result of a task.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Artifact {
    /// The artifact id (chunks of one artifact share it).
    pub id: String,
    /// Its name.
    pub name: Option<String>,
    /// Its parts, in order.
    pub parts: Vec<Part>,
}

/// A task as the agent reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// The task id.
    pub id: String,
    /// The conversation it belongs to.
    pub context_id: Option<String>,
    /// Its state.
    pub state: State,
    /// The status message (the agent's question, its reason for failing).
    pub message: Option<Message>,
    /// Its artifacts so far.
    pub artifacts: Vec<Artifact>,
}

/// What a send, a poll or a stream event carries.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A whole task.
    Task(Task),
    /// A bare message: the agent answered without a task.
    Message(Message),
    /// A task's state changed.
    Status {
        /// The task.
        task_id: String,
        /// Its conversation.
        context_id: Option<String>,
        /// The new state.
        state: State,
        /// The status message.
        message: Option<Message>,
        /// 0.3's `final`: the stream ends after this event.
        last: bool,
    },
    /// An artifact, or a chunk of one.
    Artifact {
        /// The task.
        task_id: String,
        /// Its conversation.
        context_id: Option<String>,
        /// The artifact (chunk).
        artifact: Artifact,
        /// This chunk continues the artifact with the same id.
        append: bool,
        /// The last chunk of the artifact.
        last_chunk: bool,
    },
}

/// Why a value is not what the protocol says.
pub type DecodeError = String;

fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// Reads a part in either form.
pub fn decode_part(v: &Value) -> Result<Part, DecodeError> {
    let kind = v.get("kind").and_then(Value::as_str);
    let media = str_field(v, "mediaType").or_else(|| str_field(v, "mimeType"));
    let name = str_field(v, "filename").or_else(|| str_field(v, "name"));
    if kind == Some("text") || (kind.is_none() && v.get("text").is_some()) {
        return match v.get("text") {
            Some(Value::String(t)) => Ok(Part::Text(t.clone())),
            _ => Err("a text part without a string `text`".to_string()),
        };
    }
    if kind == Some("data") || (kind.is_none() && v.get("data").is_some()) {
        return Ok(Part::Data(v.get("data").cloned().unwrap_or(Value::Null)));
    }
    if kind == Some("file") {
        let file = v.get("file").unwrap_or(&Value::Null);
        return Ok(Part::File {
            bytes: str_field(file, "bytes"),
            uri: str_field(file, "uri"),
            mime_type: str_field(file, "mimeType").or(media),
            name: str_field(file, "name").or(name),
        });
    }
    if kind.is_none() && (v.get("raw").is_some() || v.get("url").is_some()) {
        return Ok(Part::File {
            bytes: str_field(v, "raw"),
            uri: str_field(v, "url"),
            mime_type: media,
            name,
        });
    }
    Err(format!("a part of unknown shape: {}", excerpt(v)))
}

fn decode_parts(v: &Value) -> Result<Vec<Part>, DecodeError> {
    match v.get("parts") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(parts)) => parts.iter().map(decode_part).collect(),
        Some(_) => Err("`parts` is not an array".to_string()),
    }
}

/// Reads a message in either form.
pub fn decode_message(v: &Value) -> Result<Message, DecodeError> {
    if !v.is_object() {
        return Err(format!("a message that is not an object: {}", excerpt(v)));
    }
    Ok(Message {
        message_id: str_field(v, "messageId").unwrap_or_default(),
        task_id: str_field(v, "taskId"),
        context_id: str_field(v, "contextId"),
        parts: decode_parts(v)?,
        metadata: v.get("metadata").cloned(),
    })
}

fn decode_artifact(v: &Value) -> Result<Artifact, DecodeError> {
    Ok(Artifact {
        id: str_field(v, "artifactId").unwrap_or_default(),
        name: str_field(v, "name"),
        parts: decode_parts(v)?,
    })
}

fn decode_status(v: &Value) -> Result<(State, Option<Message>), DecodeError> {
    let status = v.get("status").unwrap_or(&Value::Null);
    let state = status
        .get("state")
        .and_then(Value::as_str)
        .map(State::parse)
        .ok_or_else(|| format!("a task status without a `state`: {}", excerpt(v)))?;
    let message = match status.get("message") {
        None | Some(Value::Null) => None,
        Some(m) => Some(decode_message(m)?),
    };
    Ok((state, message))
}

/// Reads a task in either form.
pub fn decode_task(v: &Value) -> Result<Task, DecodeError> {
    let id = str_field(v, "id").ok_or_else(|| format!("a task without an `id`: {}", excerpt(v)))?;
    let (state, message) = decode_status(v)?;
    let artifacts = match v.get("artifacts") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.iter().map(decode_artifact).collect::<Result<_, _>>()?,
        Some(_) => return Err("`artifacts` is not an array".to_string()),
    };
    Ok(Task {
        id,
        context_id: str_field(v, "contextId"),
        state,
        message,
        artifacts,
    })
}

/// Reads the `result` of a send, or one stream event, in either form.
pub fn decode_event(v: &Value) -> Result<Event, DecodeError> {
    // 0.3: the object says what it is.
    if let Some(kind) = v.get("kind").and_then(Value::as_str) {
        return decode_kind(kind, v);
    }
    // 1.0: a wrapper with one field.
    for (key, kind) in [
        ("task", "task"),
        ("message", "message"),
        ("statusUpdate", "status-update"),
        ("artifactUpdate", "artifact-update"),
    ] {
        if let Some(inner) = v.get(key).filter(|i| i.is_object()) {
            return decode_kind(kind, inner);
        }
    }
    // A bare task (some agents answer a send with the task itself).
    if v.get("id").is_some() && v.get("status").is_some() {
        return decode_task(v).map(Event::Task);
    }
    Err(format!(
        "neither a task, a message nor a task update: {}",
        excerpt(v)
    ))
}

fn decode_kind(kind: &str, v: &Value) -> Result<Event, DecodeError> {
    match kind {
        "task" => decode_task(v).map(Event::Task),
        "message" => decode_message(v).map(Event::Message),
        "status-update" => {
            let (state, message) = decode_status(v)?;
            Ok(Event::Status {
                task_id: str_field(v, "taskId").unwrap_or_default(),
                context_id: str_field(v, "contextId"),
                state,
                message,
                last: v.get("final").and_then(Value::as_bool).unwrap_or(false),
            })
        }
        "artifact-update" => Ok(Event::Artifact {
            task_id: str_field(v, "taskId").unwrap_or_default(),
            context_id: str_field(v, "contextId"),
            artifact: decode_artifact(v.get("artifact").unwrap_or(&Value::Null))?,
            append: v.get("append").and_then(Value::as_bool).unwrap_or(false),
            last_chunk: v.get("lastChunk").and_then(Value::as_bool).unwrap_or(false),
        }),
        other => Err(format!("an event of unknown kind `{other}`")),
    }
}

/// The caller's message in `version`'s form.
pub fn encode_message(version: Version, message: &Message) -> Value {
    let parts: Vec<Value> = message
        .parts
        .iter()
        .map(|p| encode_part(version, p))
        .collect();
    let mut out = Map::new();
    match version {
        Version::V1 => {
            out.insert("role".into(), json!("ROLE_USER"));
        }
        Version::V03 => {
            out.insert("kind".into(), json!("message"));
            out.insert("role".into(), json!("user"));
        }
    }
    out.insert("messageId".into(), json!(message.message_id));
    out.insert("parts".into(), Value::Array(parts));
    if let Some(t) = &message.task_id {
        out.insert("taskId".into(), json!(t));
    }
    if let Some(c) = &message.context_id {
        out.insert("contextId".into(), json!(c));
    }
    if let Some(m) = &message.metadata {
        out.insert("metadata".into(), m.clone());
    }
    Value::Object(out)
}

fn encode_part(version: Version, part: &Part) -> Value {
    match (version, part) {
        (Version::V1, Part::Text(t)) => json!({ "text": t }),
        (Version::V03, Part::Text(t)) => json!({ "kind": "text", "text": t }),
        (Version::V1, Part::Data(d)) => json!({ "data": d }),
        (Version::V03, Part::Data(d)) => json!({ "kind": "data", "data": d }),
        (
            Version::V1,
            Part::File {
                bytes,
                uri,
                mime_type,
                name,
            },
        ) => {
            let mut o = Map::new();
            if let Some(b) = bytes {
                o.insert("raw".into(), json!(b));
            }
            if let Some(u) = uri {
                o.insert("url".into(), json!(u));
            }
            if let Some(m) = mime_type {
                o.insert("mediaType".into(), json!(m));
            }
            if let Some(n) = name {
                o.insert("filename".into(), json!(n));
            }
            Value::Object(o)
        }
        (
            Version::V03,
            Part::File {
                bytes,
                uri,
                mime_type,
                name,
            },
        ) => {
            let mut f = Map::new();
            if let Some(b) = bytes {
                f.insert("bytes".into(), json!(b));
            }
            if let Some(u) = uri {
                f.insert("uri".into(), json!(u));
            }
            if let Some(m) = mime_type {
                f.insert("mimeType".into(), json!(m));
            }
            if let Some(n) = name {
                f.insert("name".into(), json!(n));
            }
            json!({ "kind": "file", "file": Value::Object(f) })
        }
    }
}

/// The `params` of a send: the message, and whether the agent should hold its answer until
/// the task is done or interrupted (`blocking`; 1.0 says it the other way round,
/// `returnImmediately`).
pub fn send_params(version: Version, message: &Message, blocking: bool) -> Value {
    let configuration = match version {
        Version::V1 => json!({ "returnImmediately": !blocking }),
        Version::V03 => json!({ "blocking": blocking }),
    };
    json!({ "message": encode_message(version, message), "configuration": configuration })
}

/// The `params` of `GetTask` / `CancelTask` (and their 0.3 names).
pub fn task_params(id: &str) -> Value {
    json!({ "id": id })
}

/// A short excerpt of a value for an error message (at most 200 bytes and `…`).
pub fn excerpt(v: &Value) -> String {
    toolgate_model::text::cut_bytes(&v.to_string(), 200).into_owned()
}

//! Skills as tools: descriptors from the card, messages from arguments, content from parts.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::card::{AgentCard, Skill};
use super::wire::{Message, Part};
use crate::{Content, ResourceContents, ToolAnnotations, ToolDescriptor};

/// The argument that continues a task.
pub const TASK_ID_ARG: &str = "taskId";
/// The argument that continues a conversation.
pub const CONTEXT_ID_ARG: &str = "contextId";
/// The text argument of a skill with no configured input schema.
pub const TEXT_ARG: &str = "text";

fn continuation_properties() -> [(&'static str, Value); 2] {
    [
        (
            TASK_ID_ARG,
            json!({
                "type": "string",
                "description": "To answer an agent that asked for more input: the `taskId` its answer gave. Leave it out to start a new task."
            }),
        ),
        (
            CONTEXT_ID_ARG,
            json!({
                "type": "string",
                "description": "The conversation to continue: the `contextId` an earlier answer gave. Optional."
            }),
        ),
    ]
}

/// The input schema of a skill: `schema` (an object schema from tools.yaml) or
/// `{"text": string}`, plus the optional `taskId` and `contextId`.
pub fn input_schema(schema: Option<&Value>) -> Value {
    let mut out = match schema {
        Some(s) => s.clone(),
        None => json!({
            "type": "object",
            "properties": {
                TEXT_ARG: {"type": "string", "minLength": 1, "description": "The message to send to the agent."}
            },
            "required": [TEXT_ARG],
            "additionalProperties": false
        }),
    };
    if let Some(props) = out
        .as_object_mut()
        .map(|o| o.entry("properties").or_insert_with(|| json!({})))
        .and_then(Value::as_object_mut)
    {
        for (key, value) in continuation_properties() {
            props.entry(key).or_insert(value);
        }
    }
    out
}

/// One descriptor per skill of `card` (named by skill id; the source prefixes it).
pub fn descriptors(card: &AgentCard, schemas: &BTreeMap<String, Value>) -> Vec<ToolDescriptor> {
    card.skills
        .iter()
        .map(|skill| descriptor(card, skill, schemas.get(&skill.id)))
        .collect()
}

fn descriptor(card: &AgentCard, skill: &Skill, schema: Option<&Value>) -> ToolDescriptor {
    let mut description = if skill.description.is_empty() {
        format!("Skill `{}` of the A2A agent {}.", skill.name, card.name)
    } else {
        skill.description.clone()
    };
    if !skill.examples.is_empty() {
        let examples: Vec<String> = skill.examples.iter().map(|e| format!("\"{e}\"")).collect();
        description.push_str(&format!("\n\nExamples: {}", examples.join("; ")));
    }
    ToolDescriptor {
        name: skill.id.clone(),
        description,
        input_schema: input_schema(schema),
        annotations: ToolAnnotations {
            title: Some(skill.name.clone()),
            open_world_hint: Some(true),
            ..ToolAnnotations::default()
        },
        tags: skill.tags.clone(),
        // Only a semantic version (a card's `version` is free text).
        version: card
            .agent_version
            .as_deref()
            .and_then(toolgate_model::config::semantic),
        ..ToolDescriptor::default()
    }
}

/// The message a call sends: its `taskId` / `contextId` arguments as the message's, the rest as
/// one text part (`text`, for a skill with no configured schema) or one data part.
pub fn message(skill: &str, args: Value, structured: bool) -> Message {
    let mut args = match args {
        Value::Object(o) => o,
        Value::Null => Map::new(),
        other => Map::from_iter([(TEXT_ARG.to_string(), other)]),
    };
    let mut take = |key: &str| match args.remove(key) {
        Some(Value::String(s)) if !s.is_empty() => Some(s),
        _ => None,
    };
    let task_id = take(TASK_ID_ARG);
    let context_id = take(CONTEXT_ID_ARG);
    let parts = if structured {
        vec![Part::Data(Value::Object(args))]
    } else {
        match args.remove(TEXT_ARG) {
            Some(Value::String(t)) => vec![Part::Text(t)],
            Some(other) => vec![Part::Text(other.to_string())],
            None => vec![Part::Text(String::new())],
        }
    };
    Message {
        message_id: uuid::Uuid::new_v4().to_string(),
        task_id,
        context_id,
        parts,
        metadata: Some(json!({ "skill": skill })),
    }
}

/// The content part of an A2A part; `where_` names the artifact for embedded files' URIs.
pub fn content(part: &Part, where_: &str, index: usize) -> Content {
    match part {
        Part::Text(t) => Content::text(t.clone()),
        Part::Data(d) => Content::text(d.to_string()),
        Part::File {
            bytes: Some(b),
            mime_type,
            name,
            ..
        } => {
            let mime = mime_type.clone();
            match mime.as_deref() {
                Some(m) if m.starts_with("image/") => Content::Image {
                    data: b.clone(),
                    mime_type: m.to_string(),
                },
                Some(m) if m.starts_with("audio/") => Content::Audio {
                    data: b.clone(),
                    mime_type: m.to_string(),
                },
                _ => Content::Resource {
                    resource: ResourceContents::Blob {
                        uri: format!(
                            "{where_}/{}",
                            name.clone().unwrap_or_else(|| format!("part-{index}"))
                        ),
                        mime_type: mime,
                        blob: b.clone(),
                    },
                },
            }
        }
        Part::File {
            uri: Some(u),
            mime_type,
            name,
            ..
        } => Content::ResourceLink {
            uri: u.clone(),
            name: name.clone().unwrap_or_else(|| {
                u.rsplit('/')
                    .find(|s| !s.is_empty())
                    .unwrap_or(u)
                    .to_string()
            }),
            description: None,
            mime_type: mime_type.clone(),
        },
        Part::File { name, .. } => Content::text(format!(
            "[an empty file part{}]",
            name.as_ref().map(|n| format!(" `{n}`")).unwrap_or_default()
        )),
    }
}

/// The text of a message's text parts, joined by newlines.
pub fn text_of(message: Option<&Message>) -> String {
    message
        .map(|m| {
            m.parts
                .iter()
                .filter_map(|p| match p {
                    Part::Text(t) => Some(t.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

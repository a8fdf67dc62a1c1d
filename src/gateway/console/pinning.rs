//! The pinning page: the remote tools pinning withholds (new, or changed since approved), each
//! with a line diff of its definition against the one approved, and an approve button for
//! admins (`Toolset::approve`, what `toolgate approve` runs).
//!
//! The approvals file keeps only hashes, so the console keeps the definitions it saw approved
//! in a file of its own beside it ([`definitions_file`]), updated whenever it sees the remote
//! tools (every source page, every pinning page, every change of the catalog): a tool that
//! changed while the gateway was down is still shown against its approved definition.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use askama::Template;
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate_runtime::ToolDescriptor;

use super::checked_post;
use super::render::{Chrome, Message, page};
use super::session::{Role, Session};
use crate::gateway::Gateway;

/// Where the console keeps approved definitions for the approvals file `approvals`:
/// `{stem}.definitions.json` beside it.
pub(crate) fn definitions_file(approvals: &Path) -> PathBuf {
    let stem = approvals
        .file_stem()
        .map_or_else(|| "approvals".into(), |s| s.to_string_lossy().into_owned());
    approvals.with_file_name(format!("{stem}.definitions.json"))
}

/// The parts of a definition pinning hashes, as JSON.
fn definition(d: &ToolDescriptor) -> Value {
    json!({
        "name": d.name,
        "description": d.description,
        "input_schema": d.input_schema,
        "output_schema": d.output_schema,
        "version": d.version,
    })
}

/// The approved definitions the console has seen, by tool (and the file they are kept in).
pub(crate) struct Definitions {
    file: Option<PathBuf>,
    seen: Mutex<BTreeMap<String, Value>>,
}

impl Definitions {
    pub(crate) fn new(file: Option<PathBuf>) -> Self {
        let seen = file
            .as_deref()
            .and_then(|f| std::fs::read_to_string(f).ok())
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default();
        Self {
            file,
            seen: Mutex::new(seen),
        }
    }

    fn approved(&self, tool: &str) -> Option<Value> {
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(tool)
            .cloned()
    }
}

/// Records the definitions of the remote tools listed now (pinning lets them through: they
/// are approved), and writes the file when one changed. Nothing without `policy.pinning`.
pub(crate) fn observe(gateway: &Gateway) {
    if !gateway.console().settings.pinning {
        return;
    }
    let defs = &gateway.console().definitions;
    let mut seen = defs.seen.lock().unwrap_or_else(|e| e.into_inner());
    let mut changed = false;
    for entry in gateway.toolset().entries() {
        if !entry.is_remote() {
            continue;
        }
        let now = definition(entry.descriptor());
        if seen.get(entry.name()) != Some(&now) {
            seen.insert(entry.name().to_string(), now);
            changed = true;
        }
    }
    if let (true, Some(file)) = (changed, &defs.file) {
        let text = serde_json::to_string_pretty(&*seen).unwrap_or_default();
        let tmp = file.with_extension("json.tmp");
        if let Err(e) = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, file)) {
            tracing::warn!(file = %file.display(), "the console cannot keep approved tool definitions: {e}");
        }
    }
}

/// Observes the remote tools once start-up discovery is done and after every catalog change,
/// until the gateway shuts down (only when a tokio runtime runs).
pub(crate) fn watch(gateway: &Gateway) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let gateway = gateway.clone();
    runtime.spawn(async move {
        let stop = gateway.shutdown_token();
        let mut changes = gateway.toolset().watch_tools();
        let ready =
            async { while !gateway.wait_ready(std::time::Duration::from_secs(60)).await {} };
        tokio::select! {
            () = ready => {}
            () = stop.cancelled() => return,
        }
        loop {
            observe(&gateway);
            tokio::select! {
                changed = changes.changed() => if !changed { return },
                () = stop.cancelled() => return,
            }
        }
    });
}

/// One line of a diff.
pub(crate) struct Line {
    /// `removed`, `added` or `same`.
    pub class: &'static str,
    pub sign: &'static str,
    pub text: String,
}

/// One withheld tool.
pub(crate) struct Withheld {
    pub name: String,
    pub source: String,
    pub state: &'static str,
    pub reason: String,
    /// The approved definition against the current one; empty when none is known.
    pub diff: Vec<Line>,
    /// The current definition, when no approved one is known.
    pub current: String,
}

#[derive(Template)]
#[template(path = "pinning.html", config = "src/gateway/console/askama.toml")]
struct Pinning {
    chrome: Option<Chrome>,
    pinning: bool,
    admin: bool,
    approved: String,
    tools: Vec<Withheld>,
}

fn diff(old: &Value, new: &Value) -> Vec<Line> {
    let old = serde_json::to_string_pretty(old).unwrap_or_default();
    let new = serde_json::to_string_pretty(new).unwrap_or_default();
    similar::TextDiff::from_lines(&old, &new)
        .iter_all_changes()
        .map(|c| {
            let (class, sign) = match c.tag() {
                similar::ChangeTag::Delete => ("removed", "-"),
                similar::ChangeTag::Insert => ("added", "+"),
                similar::ChangeTag::Equal => ("same", " "),
            };
            Line {
                class,
                sign,
                text: c.value().trim_end_matches('\n').to_string(),
            }
        })
        .collect()
}

#[derive(Deserialize, Default)]
pub(crate) struct PinningQuery {
    #[serde(default)]
    approved: String,
}

/// `GET /console/pinning`.
pub(crate) async fn page_get(
    State(gateway): State<Gateway>,
    session: Session,
    Query(query): Query<PinningQuery>,
) -> Response {
    observe(&gateway);
    let toolset = gateway.toolset();
    let defs = &gateway.console().definitions;
    // An admin sees every withheld tool (to approve it); a viewer those it may call once
    // approved, as a listing would show them.
    let identity = session.caller.identity();
    let visible = |name: &str| {
        session.role == Role::Admin
            || toolset
                .entry(name)
                .is_some_and(|e| toolset.may_call(e.descriptor(), &identity))
    };
    let tools = toolset
        .withheld()
        .into_iter()
        .filter(|w| visible(&w.name))
        .map(|w| {
            let now = toolset.entry(&w.name).map(|e| definition(e.descriptor()));
            let old = defs.approved(&w.name);
            let (diff, current) = match (&old, &now) {
                (Some(old), Some(now)) => (diff(old, now), String::new()),
                (_, now) => (
                    Vec::new(),
                    now.as_ref()
                        .and_then(|n| serde_json::to_string_pretty(n).ok())
                        .unwrap_or_default(),
                ),
            };
            Withheld {
                state: match w.state {
                    toolgate_runtime::policy::pinning::PinState::New => "new",
                    toolgate_runtime::policy::pinning::PinState::Changed => "changed",
                },
                reason: w.to_string(),
                name: w.name,
                source: w.source,
                diff,
                current,
            }
        })
        .collect::<Vec<_>>();
    page(
        &Pinning {
            pinning: gateway.console().settings.pinning || !tools.is_empty(),
            admin: session.role == Role::Admin,
            chrome: Some(Chrome::new(&session, "pinning")),
            approved: query.approved,
            tools,
        },
        StatusCode::OK,
    )
}

#[derive(Deserialize)]
pub(crate) struct ApproveForm {
    csrf: Option<String>,
    #[serde(default)]
    tool: String,
}

/// `POST /console/pinning/approve`: approves `tool` as it is now (admins only; 403 for a
/// viewer, as for a form without the session's CSRF token).
pub(crate) async fn approve(
    State(gateway): State<Gateway>,
    headers: HeaderMap,
    uri: Uri,
    Form(form): Form<ApproveForm>,
) -> Response {
    let session = match checked_post(&gateway, &headers, &uri, form.csrf.as_deref()) {
        Ok(s) => s,
        Err(refused) => return *refused,
    };
    let chrome = || Some(Chrome::new(&session, "pinning"));
    if session.role != Role::Admin {
        return Message::page(
            chrome(),
            StatusCode::FORBIDDEN,
            "Refused",
            "Approving a tool needs the role `admin`; you are signed in as a viewer.",
        );
    }
    if form.tool.is_empty() {
        return Message::page(
            chrome(),
            StatusCode::BAD_REQUEST,
            "Nothing approved",
            "No tool was named.",
        );
    }
    match gateway
        .toolset()
        .approve(std::slice::from_ref(&form.tool))
        .await
    {
        Ok(names) => {
            tracing::info!(tools = ?names, by = ?session.caller.name, "approved from the console");
            observe(&gateway);
            let names = names.join(", ");
            let target = format!(
                "/console/pinning?approved={}",
                percent_encoding::utf8_percent_encode(&names, percent_encoding::NON_ALPHANUMERIC)
            );
            Redirect::to(&target).into_response()
        }
        Err(e) => Message::page(
            chrome(),
            crate::gateway::rest::error::status_for(e.kind()),
            "Not approved",
            e.message(),
        ),
    }
}

//! Skills over REST and as MCP resources.
//!
//! | route / URI | answer |
//! | --- | --- |
//! | `GET /skills` | [`SkillList`]: every skill's name and description |
//! | `GET /skills/{name}` | [`SkillDetail`]: its instructions and the list of its files |
//! | `GET /skills/{name}/files/{path}` | [`SkillFile`]: one file's text |
//! | `resources/list` | `skill://{name}/{path}` for every file of every skill (its `SKILL.md` first) |
//! | `resources/read` `skill://{name}/SKILL.md` | the whole `SKILL.md` (front matter and instructions) |
//! | `resources/read` `skill://{name}/{path}` | one file's text |
//!
//! The skills are the toolset's (`SkillsExt::skills`). A caller sees them when it may list the
//! `load_skill` tool (roles, allow/deny lists; on a virtual server's MCP endpoint, when the
//! server selects it): an operator who hides that tool from a caller hides the skills too. Files are read as `read_skill_file` reads them,
//! confined to the skill's folder; nothing is run.

use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::routing::get;
use percent_encoding::{AsciiSet, CONTROLS, percent_decode_str, utf8_percent_encode};
use rmcp::ErrorData as McpError;
use rmcp::model::{ReadResourceResponse, ReadResourceResult, Resource, ResourceContents};
use serde::{Deserialize, Serialize};
use toolgate_runtime::{ErrorKind, Identity, ToolError};
use utoipa::ToSchema;

use super::rest::api_doc::ToolErrorBody;
use super::rest::error::ErrorResponse;
use super::{Caller, Gateway};
use crate::skills::{LOAD_SKILL, Skills};

/// The scheme of skill resources.
pub(crate) const SKILL_URI_PREFIX: &str = "skill://";

/// Characters escaped in a resource URI's path (each segment keeps its `/`).
const PATH: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'?')
    .add(b'<')
    .add(b'>')
    .add(b'`')
    .add(b'{')
    .add(b'}');

/// The skills `identity` may see: the toolset's, when it may list `load_skill`.
pub(crate) fn visible(gateway: &Gateway, identity: &Identity) -> Option<Skills> {
    let skills = crate::skills::of(gateway.toolset())?;
    let entry = gateway.toolset().entry(LOAD_SKILL)?;
    gateway.toolset().shows(&entry, identity).then_some(skills)
}

/// Whether virtual server `server`'s MCP endpoint has the skills as resources: when it selects
/// `load_skill` (the skills go with that tool, as for a caller).
pub(crate) fn on_server(gateway: &Gateway, server: &super::servers::VirtualServer) -> bool {
    gateway
        .toolset()
        .entry(LOAD_SKILL)
        .is_some_and(|e| server.selects(&e))
}

/// Whether the toolset has skills at all (for the MCP `resources` capability).
pub(crate) fn offered(gateway: &Gateway) -> bool {
    crate::skills::of(gateway.toolset()).is_some_and(|s| !s.is_empty())
}

/// The body of `GET /skills`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SkillList {
    /// Every skill the caller may see, sorted by name.
    pub skills: Vec<SkillSummary>,
}

/// A skill as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SkillSummary {
    /// The skill's name.
    pub name: String,
    /// What it does and when to use it.
    pub description: String,
}

/// The body of `GET /skills/{name}`: what `load_skill` returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SkillDetail {
    /// The skill's name.
    pub name: String,
    /// What it does and when to use it.
    pub description: String,
    /// The instructions: the Markdown body of its `SKILL.md`.
    pub instructions: String,
    /// Its files, relative to its folder (`/`-separated, sorted).
    pub files: Vec<String>,
}

/// The body of `GET /skills/{name}/files/{path}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SkillFile {
    /// The skill's name.
    pub skill: String,
    /// The file's path inside the skill's folder, as asked.
    pub path: String,
    /// The file's text (UTF-8).
    pub text: String,
}

/// The skills routes (no fallback of their own: the REST router has it).
pub(crate) fn router(gateway: &Gateway) -> axum::Router {
    axum::Router::new()
        .route("/skills", get(list_skills))
        .route("/skills/{name}", get(get_skill))
        .route("/skills/{name}/files/{*path}", get(get_skill_file))
        .with_state(gateway.clone())
}

fn identity(caller: Option<Extension<Caller>>) -> Identity {
    caller.map(|Extension(c)| c).unwrap_or_default().identity()
}

fn no_skill(name: &str) -> ToolError {
    ToolError::new(ErrorKind::NotFound, format!("no skill named `{name}`"))
}

/// Every skill's name and description.
#[utoipa::path(
    get,
    path = "/skills",
    operation_id = "listSkills",
    tag = "skills",
    responses((status = 200, description = "Every skill the caller may see: name and description.", body = SkillList))
)]
pub(crate) async fn list_skills(
    State(gateway): State<Gateway>,
    caller: Option<Extension<Caller>>,
) -> Json<SkillList> {
    let skills = visible(&gateway, &identity(caller))
        .map(|s| {
            s.list()
                .into_iter()
                .map(|s| SkillSummary {
                    name: s.name,
                    description: s.description,
                })
                .collect()
        })
        .unwrap_or_default();
    Json(SkillList { skills })
}

/// A skill's instructions and the list of its files.
#[utoipa::path(
    get,
    path = "/skills/{name}",
    operation_id = "getSkill",
    tag = "skills",
    params(("name" = String, Path, description = "The skill's name.")),
    responses(
        (status = 200, description = "The skill's instructions and files.", body = SkillDetail),
        (status = 404, description = "No such skill.", body = ToolErrorBody)
    )
)]
pub(crate) async fn get_skill(
    State(gateway): State<Gateway>,
    caller: Option<Extension<Caller>>,
    Path(name): Path<String>,
) -> Result<Json<SkillDetail>, ErrorResponse> {
    let skills = visible(&gateway, &identity(caller)).ok_or_else(|| no_skill(&name))?;
    let skill = skills.get(&name).ok_or_else(|| no_skill(&name))?;
    Ok(Json(SkillDetail {
        name: skill.name().to_owned(),
        description: skill.description().to_owned(),
        instructions: skill.instructions().to_owned(),
        files: skill.files().map_err(ToolError::from)?,
    }))
}

/// One file of a skill, as text.
///
/// Confined to the skill's folder: `..` above it, absolute paths and symlinks leading out are
/// refused (403).
#[utoipa::path(
    get,
    path = "/skills/{name}/files/{path}",
    operation_id = "getSkillFile",
    tag = "skills",
    params(
        ("name" = String, Path, description = "The skill's name."),
        ("path" = String, Path, description = "The file's path inside the skill's folder, e.g. `references/guide.md`.")
    ),
    responses(
        (status = 200, description = "The file's text.", body = SkillFile),
        (status = 403, description = "The path leads out of the skill's folder.", body = ToolErrorBody),
        (status = 404, description = "No such skill or file.", body = ToolErrorBody)
    )
)]
pub(crate) async fn get_skill_file(
    State(gateway): State<Gateway>,
    caller: Option<Extension<Caller>>,
    Path((name, path)): Path<(String, String)>,
) -> Result<Json<SkillFile>, ErrorResponse> {
    let skills = visible(&gateway, &identity(caller)).ok_or_else(|| no_skill(&name))?;
    let skill = skills.get(&name).ok_or_else(|| no_skill(&name))?;
    let text = skill.read_file(&path).map_err(ToolError::from)?;
    Ok(Json(SkillFile {
        skill: name,
        path,
        text,
    }))
}

/// The resource URI of `path` in skill `name`.
fn uri(name: &str, path: &str) -> String {
    format!(
        "{SKILL_URI_PREFIX}{name}/{}",
        utf8_percent_encode(path, PATH)
    )
}

/// The media type a file is served as, by its extension.
fn mime_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("md") => "text/markdown",
        Some("py") => "text/x-python",
        Some("sh") => "text/x-shellscript",
        Some("json") => "application/json",
        Some("yaml" | "yml") => "application/yaml",
        _ => "text/plain",
    }
}

/// The skill resources `identity` may list: per skill its `SKILL.md` (with the skill's
/// description), then its other files. A skill whose folder cannot be listed lists only its
/// `SKILL.md`.
pub(crate) fn resources(gateway: &Gateway, identity: &Identity) -> Vec<Resource> {
    let Some(skills) = visible(gateway, identity) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for skill in skills.all() {
        let name = skill.name();
        out.push(
            Resource::new(uri(name, "SKILL.md"), format!("{name}/SKILL.md"))
                .with_description(skill.description())
                .with_mime_type("text/markdown"),
        );
        for path in skill.files().unwrap_or_default() {
            if path == "SKILL.md" {
                continue;
            }
            out.push(
                Resource::new(uri(name, &path), format!("{name}/{path}"))
                    .with_mime_type(mime_type(&path)),
            );
        }
    }
    out
}

/// `resources/read` of a `skill://` URI.
///
/// # Errors
/// -32002 (resource not found) for a skill or file that is not there (or hidden from the
/// caller); -32602 for a path leading out of the skill's folder or a file that is not UTF-8
/// text; -32603 for another I/O error.
pub(crate) fn read(
    gateway: &Gateway,
    identity: &Identity,
    uri: &str,
) -> Result<ReadResourceResponse, McpError> {
    let not_found = || McpError::resource_not_found(format!("Resource {uri} not found"), None);
    let rest = uri.strip_prefix(SKILL_URI_PREFIX).ok_or_else(not_found)?;
    let (name, path) = rest.split_once('/').ok_or_else(not_found)?;
    let path = percent_decode_str(path)
        .decode_utf8()
        .map_err(|_| McpError::invalid_params(format!("{uri}: the path is not UTF-8"), None))?;
    let skills = visible(gateway, identity).ok_or_else(not_found)?;
    let skill = skills.get(name).ok_or_else(not_found)?;
    let text = skill.read_file(&path).map_err(|e| {
        let e = ToolError::from(e);
        match e.kind() {
            ErrorKind::NotFound => not_found(),
            ErrorKind::Internal => McpError::internal_error(e.message().to_owned(), None),
            _ => McpError::invalid_params(format!("{uri}: {}", e.message()), None),
        }
    })?;
    Ok(ReadResourceResponse::Complete(ReadResourceResult::new(
        vec![ResourceContents::text(text, uri).with_mime_type(mime_type(&path))],
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_escape_what_a_uri_cannot_hold_and_keep_slashes() {
        assert_eq!(
            uri("a", "references/x y.md"),
            "skill://a/references/x%20y.md"
        );
        assert_eq!(mime_type("scripts/clean.py"), "text/x-python");
        assert_eq!(mime_type("LICENSE"), "text/plain");
    }
}

/// The skills routes in the REST API's OpenAPI document (merged into it by `api_doc`).
#[derive(utoipa::OpenApi)]
#[openapi(
    paths(list_skills, get_skill, get_skill_file),
    components(schemas(SkillList, SkillSummary, SkillDetail, SkillFile)),
    tags((name = "skills", description = "Agent Skills: instructions and files a model loads when a task fits."))
)]
pub(crate) struct SkillsDoc;

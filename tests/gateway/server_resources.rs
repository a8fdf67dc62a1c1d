//! Resources and prompts of the MCP servers behind `toolgate serve`, seen through virtual
//! servers: server-everything runs twice (`everything` and `ev2`, both with resources and
//! prompts), and each virtual server's MCP endpoint lists, reads and gets only those of the
//! sources it includes — by an include selector naming the source, or by selecting one of its
//! tools — while the default endpoint keeps passing through both. The gateway's own skills
//! (`tests/skills`) are resources of a virtual server only when it selects `load_skill`.

use std::collections::BTreeSet;

use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams};
use toolgate::Toolset;
use toolgate::mcp::McpBackend;

use crate::harness::{self, Served};
use crate::mcp_http::runtime;

const ARCHITECTURE: &str = "demo://resource/static/document/architecture.md";

/// The skill every listing with skills has.
const SKILL: &str = "skill://release-notes/SKILL.md";

/// `docs` includes the source `everything`; `echo2` selects ev2's `echo` by name (so ev2 is
/// its source); `math` selects only the built-in `calc`; `skilled` selects `load_skill`.
fn served() -> Served {
    let mcp = harness::everything_stdio_entry("everything", "")
        + &harness::everything_stdio_entry("ev2", "");
    let gateway = r#"gateway:
  servers:
    - id: docs
      tools: {include: [{source: everything}]}
    - id: echo2
      tools: {include: [{name: "ev2.echo"}]}
    - id: math
      tools: {include: [{name: calc}]}
    - id: skilled
      tools: {include: [{name: load_skill}]}
"#;
    let skills = harness::repo_root().join("tests/skills");
    let yaml = harness::tools_yaml(&mcp, gateway).replacen(
        "\ntools:\n",
        &format!("\ntools:\n  skills:\n    - dir: {}\n", skills.display()),
        1,
    );
    assert!(yaml.contains("  skills:"), "{yaml}");
    harness::serve(&yaml, &[])
}

/// Whether the endpoint lists the skill resource [`SKILL`].
async fn lists_skills(backend: &McpBackend) -> bool {
    backend
        .list_resources()
        .await
        .expect("resources/list")
        .iter()
        .any(|r| r.uri == SKILL)
}

/// toolgate's own MCP client on the gateway's endpoint `path`: its backend and the toolset
/// that connected it.
async fn client(served: &Served, path: &str) -> (McpBackend, Toolset) {
    harness::mcp_client_at(served, path, &[]).await
}

/// The prompt names the endpoint lists.
async fn prompts(backend: &McpBackend) -> BTreeSet<String> {
    backend
        .list_prompts()
        .await
        .expect("prompts/list")
        .into_iter()
        .map(|p| p.name)
        .collect()
}

/// The source prefixes of `names` (`everything__simple-prompt` → `everything`).
fn sources(names: &BTreeSet<String>) -> BTreeSet<&str> {
    names
        .iter()
        .map(|n| n.split_once("__").map_or(n.as_str(), |(s, _)| s))
        .collect()
}

#[test]
fn each_virtual_server_lists_reads_and_gets_only_its_own_sources_resources_and_prompts() {
    let served = served();
    runtime().block_on(async {
        // The default endpoint: both servers' prompts, everything's resources.
        let (default, default_tools) = client(&served, "/mcp").await;
        let all = prompts(&default).await;
        assert_eq!(
            sources(&all),
            BTreeSet::from(["everything", "ev2"]),
            "{all:?}"
        );
        assert!(all.contains("everything__simple-prompt"), "{all:?}");

        // `docs` names the source `everything`: its prompts only, its resources readable.
        let (docs, docs_tools) = client(&served, "/mcp/docs").await;
        let listed = prompts(&docs).await;
        assert_eq!(
            sources(&listed),
            BTreeSet::from(["everything"]),
            "{listed:?}"
        );
        let resources = docs.list_resources().await.expect("resources/list");
        assert!(
            resources.iter().any(|r| r.uri == ARCHITECTURE),
            "{resources:?}"
        );
        docs.read_resource(ReadResourceRequestParams::new(ARCHITECTURE))
            .await
            .expect("docs reads everything's resource");
        docs.get_prompt(GetPromptRequestParams::new("everything__simple-prompt"))
            .await
            .expect("docs gets everything's prompt");
        let e = docs
            .get_prompt(GetPromptRequestParams::new("ev2__simple-prompt"))
            .await
            .expect_err("ev2's prompt is not docs'");
        assert!(e.message().contains("ev2__simple-prompt"), "{e:?}");

        // `echo2` selects one of ev2's tools: ev2's prompts, not everything's.
        let (echo2, echo2_tools) = client(&served, "/mcp/echo2").await;
        let listed = prompts(&echo2).await;
        assert_eq!(sources(&listed), BTreeSet::from(["ev2"]), "{listed:?}");

        // `math` includes no MCP source: nothing to list, read or get.
        let (math, math_tools) = client(&served, "/mcp/math").await;
        assert!(prompts(&math).await.is_empty());
        let resources = math.list_resources().await.expect("resources/list");
        assert!(resources.is_empty(), "{resources:?}");
        let templates = math
            .list_resource_templates()
            .await
            .expect("resources/templates/list");
        assert!(templates.is_empty(), "{templates:?}");
        let e = math
            .read_resource(ReadResourceRequestParams::new(ARCHITECTURE))
            .await
            .expect_err("math reaches no resource");
        assert!(e.message().contains("not found"), "{e:?}");
        math.get_prompt(GetPromptRequestParams::new("everything__simple-prompt"))
            .await
            .expect_err("math reaches no prompt");

        // Skills: on the default endpoint, and on a server that selects `load_skill` only.
        let (skilled, skilled_tools) = client(&served, "/mcp/skilled").await;
        assert!(lists_skills(&default).await);
        assert!(lists_skills(&skilled).await);
        skilled
            .read_resource(ReadResourceRequestParams::new(SKILL))
            .await
            .expect("skilled reads a skill");
        assert!(!lists_skills(&docs).await);
        math.read_resource(ReadResourceRequestParams::new(SKILL))
            .await
            .expect_err("math has no skills");

        for tools in [
            default_tools,
            docs_tools,
            echo2_tools,
            math_tools,
            skilled_tools,
        ] {
            tools.close().await;
        }
    });
}

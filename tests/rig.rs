//! The `rig` feature: a toolset's tools as rig tools. One toolset holds a local `#[tool]`
//! function compiled into the static table (the built-in `calc`), an OpenAPI operation served
//! by prism (the petstore's `getPetById`) and a tool of a real MCP server over stdio
//! (server-everything's `echo`); each is called through rig's own interfaces (`ToolSet::execute`,
//! `DynamicTool::execute`) and must give what a direct `Toolset::call` gives.

#[allow(clippy::duplicate_mod)]
#[path = "../runtime/tests/support/peers.rs"]
mod peers;
#[allow(dead_code, clippy::duplicate_mod)]
#[path = "openapi/prism.rs"]
mod prism;

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use toolgate::builtin::BuiltinSettings;
use toolgate::mcp::{McpBackend, McpConnection, McpOptions};
use toolgate::model::openapi::{ConvertOptions, Document, convert};
use toolgate::remote::RemoteSource;
use toolgate::rig::{ToolContext, ToolSet, dynamic_tool, dynamic_tools, rig_output, tool_set};
use toolgate::{Identity, OpenApiSource, Toolset};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

const PETSTORE: &str = "tests/specs/petstore/swagger-petstore3-openapi.yaml";

/// The built-ins, the petstore on `base_url` and server-everything over stdio, with `policy`.
async fn toolset(base_url: &str, policy: Value) -> Toolset {
    let doc = Document::from_file(repo().join(PETSTORE)).expect("the petstore reads");
    let conversion = convert(&doc, &ConvertOptions::default()).expect("it converts");
    let config: toolgate::model::config::OpenApiSource = serde_json::from_value(json!({
        "id": "petstore", "spec": PETSTORE, "base_url": base_url, "allow_private": true,
        "auth": {"schemes": {"api_key": "special-key", "petstore_auth": "token"}},
    }))
    .unwrap();
    let petstore = OpenApiSource::builder("petstore", conversion)
        .config(&config)
        .build()
        .expect("the petstore source builds");
    let everything = McpConnection::Stdio {
        program: peers::node().display().to_string(),
        args: vec![peers::everything_js().display().to_string(), "stdio".into()],
        env: Default::default(),
        cwd: None,
    };
    let everything = RemoteSource::builder(
        "everything",
        McpBackend::new("everything", everything, McpOptions::default()),
    )
    .build();
    let policy: toolgate::model::config::PolicyConfig =
        serde_json::from_value(policy).expect("the policy reads");
    let tools = toolgate::builtin::toolset(BuiltinSettings::default())
        .source(petstore)
        .source(everything)
        .policy(&policy)
        .build()
        .expect("the toolset builds");
    let statuses = tools.discover(2).await;
    assert!(
        statuses.iter().all(|s| s.error.is_none()),
        "every source discovered: {statuses:?}"
    );
    tools
}

/// The three tools and their arguments: `(name in the toolset, name a model sees, arguments)`.
fn calls() -> [(&'static str, &'static str, Value); 3] {
    [
        ("calc", "calc", json!({"expression": "6 * 7"})),
        (
            "petstore.getPetById",
            "petstore__getPetById",
            json!({"petId": 1}),
        ),
        (
            "everything.echo",
            "everything__echo",
            json!({"message": "hi rig"}),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rig_tool_set_calls_a_local_an_openapi_and_an_mcp_tool_like_the_toolset() {
    let mock = prism::Prism::start(&repo().join(PETSTORE));
    let tools = toolset(&mock.url(""), json!({})).await;
    let set: ToolSet = tool_set(&tools, &Identity::default());

    let definitions = set.tool_definitions();
    for (name, exported, _) in calls() {
        let definition = definitions
            .iter()
            .find(|d| d.name.as_str() == exported)
            .unwrap_or_else(|| panic!("{exported} is in the rig tool set"));
        let openai = tools
            .entry(name)
            .unwrap()
            .export(toolgate::Dialect::OpenAi)
            .unwrap();
        assert_eq!(definition.description, openai["description"], "{name}");
        assert_eq!(definition.parameters, openai["parameters"], "{name}");
    }

    for (name, exported, args) in calls() {
        let direct = tools.call(name, args.clone()).await.expect(name);
        assert!(!direct.is_error, "{name}: {direct:?}");
        let mut context = ToolContext::new();
        let through_set = set
            .execute(exported, args.to_string(), &mut context)
            .await
            .into_result()
            .unwrap_or_else(|e| panic!("{exported} through ToolSet::execute: {e:?}"));
        assert!(
            through_set == rig_output(&direct),
            "{name}: rig's result {through_set:?} equals the direct call's {direct:?}"
        );
        let tool = dynamic_tool(&tools, name, &Identity::default()).unwrap();
        let through_tool = tool.execute(args).await.expect(exported);
        assert!(
            through_tool == rig_output(&direct),
            "{name}: DynamicTool::execute"
        );
    }
    // The results carry what the tools did, not just equal shapes.
    let echo = set
        .execute(
            "everything__echo",
            r#"{"message":"hi rig"}"#,
            &mut ToolContext::new(),
        )
        .await
        .into_result()
        .unwrap();
    assert!(echo.render().contains("Echo: hi rig"), "{}", echo.render());
    let pet = set
        .execute(
            "petstore__getPetById",
            r#"{"petId":1}"#,
            &mut ToolContext::new(),
        )
        .await
        .into_result()
        .unwrap();
    assert!(pet.render().contains("\"name\""), "{}", pet.render());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rig_calls_go_through_the_policy_pipeline_as_the_given_caller() {
    let mock = prism::Prism::start(&repo().join(PETSTORE));
    let policy = json!({"rules": [{"tools": ["calc"], "roles": ["admin"]}]});
    let tools = toolset(&mock.url(""), policy).await;
    let anonymous = Identity::default();
    let admin = Identity {
        caller: Some("ada".into()),
        roles: vec!["admin".into()],
        ..Identity::default()
    };

    // The listing filter: an anonymous caller's tool set has no `calc`.
    let names = |tools: Vec<toolgate::rig::DynamicTool>| -> Vec<String> {
        tools.iter().map(|t| t.name().to_string()).collect()
    };
    assert!(!names(dynamic_tools(&tools, &anonymous)).contains(&"calc".to_string()));
    assert!(names(dynamic_tools(&tools, &admin)).contains(&"calc".to_string()));

    // Built for an admin, but a dispatch carrying another caller runs as that caller.
    let set = tool_set(&tools, &admin);
    let args = r#"{"expression":"1+1"}"#;
    let allowed = set.execute("calc", args, &mut ToolContext::new()).await;
    assert!(allowed.is_success(), "{allowed:?}");
    let mut as_anonymous = ToolContext::new().with_scope(Arc::new(anonymous));
    let refused = set.execute("calc", args, &mut as_anonymous).await;
    let error = refused.error().expect("an anonymous caller is refused");
    assert_eq!(error.code(), Some("permission_denied"), "{error:?}");

    // Bad arguments are the toolset's validation error, kind invalid_args.
    let bad = set
        .execute("calc", r#"{"expression": 7}"#, &mut ToolContext::new())
        .await;
    let error = bad.error().expect("a number is not an expression");
    assert_eq!(error.code(), Some("invalid_arguments"), "{error:?}");
    assert!(
        error.message().contains("expression"),
        "{}",
        error.message()
    );

    // An unknown name is rig's own not-found; a known one outside the toolset is ours.
    assert!(dynamic_tool(&tools, "nowhere", &admin).is_err());
}

//! A source that panics — while building its future (where generated code decodes arguments)
//! or while the future runs — gives an `internal` error; the caller and the toolset survive.

use std::sync::Arc;

use serde_json::{Value, json};
use toolgate_runtime::{
    ErrorKind, SourceTool, ToolContext, ToolDescriptor, ToolFuture, ToolOutput, ToolSource, Toolset,
};

struct Panicky {
    tools: Vec<Arc<ToolDescriptor>>,
}

impl Panicky {
    fn new() -> Self {
        let tool = |name: &str| {
            Arc::new(ToolDescriptor {
                name: name.into(),
                input_schema: json!({"type": "object", "properties": {}}),
                source: "panicky".into(),
                ..ToolDescriptor::default()
            })
        };
        Self {
            tools: vec![tool("panics_early"), tool("panics_late"), tool("fine")],
        }
    }
}

impl ToolSource for Panicky {
    fn id(&self) -> &str {
        "panicky"
    }
    fn tools(&self) -> Vec<SourceTool> {
        self.tools
            .iter()
            .map(|d| SourceTool::named(Arc::clone(d), d.name.as_str()))
            .collect()
    }
    fn call(
        self: Arc<Self>,
        tool: &SourceTool,
        _args: Value,
        _ctx: ToolContext,
    ) -> ToolFuture<'static> {
        match tool.name() {
            "panics_early" => panic!("while decoding"),
            "panics_late" => ToolFuture::new(async { panic!("while running") }),
            _ => ToolFuture::new(async { Ok(ToolOutput::text("ok")) }),
        }
    }
}

#[tokio::test]
async fn panics_become_internal_errors() {
    let tools = Toolset::builder().source(Panicky::new()).build().unwrap();
    for (name, what) in [
        ("panics_early", "while decoding"),
        ("panics_late", "while running"),
    ] {
        let e = tools.call(name, json!({})).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Internal, "{e}");
        assert!(e.message().contains(what), "{e}");
        let e = tools
            .call_with(name, json!({}), ToolContext::default())
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Internal, "{e}");
    }
    let out = tools.call("fine", json!({})).await.unwrap();
    assert_eq!(out.text_joined(), "ok");
}

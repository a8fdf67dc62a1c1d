//! The scale benchmark's toolsets (`benches/benches/scale.rs`): one synthetic OpenAPI 3.1
//! document of N operations compiled in by toolgate's codegen (`load: build`, `typed: false`),
//! for N = 10, 1 000 and 10 000. `benches/build/scale.rs` writes each size's document,
//! tools.yaml and generated code to `OUT_DIR/scale_n{N}/` and measures the codegen.
//!
//! Every size names its tools alike (`api.svc000_getCustomer`…): the first N operations of the
//! same sequence (five per resource: list, get, create, update, delete).

/// The 10-tool toolset.
pub mod n10 {
    include!(concat!(env!("OUT_DIR"), "/scale_n10/toolset.rs"));
}

/// The 1 000-tool toolset.
pub mod n1000 {
    include!(concat!(env!("OUT_DIR"), "/scale_n1000/toolset.rs"));
}

/// The 10 000-tool toolset.
pub mod n10000 {
    include!(concat!(env!("OUT_DIR"), "/scale_n10000/toolset.rs"));
}

mod facts {
    include!(concat!(env!("OUT_DIR"), "/scale_facts.rs"));
}

/// The cargo profile of the build whose build script generated the toolsets and timed the
/// codegen (`debug` or `release`).
pub const CODEGEN_PROFILE: &str = facts::PROFILE;

/// A tool every size has (the sixth operation: `GET /v1/svc000/customers/{customerId}`), as
/// toolgate names it.
pub const PROBE: &str = "api.svc000_getCustomer";

/// [`PROBE`] as a model sees it (the exported name, `{source}__{tool}`).
pub const PROBE_EXPORTED: &str = "api__svc000_getCustomer";

/// One generated size.
#[derive(Debug, Clone, Copy)]
pub struct Size {
    /// How many tools (operations).
    pub tools: usize,
    /// The generated `toolset()`: the builder preloaded with the compiled OpenAPI source.
    pub builder: fn() -> toolgate::ToolsetBuilder,
    /// Where its files are: `openapi.json`, `tools.yaml`, `toolset.rs`,
    /// `toolgate_openapi_api.json` (the embedded conversion).
    pub dir: &'static str,
    /// The codegen's time (`Builder::generate`) measured in the build script that generated
    /// it, in seconds.
    pub codegen_seconds: f64,
    /// The OpenAPI document's size in bytes (pretty-printed JSON).
    pub document_bytes: usize,
    /// The embedded conversion's size in bytes (in the binary's read-only data).
    pub embedded_bytes: usize,
    /// Lines of generated Rust.
    pub generated_lines: usize,
}

impl Size {
    /// The path of one of its files.
    pub fn file(&self, name: &str) -> std::path::PathBuf {
        std::path::Path::new(self.dir).join(name)
    }
}

/// The sizes, smallest first.
pub fn sizes() -> Vec<Size> {
    let size = |tools: usize, builder: fn() -> toolgate::ToolsetBuilder, dir: &'static str| {
        let &(_, codegen_seconds, document_bytes, embedded_bytes, generated_lines) = facts::FACTS
            .iter()
            .find(|f| f.0 == tools)
            .expect("the build script records every size");
        Size {
            tools,
            builder,
            dir,
            codegen_seconds,
            document_bytes,
            embedded_bytes,
            generated_lines,
        }
    };
    vec![
        size(10, n10::toolset, concat!(env!("OUT_DIR"), "/scale_n10")),
        size(
            1_000,
            n1000::toolset,
            concat!(env!("OUT_DIR"), "/scale_n1000"),
        ),
        size(
            10_000,
            n10000::toolset,
            concat!(env!("OUT_DIR"), "/scale_n10000"),
        ),
    ]
}

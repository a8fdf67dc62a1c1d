//! Compiles ./tools.yaml into the built-in toolset (the static dispatch table of `toolgate`).

fn main() {
    toolgate_codegen::compile("tools.yaml");
}

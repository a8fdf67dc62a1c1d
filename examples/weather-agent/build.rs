fn main() {
    // Reads tools.yaml, checks it against the crate's #[tool] functions, and writes the static
    // dispatch table to $OUT_DIR/toolgate_toolset.rs. A broken toolset fails the build here,
    // with the tools.yaml line.
    toolgate_codegen::compile("tools.yaml");
}

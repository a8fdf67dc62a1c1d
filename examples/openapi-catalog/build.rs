fn main() {
    // Reads tools.yaml and converts every OpenAPI document it names (at build time: a broken
    // document fails the build at its `spec:` line), writing the toolset and one JSON file per
    // source to $OUT_DIR.
    toolgate_codegen::compile("tools.yaml");
}

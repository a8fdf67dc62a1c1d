fn main() {
    toolgate_codegen::compile("tools.yaml");
}

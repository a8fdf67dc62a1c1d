//! Generates the benchmarks' toolsets: the hand-written tools of `src/lib.rs` (tools.yaml),
//! the synthetic toolsets of 10 / 150 / 1 000 tools the dispatch comparison needs
//! (`build/sized.rs`), and the synthetic OpenAPI toolsets of the scale benchmark
//! (`build/scale.rs`).

#[path = "build/scale.rs"]
mod scale;
#[path = "build/sized.rs"]
mod sized;

fn main() {
    toolgate_codegen::compile("tools.yaml");
    sized::generate();
    scale::generate();
    // The compiler that built the benchmarks, recorded with every results table.
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = std::process::Command::new(rustc)
        .arg("-V")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    println!("cargo:rustc-env=TOOLGATE_BENCH_RUSTC={version}");
}

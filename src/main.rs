//! The `toolgate` command: list, describe, export and call the tools of the built-in toolset.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}

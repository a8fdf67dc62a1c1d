//! The `toolgate` command: list, describe, export and call the tools of the built-in toolset.

mod cli;

fn main() -> std::process::ExitCode {
    // Before anything else: in a jq worker process this serves filters and never returns.
    toolgate::builtin::jq::worker_main_if_requested();
    // In a code-mode worker process: runs one Python snippet and exits.
    #[cfg(feature = "code-mode")]
    toolgate::code_mode::worker_main_if_requested();
    cli::main()
}

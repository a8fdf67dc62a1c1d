//! `toolgate serve`, run as an operator runs it: the binary on a tools.yaml, on 127.0.0.1, talked
//! to by real clients (inspector-cli, the MCP conformance suite, rmcp's client, plain HTTP) over
//! every transport, in front of real MCP servers.

mod harness;
// Prism mocking an OpenAPI document, shared with the `openapi` test binary (it loads the
// peers module that `harness` loads too).
#[allow(dead_code, clippy::duplicate_mod)]
#[path = "../openapi/prism.rs"]
mod prism;

mod a2a;
#[cfg(feature = "code-mode")]
mod code_mode;
mod code_mode_servers;
mod conformance;
mod connections;
mod console;
mod guardrails;
mod guardrails_cut;
mod inspector;
mod jq_bombs;
mod mcp_errors;
mod mcp_http;
mod oauth;
mod otel;
mod overrides;
mod passthrough;
mod policy_access;
mod policy_code;
mod policy_limits;
mod policy_resilience;
mod policy_telemetry;
mod reload;
mod reload_sources;
mod replicas;
mod rest;
mod schemathesis;
mod secrets;
mod self_openapi;
mod server_guardrails;
mod server_resources;
mod server_search;
mod servers;
mod skills;
mod sse;
mod stdio;
mod text_arguments;
mod token_exchange;
mod tool_scopes;
mod tool_search;
mod tool_search_sdk;
mod upstream_oauth;
mod upstream_stdio;

//! Tools for toolgate's benchmarks. Their bodies are trivial on purpose: the benchmarks measure
//! what toolgate adds around a call (lookup, argument decoding, dispatch, result conversion),
//! against the floor of decoding the same arguments with serde and calling the function directly.

use schemars::JsonSchema;
use serde::Deserialize;

/// Add two integers.
#[toolgate::tool(read_only)]
pub fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> i64 {
    a.wrapping_add(b)
}

/// Greet someone, `times` times.
#[toolgate::tool(read_only)]
pub fn greet(
    /// Who to greet.
    name: String,
    /// How many times.
    times: u32,
) -> String {
    let mut s = String::with_capacity(name.len() * times as usize + 6);
    s.push_str("hello ");
    for _ in 0..times {
        s.push_str(&name);
    }
    s
}

/// The arguments of [`greet`] as a hand-written serde struct: what the floor decodes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GreetArgs {
    /// Who to greet.
    pub name: String,
    /// How many times.
    pub times: u32,
}

/// The arguments of [`add`] as a hand-written serde struct.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddArgs {
    /// The first addend.
    pub a: i64,
    /// The second addend.
    pub b: i64,
}

/// The toolset generated from tools.yaml.
pub mod toolset {
    toolgate::include_toolset!();
}

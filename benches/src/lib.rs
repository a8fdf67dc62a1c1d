//! Tools for toolgate's benchmarks. Their bodies are trivial on purpose: the benchmarks measure
//! what toolgate adds around a call (lookup, argument decoding, dispatch, result conversion),
//! against the floor of decoding the same arguments with serde and calling the function directly.

pub mod harness;
pub mod pipeline;
pub mod report;
pub mod scale;
pub mod sized;

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

/// How search results are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Sort {
    /// Best match first.
    Relevance,
    /// Newest first.
    Newest,
}

/// A filter on search results.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Filter {
    /// Only this publication year.
    pub year: Option<i32>,
    /// Only results with all these tags.
    #[serde(default)]
    pub tags: Vec<String>,
}

fn ten() -> u32 {
    10
}

/// The arguments of [`search`]: a typical argument object (a string, a bounded number with a
/// default, an optional nested object with an array, an enum).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// What to look for.
    #[schemars(length(min = 1))]
    pub query: String,
    /// At most this many results.
    #[serde(default = "ten")]
    #[schemars(range(min = 1, max = 100))]
    pub limit: u32,
    /// Narrow the results.
    pub filter: Option<Filter>,
    /// The order.
    pub sort: Sort,
}

/// Search the catalogue (returns how many results were asked for).
#[toolgate::tool(read_only)]
pub fn search(args: SearchArgs) -> u32 {
    args.limit + u32::from(args.filter.is_some()) + u32::from(args.sort == Sort::Newest)
}

/// The toolset generated from tools.yaml.
pub mod toolset {
    toolgate::include_toolset!();
}

#[derive(serde::Deserialize)]
pub struct Query {
    pub text: String,
}

/// A lone `args` parameter is the whole arguments object, so it must be `JsonSchema` too.
#[toolgate::tool]
pub fn search(args: Query) -> String {
    args.text
}

fn main() {}

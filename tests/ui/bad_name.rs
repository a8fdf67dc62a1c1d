/// Spaces are not allowed in exported names.
#[toolgate::tool(name = "get weather")]
pub fn weather() -> String {
    String::new()
}

fn main() {}

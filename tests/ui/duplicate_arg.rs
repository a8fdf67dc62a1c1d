/// Two arguments cannot share one name.
#[toolgate::tool]
pub fn pair(first: u32, #[tool(rename = "first")] second: u32) -> u32 {
    first + second
}

fn main() {}

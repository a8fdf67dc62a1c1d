/// Argument parameters need a name: it is the JSON key.
#[toolgate::tool]
pub fn add((a, b): (u32, u32)) -> u32 {
    a + b
}

fn main() {}

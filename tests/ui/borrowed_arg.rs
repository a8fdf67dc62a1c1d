/// Arguments are decoded from JSON, so they must be owned.
#[toolgate::tool]
pub fn shout(text: &str) -> String {
    text.to_uppercase()
}

fn main() {}

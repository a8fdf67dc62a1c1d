/// Generic tools cannot be dispatched statically.
#[toolgate::tool]
pub fn identity<T: serde::de::DeserializeOwned>(value: T) -> String {
    let _ = value;
    String::new()
}

fn main() {}

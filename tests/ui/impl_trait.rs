/// `impl Trait` can be neither decoded nor described.
#[toolgate::tool]
pub fn show(value: impl std::fmt::Display) -> impl serde::Serialize {
    value.to_string()
}

fn main() {}

#[derive(schemars::JsonSchema)]
pub struct Opaque {
    pub inner: u32,
}

/// `Opaque` cannot be decoded from JSON.
#[toolgate::tool]
pub fn take(value: Opaque) -> u32 {
    value.inner
}

fn main() {}

#[derive(serde::Deserialize)]
pub struct Undescribed {
    pub inner: u32,
}

/// `Undescribed` has no JSON Schema.
#[toolgate::tool]
pub fn take(value: Undescribed) -> u32 {
    value.inner
}

fn main() {}

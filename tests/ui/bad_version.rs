/// A version must be a semantic version: a date is not one.
#[toolgate::tool(version = "2024-05-01")]
pub fn dated() -> String {
    String::new()
}

/// Nor is a leading `v`.
#[toolgate::tool(version = "v1.2.0")]
pub fn prefixed() -> String {
    String::new()
}

/// A full semantic version with a pre-release and build metadata is fine.
#[toolgate::tool(version = "1.2.0-rc.1+build.5")]
pub fn fine() -> String {
    String::new()
}

fn main() {}

/// An error that is neither `Display` nor `Into<ToolError>`.
#[derive(Debug)]
pub struct Oops;

/// The error of a tool must become a `ToolError`.
#[toolgate::tool]
pub fn fail() -> Result<String, Oops> {
    Err(Oops)
}

fn main() {}

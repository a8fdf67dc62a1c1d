pub struct Report {
    pub text: String,
}

/// The result is sent back as JSON, so it must be `Serialize`.
#[toolgate::tool]
pub fn report() -> Report {
    Report { text: String::new() }
}

/// The same inside a `Result`.
#[toolgate::tool]
pub fn try_report() -> Result<Report, String> {
    Ok(Report { text: String::new() })
}

fn main() {}

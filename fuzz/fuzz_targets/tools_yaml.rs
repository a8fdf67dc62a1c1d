//! tools.yaml text: the loader (YAML, shape, every rule, the location map), its diagnostics,
//! and the `${ENV}` interpolation syntax and rate limits it checks. Never a panic; an error is a
//! diagnostic that names a position inside the text.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use toolgate_model::config::{
    ConfigError, DisplayAll, Interpolated, ToolsConfig, parse_rate_limit,
};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match ToolsConfig::from_yaml_str(text, Path::new("tools.yaml")) {
        Ok(loaded) => {
            let _ = DisplayAll(&loaded.warnings).to_string();
            let _ = loaded.source_ids();
            let _ = serde_json::to_string(&loaded.config).expect("a loaded config serializes");
        }
        Err(ConfigError::Invalid(diagnostics)) => {
            assert!(
                !diagnostics.is_empty(),
                "an invalid file with no diagnostic"
            );
            let _ = DisplayAll(&diagnostics).to_string();
        }
        Err(other) => panic!("parsing text gave a non-parse error: {other}"),
    }
    // Each line as a value that may hold `${NAME}` references, and as a rate limit.
    for line in text.lines().take(64) {
        if let Ok(value) = Interpolated::new(line) {
            let _ = (value.variables(), value.files(), value.is_literal());
            let _ = format!("{value:?}");
        }
        let _ = parse_rate_limit(line);
    }
});

//! An OpenAPI document (JSON or YAML text): parsing, the version check, the conversion into
//! tools, and the export of each tool's schemas in every dialect. Never a panic and no
//! unbounded recursion, whatever the document.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolgate_model::dialect::{Dialect, ToolSchema, export_with_notes};
use toolgate_model::openapi::{ConvertOptions, Document, convert};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(doc) = Document::from_text(text, "fuzz.yaml") else {
        return;
    };
    let Ok(conversion) = convert(&doc, &ConvertOptions::default()) else {
        return;
    };
    let _ = serde_json::to_string(&conversion).expect("a conversion serializes");
    for tool in conversion.tools.iter().take(8) {
        let schema = ToolSchema {
            name: &tool.name,
            description: &tool.description,
            input_schema: &tool.input_schema,
            output_schema: tool.output_schema.as_ref(),
            annotations: None,
        };
        for dialect in Dialect::ALL {
            let _ = export_with_notes(dialect, &schema);
        }
    }
});

//! Argument validation and coercion: a tool's input schema (as a remote MCP server or an
//! OpenAPI document may give it) and the arguments a model sent, as two JSON values one after
//! the other. Under every policy: never a panic; arguments that pass are valid against the
//! schema as forwarded; arguments forwarded unchanged are reported with no coercion; a refusal
//! is `invalid_arguments`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolgate_runtime::{
    ArgumentPolicy, ArgumentValidator, ErrorKind, ExtraArguments, ValidationMode,
};

fuzz_target!(|data: &[u8]| {
    let mut values = serde_json::Deserializer::from_slice(data).into_iter::<Value>();
    let (Some(Ok(schema)), Some(Ok(args))) = (values.next(), values.next()) else {
        return;
    };
    let Ok(validator) = ArgumentValidator::compile("fuzz", &schema) else {
        return;
    };
    let valid = validator.is_valid(&args);
    assert_eq!(
        validator.validate("fuzz", &args).is_ok(),
        valid,
        "validate and is_valid disagree"
    );
    for mode in [ValidationMode::Strict, ValidationMode::Lenient] {
        let _ = validator.coerce(&args, mode);
        for extra in [ExtraArguments::Reject, ExtraArguments::Strip] {
            match validator.check("fuzz", args.clone(), ArgumentPolicy { mode, extra }) {
                Ok(checked) => {
                    assert!(
                        validator.is_valid(&checked.args),
                        "{mode:?}/{extra:?} forwarded arguments the schema refuses: {}",
                        checked.args
                    );
                    if checked.coercions.is_empty() {
                        assert_eq!(checked.args, args, "changed without a coercion reported");
                    }
                }
                Err(e) => {
                    assert_eq!(e.kind(), ErrorKind::InvalidArguments, "{e}");
                    let _ = e.to_string();
                }
            }
        }
    }
});

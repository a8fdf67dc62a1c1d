//! The `calc` tool's expression checks, parser and evaluator, on a thread with the 2 MiB stack
//! of the tokio blocking thread that runs it in the gateway: never a panic, a stack overflow
//! or a non-finite number returned.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolgate::builtin::calc::{CalcArgs, CalcValue, calc};

fuzz_target!(|data: &[u8]| {
    let Ok(expression) = std::str::from_utf8(data) else {
        return;
    };
    let expression = expression.to_string();
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            if let Ok(result) = calc(CalcArgs { expression }) {
                if let CalcValue::Float(f) = result.value {
                    assert!(f.is_finite(), "{f}");
                }
                let _ = serde_json::to_string(&result).expect("a result serializes");
            }
        })
        .expect("a thread")
        .join()
        .expect("calc panicked");
});

use super::*;

#[test]
fn invalid_arguments_names_every_pointer() {
    let e = ToolError::invalid_arguments(
        "search",
        vec![
            ArgumentError {
                pointer: "/limit".into(),
                message: "expected integer".into(),
            },
            ArgumentError {
                pointer: "".into(),
                message: "unknown argument `x`".into(),
            },
        ],
    );
    assert_eq!(e.kind(), ErrorKind::InvalidArguments);
    assert_eq!(
        e.message(),
        "invalid arguments for tool `search`: /limit: expected integer; unknown argument `x`"
    );
    assert_eq!(e.argument_errors().len(), 2);
    assert!(!e.is_retryable());
}

#[test]
fn serializes_without_source_and_round_trips() {
    let io = std::io::Error::other("secret-bearing detail");
    let e = ToolError::new(ErrorKind::RateLimited, "slow down")
        .with_retry_after(Duration::from_millis(1500))
        .with_source(io);
    let v = serde_json::to_value(&e).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"kind":"rate_limited","message":"slow down","retryable":true,"retry_after_ms":1500})
    );
    let back: ToolError = serde_json::from_value(v).unwrap();
    assert_eq!(back, e);
    assert!(e.report().contains("caused by: secret-bearing detail"));
}

#[test]
fn long_messages_are_cut_on_a_char_boundary() {
    let e = ToolError::upstream("é".repeat(10_000));
    assert!(e.message().len() < ToolError::MAX_MESSAGE_BYTES + 64);
    assert!(
        e.message().ends_with("[15904 more bytes not shown]"),
        "{}",
        &e.message()[4000..]
    );
}

#[test]
fn secrets_are_redacted_from_message_and_details() {
    let e = ToolError::upstream("401: you sent Bearer s3cr3t-token")
        .with_details(serde_json::json!({"content": [{"text": "s3cr3t-token again"}], "n": 1}))
        .redacted(&["s3cr3t-token", ""]);
    assert_eq!(e.message(), "401: you sent Bearer [redacted]");
    assert_eq!(
        e.details().unwrap()["content"][0]["text"],
        "[redacted] again"
    );
    assert_eq!(e.kind(), ErrorKind::Upstream);
}

#[test]
fn remembered_secrets_are_masked_before_the_message_is_cut() {
    crate::redact::remember(r#"err-"secret\-71c0e4"#);
    let long = format!("{}err-\"secret\\-71c0e4 end", "x".repeat(4080));
    let e = ToolError::upstream(long);
    assert!(!e.message().contains("err-"), "{}", &e.message()[4000..]);
    assert!(
        e.message().contains("[redacted]"),
        "{}",
        &e.message()[4000..]
    );
    let e = ToolError::upstream("x")
        .with_details(serde_json::json!({"said": r#"err-\"secret\\-71c0e4"#}));
    assert_eq!(e.details().unwrap()["said"], "[redacted]");
    let back: ToolError = serde_json::from_value(serde_json::json!(
        {"kind": "upstream", "message": r#"err-"secret\-71c0e4"#, "retryable": false}
    ))
    .unwrap();
    assert_eq!(back.message(), "[redacted]");
}

#[test]
fn kind_names_round_trip() {
    for k in ErrorKind::ALL {
        let s = serde_json::to_value(k).unwrap();
        assert_eq!(s, serde_json::Value::String(k.as_str().into()));
    }
}

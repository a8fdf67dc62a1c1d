use super::*;
use crate::policy::retry::test_support::{Scripted, call_of, scripted};
use tower::ServiceExt;

fn config(failures: u32, open_ms: u64) -> CircuitBreakerConfig {
    CircuitBreakerConfig {
        failures,
        open_ms,
        ..Default::default()
    }
}

fn service(
    config: CircuitBreakerConfig,
    script: Vec<Result<(), ToolError>>,
) -> (
    BreakerService<Scripted>,
    Arc<Breaker>,
    Arc<std::sync::atomic::AtomicU32>,
) {
    let breaker = Arc::new(Breaker::new("src", config));
    let (inner, seen) = scripted(script);
    let svc = BreakerLayer {
        breaker: Arc::clone(&breaker),
    }
    .layer(inner);
    (svc, breaker, seen)
}

fn network() -> ToolError {
    ToolError::new(ErrorKind::Network, "connection refused")
}

async fn run<S>(svc: &S) -> Result<ToolOutput, ToolError>
where
    S: Service<Call, Response = ToolOutput, Error = ToolError> + Clone,
{
    svc.clone()
        .oneshot(call_of("t", serde_json::json!({})))
        .await
}

#[tokio::test(start_paused = true)]
async fn opens_after_consecutive_failures_then_probe_closes() {
    let (svc, breaker, seen) = service(
        config(3, 1000),
        vec![
            Err(network()),
            Err(network()),
            Err(network()),
            Ok(()),
            Ok(()),
        ],
    );
    for _ in 0..3 {
        assert_eq!(run(&svc).await.unwrap_err().kind(), ErrorKind::Network);
    }
    assert_eq!(breaker.state().phase, Phase::Open);
    let e = run(&svc).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CircuitOpen);
    assert!(
            e.message()
                .starts_with("source `src`: circuit open after 3 consecutive failures (last: network: connection refused); retry in 1.0 s"),
            "{}",
            e.message()
        );
    assert_eq!(e.retry_after(), Some(Duration::from_millis(1000)));
    assert_eq!(
        seen.load(std::sync::atomic::Ordering::SeqCst),
        3,
        "refused calls are not sent"
    );

    tokio::time::advance(Duration::from_millis(400)).await;
    let e = run(&svc).await.unwrap_err();
    assert_eq!(e.retry_after(), Some(Duration::from_millis(600)));
    assert!(e.message().ends_with("retry in 0.6 s"), "{}", e.message());

    tokio::time::advance(Duration::from_millis(600)).await;
    assert_eq!(breaker.state().phase, Phase::HalfOpen);
    run(&svc).await.unwrap();
    assert_eq!(breaker.state().phase, Phase::Closed);
    run(&svc).await.unwrap();
    assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 5);
    assert_eq!(breaker.state().opened, 1);
}

#[tokio::test(start_paused = true)]
async fn failed_probe_reopens() {
    let (svc, breaker, _) = service(config(1, 500), vec![Err(network()), Err(network())]);
    run(&svc).await.unwrap_err();
    tokio::time::advance(Duration::from_millis(500)).await;
    let e = run(&svc).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Network, "the probe went through");
    let e = run(&svc).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CircuitOpen);
    assert!(
        e.message().contains("the probe call failed (last: network"),
        "{}",
        e.message()
    );
    assert_eq!(breaker.state().opened, 2);
}

#[tokio::test(start_paused = true)]
async fn one_probe_at_a_time() {
    let breaker = Arc::new(Breaker::new("src", config(1, 100)));
    breaker.record(false, Outcome::Failure, Some(&network()));
    tokio::time::advance(Duration::from_millis(100)).await;
    assert!(breaker.admit().unwrap(), "the first call probes");
    let e = breaker.admit().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CircuitOpen);
    assert!(
        e.message().contains("a probe call is in flight"),
        "{}",
        e.message()
    );
    // The probe's caller gave up: the next call probes.
    drop(Permit {
        breaker: Arc::clone(&breaker),
        probe: true,
        done: false,
    });
    assert!(breaker.admit().unwrap());
}

#[tokio::test(start_paused = true)]
async fn caller_mistakes_and_successes_do_not_open() {
    let (svc, breaker, _) = service(
        config(2, 1000),
        vec![
            Err(network()),
            Err(ToolError::new(ErrorKind::InvalidArguments, "bad")),
            Err(ToolError::upstream("404 not found")),
            Err(ToolError::new(ErrorKind::PermissionDenied, "no")),
            Ok(()),
            Err(network()),
            Err(ToolError::upstream("503").with_retryable(true)),
        ],
    );
    for _ in 0..4 {
        run(&svc).await.unwrap_err();
    }
    assert_eq!(
        breaker.state().consecutive_failures,
        1,
        "neutral errors count neither way"
    );
    run(&svc).await.unwrap();
    assert_eq!(
        breaker.state().consecutive_failures,
        0,
        "a success resets the count"
    );
    run(&svc).await.unwrap_err();
    assert_eq!(breaker.state().phase, Phase::Closed);
    run(&svc).await.unwrap_err();
    assert_eq!(
        breaker.state().phase,
        Phase::Open,
        "a retryable upstream error is a failure"
    );
}

#[tokio::test(start_paused = true)]
async fn error_rate_over_window() {
    let config = CircuitBreakerConfig {
        failures: 100,
        error_rate: Some(0.5),
        window_ms: 10_000,
        min_calls: 4,
        open_ms: 1000,
    };
    let breaker = Arc::new(Breaker::new("src", config));
    // Fail, ok, fail: 3 calls, under min_calls.
    breaker.record(false, Outcome::Failure, Some(&network()));
    breaker.record(false, Outcome::Success, None);
    breaker.record(false, Outcome::Failure, Some(&network()));
    assert_eq!(breaker.state().phase, Phase::Closed);
    // Those calls leave the window; two new calls, one failed: 2 calls, still under.
    tokio::time::advance(Duration::from_secs(11)).await;
    breaker.record(false, Outcome::Success, None);
    breaker.record(false, Outcome::Failure, Some(&network()));
    assert_eq!(breaker.state().phase, Phase::Closed);
    assert_eq!(breaker.state().window_calls, 2);
    breaker.record(false, Outcome::Success, None);
    breaker.record(false, Outcome::Failure, Some(&network()));
    let s = breaker.state();
    assert_eq!(s.phase, Phase::Open, "{s:?}");
    let e = breaker.admit().unwrap_err();
    assert!(
        e.message().contains("2 failures in the last 4 calls"),
        "{}",
        e.message()
    );
}

#[tokio::test(start_paused = true)]
async fn states_are_listed_per_source() {
    let state = State::default();
    let a = state.breaker("a", &config(1, 1000), Store::default());
    let again = state.breaker("a", &config(1, 1000), Store::default());
    assert!(Arc::ptr_eq(&a, &again), "one breaker per source");
    state.breaker("b", &config(1, 1000), Store::default());
    a.record(false, Outcome::Failure, Some(&network()));
    let states = state.states();
    assert_eq!(states.len(), 2);
    assert_eq!(
        (states[0].0.as_str(), states[0].1.phase),
        ("a", Phase::Open)
    );
    assert_eq!(
        (states[1].0.as_str(), states[1].1.phase),
        ("b", Phase::Closed)
    );
    assert_eq!(states[0].1.retry_in, Some(Duration::from_secs(1)));
}

//! Rate limits and budgets shared by the replicas through one Redis.

use super::{
    Balancer, KEY, OTHER_KEY, SESSION_KEY, calc_calls, count, gateway, redis_server, replicas,
    rest_calls,
};
use crate::harness::tools_yaml;

#[test]
fn a_caller_limit_and_a_budget_hold_across_replicas_sharing_redis() {
    let redis = redis_server();
    let store = format!(
        "store:\n  redis: {{url: \"redis://127.0.0.1:{}\"}}\n",
        redis.port()
    );
    // calc: 60 per hour per caller (no token comes back while the test runs). current_time: 0.01 a call against 0.25 per caller.
    let yaml = tools_yaml("", &format!("{}{store}", gateway(true))).replacen(
        "\npolicy:\n",
        "\npolicy:\n  tools:\n    calc: {caller_rate_limit: 60/h}\n    current_time: {cost_per_call: 0.01}\n  budgets: {per_caller: 0.25}\n",
        1,
    );
    assert!(yaml.contains("caller_rate_limit: 60/h"), "{yaml}");
    let replicas = replicas(3, &yaml, Some(SESSION_KEY));
    let lb = Balancer::start(&replicas.iter().collect::<Vec<_>>());

    // One replica alone would admit 60 of its own ~33: the three admit 60 in all.
    let statuses = rest_calls(lb.port(), "calc", KEY, 100);
    assert_eq!(
        (count(&statuses, 200), count(&statuses, 429)),
        (60, 40),
        "{statuses:?}"
    );
    let spread: Vec<u64> = replicas.iter().map(calc_calls).collect();
    eprintln!("calc calls admitted per replica: {spread:?}");
    assert!(spread.iter().all(|n| *n > 0), "{spread:?}");
    // Another caller has a bucket of its own.
    let statuses = rest_calls(lb.port(), "calc", OTHER_KEY, 5);
    assert_eq!(count(&statuses, 200), 5, "{statuses:?}");

    // The budget: 25 calls (0.25 / 0.01) in all, then 402, whichever replica answers.
    let statuses = rest_calls(lb.port(), "current_time", KEY, 40);
    assert_eq!(
        (count(&statuses, 200), count(&statuses, 402)),
        (25, 15),
        "{statuses:?}"
    );
}

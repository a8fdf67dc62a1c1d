//! The result cache shared by the replicas through Redis: a result computed on one replica is
//! a hit on the others for the tool's `cache_ttl_ms`; other arguments, or another caller, are
//! not.

use super::{KEY, OTHER_KEY, gateway, redis_server, replicas};
use crate::harness::{self, Served, tools_yaml};

/// A REST call of `current_time` (its result changes from one call to the next, so two equal
/// answers are one result, kept) on `replica` as the caller holding `key`: its body.
fn current_time(replica: &Served, key: &str, timezone: &str) -> String {
    let (status, text) = harness::request(
        replica.port(),
        "POST",
        "/tools/current_time/call",
        &[("X-API-Key", key), ("Content-Type", "application/json")],
        Some(&format!("{{\"time_zone\": \"{timezone}\"}}")),
    )
    .unwrap_or_else(|e| panic!("POST /tools/current_time/call: {e}\n{}", replica.log()));
    assert_eq!(status, 200, "{text}\n{}", replica.log());
    text
}

/// `replica`'s `/metrics` counter `name` for `current_time` (0 before its first sample).
fn counter(replica: &Served, name: &str) -> u64 {
    let (status, text) =
        harness::get(replica.port(), "/metrics", &[("X-API-Key", KEY)]).expect("GET /metrics");
    assert_eq!(status, 200, "{text}");
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) && l.contains("tool=\"current_time\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|v| v as u64)
        .sum()
}

#[test]
fn a_result_cached_on_one_replica_is_a_hit_on_the_others() {
    let redis = redis_server();
    let store = format!(
        "store:\n  redis: {{url: \"redis://127.0.0.1:{}\"}}\n",
        redis.port()
    );
    let yaml = tools_yaml("", &format!("{}{store}", gateway(false))).replacen(
        "\npolicy:\n",
        "\npolicy:\n  tools:\n    current_time: {cache_ttl_ms: 600000}\n",
        1,
    );
    assert!(yaml.contains("cache_ttl_ms: 600000"), "{yaml}");
    let replicas = replicas(2, &yaml, None);
    let (a, b) = (&replicas[0], &replicas[1]);

    let first = current_time(a, KEY, "UTC");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let second = current_time(b, KEY, "UTC");
    assert_eq!(first, second, "replica B answers with A's result");
    assert_eq!(
        (
            counter(a, "toolgate_cache_misses_total"),
            counter(b, "toolgate_cache_hits_total"),
            counter(b, "toolgate_cache_misses_total"),
        ),
        (1, 1, 0),
        "A ran the tool; B found its result in Redis"
    );

    // Other arguments, and another caller, are results of their own.
    current_time(b, KEY, "Europe/Paris");
    current_time(b, OTHER_KEY, "UTC");
    assert_eq!(counter(b, "toolgate_cache_misses_total"), 2);
    // And those are hits on A now.
    current_time(a, KEY, "Europe/Paris");
    current_time(a, OTHER_KEY, "UTC");
    assert_eq!(counter(a, "toolgate_cache_hits_total"), 2);
    assert_eq!(counter(a, "toolgate_cache_misses_total"), 1);
}

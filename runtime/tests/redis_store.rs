//! Rate limits and budgets shared by several toolsets ("replicas") through a real
//! redis-server (`scripts/install-peers.sh` installs it; each test starts its own on a free
//! 127.0.0.1 port and kills it when it ends):
//! `cargo test -p toolgate-runtime --features redis --test redis_store`.
#![cfg(feature = "redis")]

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::redis::Redis;
use toolgate_model::config::{PolicyConfig, RedisStore};
use toolgate_runtime::store::SharedStore;
use toolgate_runtime::testing::StubSource;
use toolgate_runtime::{ErrorKind, ToolContext, ToolError, ToolOutput, Toolset};

/// How long redis-server gets to answer PING after it starts, and shared answers to resume.
const DEADLINE: Duration = Duration::from_secs(30);

/// A store on `url` with `prefix`, both features failing `fail` (`closed` or `open`).
fn store(url: &str, prefix: &str, fail: &str) -> SharedStore {
    let config: RedisStore = serde_json::from_value(json!({
        "url": url,
        "key_prefix": prefix,
        "fail": {"rate_limits": fail, "budgets": fail},
    }))
    .unwrap();
    SharedStore::connect(&config).expect("a store")
}

/// A "replica": tools `search` and `limited` (answering `ok`) under `policy`, sharing `store`.
fn replica(policy: &Value, store: SharedStore) -> (Toolset, StubSource) {
    let stubs = StubSource::new("local")
        .stub("search", |_| Ok(ToolOutput::text("ok")))
        .stub("limited", |_| Ok(ToolOutput::text("ok")));
    let policy: PolicyConfig = serde_json::from_value(policy.clone()).expect("policy JSON");
    let tools = Toolset::builder()
        .source(stubs.clone())
        .policy(&policy)
        .shared_store(store)
        .build()
        .unwrap();
    (tools, stubs)
}

async fn call(tools: &Toolset, tool: &str, caller: &str) -> Result<ToolOutput, ToolError> {
    let ctx = ToolContext::builder().caller(caller).build();
    tools.call_with(tool, json!({}), ctx).await
}

/// A prefix no other test uses.
fn prefix(name: &str) -> String {
    format!("test-{name}-{}", std::process::id())
}

#[tokio::test]
async fn two_replicas_admit_a_caller_limit_once_between_them() {
    let redis = Redis::start();
    let policy = json!({"tools": {"search": {"caller_rate_limit": "60/m"}}});
    let p = prefix("share");
    let (a, _) = replica(&policy, store(&redis.url(), &p, "closed"));
    let (b, _) = replica(&policy, store(&redis.url(), &p, "closed"));
    let started = Instant::now();
    let mut ok = 0;
    let mut refused = Vec::new();
    for i in 0..100 {
        let tools = if i % 2 == 0 { &a } else { &b };
        match call(tools, "search", "alice").await {
            Ok(_) => ok += 1,
            Err(e) => refused.push(e),
        }
    }
    let elapsed = started.elapsed();
    // One token a second refills: exactly 60 when the 100 calls took under a second, one more
    // per second they took beyond (never more: the check is atomic across the replicas).
    let most = 60 + elapsed.as_secs() as usize;
    assert!((60..=most).contains(&ok), "{ok} admitted in {elapsed:?}");
    assert_eq!(ok + refused.len(), 100);
    for e in &refused {
        assert_eq!(e.kind(), ErrorKind::RateLimited, "{e}");
        let wait = e.retry_after().expect("a retry_after");
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_secs(1),
            "{wait:?}"
        );
        assert_eq!(e.details().unwrap()["scope"], "caller");
        assert!(
            e.message().starts_with(
                "tool `search`: rate limit 60/m per caller (caller `alice`) reached; retry in "
            ),
            "{}",
            e.message()
        );
    }
    // Another caller has a bucket of its own.
    assert!(call(&b, "search", "bob").await.is_ok());
}

#[tokio::test]
async fn a_wider_bucket_refusing_takes_no_token_of_the_narrower_one() {
    let redis = Redis::start();
    let policy = json!({
        "sources": {"local": {"source_rate_limit": "1/h"}},
        "tools": {"search": {"caller_rate_limit": "5/h"}},
    });
    let p = prefix("narrow");
    let (a, stubs) = replica(&policy, store(&redis.url(), &p, "closed"));
    let (b, _) = replica(&policy, store(&redis.url(), &p, "closed"));
    assert!(call(&a, "search", "alice").await.is_ok());
    let mut raw = redis.client().await;
    let alice = format!("{p}:rl:caller:5/3600000ms:search:alice");
    let tat: String = redis::cmd("GET")
        .arg(&alice)
        .query_async(&mut raw)
        .await
        .unwrap();
    for tools in [&a, &b, &a] {
        let e = call(tools, "search", "alice").await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::RateLimited);
        assert_eq!(e.details().unwrap()["scope"], "source", "{e}");
        assert!(
            e.message()
                .contains("rate limit 1/h of source `local` (shared by its tools) reached"),
            "{}",
            e.message()
        );
        assert!(e.retry_after().unwrap() > Duration::from_secs(3000));
    }
    // The source refused: alice's own bucket is as the first call left it.
    let after: String = redis::cmd("GET")
        .arg(&alice)
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(after, tat);
    // A caller only ever refused by the source has no bucket at all.
    assert!(call(&b, "search", "bob").await.is_err());
    let bob: bool = redis::cmd("EXISTS")
        .arg(format!("{p}:rl:caller:5/3600000ms:search:bob"))
        .query_async(&mut raw)
        .await
        .unwrap();
    assert!(!bob);
    // Idle buckets expire by themselves.
    let ttl: i64 = redis::cmd("PTTL")
        .arg(&alice)
        .query_async(&mut raw)
        .await
        .unwrap();
    assert!(ttl > 0 && ttl <= 720_000 + 1000, "{ttl}");
    assert_eq!(stubs.calls().len(), 1);
}

#[tokio::test]
async fn a_caller_budget_is_spent_once_across_replicas_and_refunds_what_did_not_run() {
    let redis = Redis::start();
    let policy = json!({
        "budgets": {"per_caller": 0.05},
        "tools": {
            "search": {"cost_per_call": 0.01},
            "limited": {"cost_per_call": 0.01, "rate_limit": "1/h"},
        },
    });
    let p = prefix("budget");
    let (a, _) = replica(&policy, store(&redis.url(), &p, "closed"));
    let (b, _) = replica(&policy, store(&redis.url(), &p, "closed"));
    let mut ok = 0;
    for i in 0..20 {
        let tools = if i % 2 == 0 { &a } else { &b };
        match call(tools, "search", "alice").await {
            Ok(_) => ok += 1,
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::BudgetExceeded, "{e}");
                assert_eq!(
                    e.message(),
                    "tool `search`: budget per_caller of caller `alice` exceeded: limit 0.05 USD, \
                     spent 0.05 USD, this call costs 0.01 USD"
                );
            }
        }
    }
    assert_eq!(ok, 5, "floor(0.05 / 0.01) calls");
    let mut raw = redis.client().await;
    let spent = |caller: &str| format!("{p}:budget:per_caller:{caller}");
    let alice: u64 = redis::cmd("GET")
        .arg(spent("alice"))
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(alice, 50_000);

    // Refused by the rate limit below the budget: charged, then given back.
    assert!(call(&a, "limited", "bob").await.is_ok());
    for tools in [&a, &b] {
        let e = call(tools, "limited", "bob").await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::RateLimited, "{e}");
    }
    let bob: u64 = redis::cmd("GET")
        .arg(spent("bob"))
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(bob, 10_000, "only the call that ran stays charged");
}

#[tokio::test]
async fn while_redis_is_down_closed_refuses_and_open_decides_alone() {
    const PASSWORD: &str = "redis-pw-7c41e9a0";
    let mut redis = Redis::start_with(Some(PASSWORD));
    let policy = json!({
        "budgets": {"per_caller": 1.0},
        "tools": {"search": {"caller_rate_limit": "2/h", "cost_per_call": 0.01}},
    });
    let closed_store = store(&redis.url(), &prefix("closed"), "closed");
    let (closed, closed_stubs) = replica(&policy, closed_store.clone());
    let (open, open_stubs) = replica(&policy, store(&redis.url(), &prefix("open"), "open"));
    assert!(call(&closed, "search", "alice").await.is_ok());
    assert!(call(&open, "search", "alice").await.is_ok());
    assert_eq!(closed_store.health().last_ok, Some(true));
    redis.kill();

    for _ in 0..3 {
        let started = Instant::now();
        let e = call(&closed, "search", "carol").await.unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(e.kind(), ErrorKind::Network, "{e}");
        assert!(e.is_retryable());
        assert_eq!(e.retry_after(), Some(Duration::from_secs(1)));
        assert!(
            e.message().starts_with("shared store (Redis) "),
            "{}",
            e.message()
        );
        assert!(!e.message().contains(PASSWORD), "{}", e.message());
        let details = e.details().unwrap();
        assert_eq!(details["store"], "redis");
        // The budget layer is the outer one: it meets the store first.
        assert_eq!(details["feature"], "budgets");
    }
    assert_eq!(
        closed_stubs.calls().len(),
        1,
        "nothing ran while the store was down"
    );
    let health = closed_store.health();
    assert_eq!(health.last_ok, Some(false));
    let why = health.last_error.expect("why the last command failed");
    assert!(!why.contains(PASSWORD), "{why}");
    assert!(!health.address.contains(PASSWORD), "{}", health.address);

    // Open: this replica's own buckets (2/h for carol) and budgets decide.
    assert!(call(&open, "search", "carol").await.is_ok());
    assert!(call(&open, "search", "carol").await.is_ok());
    let e = call(&open, "search", "carol").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::RateLimited, "{e}");
    assert_eq!(open_stubs.calls().len(), 3);
}

/// Calls `tool` as `caller` until the answer is no store failure, within [`DEADLINE`].
async fn until_shared(tools: &Toolset, tool: &str, caller: &str) {
    let until = Instant::now() + DEADLINE;
    loop {
        match call(tools, tool, caller).await {
            Err(e) if e.kind() == ErrorKind::Network => {
                assert!(Instant::now() < until, "still no shared answer: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            _ => return,
        }
    }
}

#[tokio::test]
async fn after_redis_restarts_the_replicas_share_again_by_themselves() {
    let mut redis = Redis::start();
    let policy = json!({"tools": {"search": {"caller_rate_limit": "3/h"}}});
    let p = prefix("restart");
    let (a, _) = replica(&policy, store(&redis.url(), &p, "closed"));
    let (b, _) = replica(&policy, store(&redis.url(), &p, "closed"));
    assert!(call(&a, "search", "probe").await.is_ok());
    assert!(call(&b, "search", "probe").await.is_ok());
    redis.kill();
    let e = call(&a, "search", "alice").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Network, "{e}");
    let e = call(&b, "search", "alice").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Network, "{e}");

    redis.restart();
    until_shared(&a, "search", "probe").await;
    until_shared(&b, "search", "probe").await;
    let mut ok = 0;
    for i in 0..10 {
        let tools = if i % 2 == 0 { &a } else { &b };
        match call(tools, "search", "alice").await {
            Ok(_) => ok += 1,
            Err(e) => assert_eq!(e.kind(), ErrorKind::RateLimited, "{e}"),
        }
    }
    assert_eq!(ok, 3, "one limit between the two replicas again");
}

#[tokio::test]
async fn gateways_with_different_prefixes_do_not_share() {
    let redis = Redis::start();
    let policy = json!({"tools": {"search": {"caller_rate_limit": "2/h"}}});
    let (a, _) = replica(&policy, store(&redis.url(), &prefix("gw-a"), "closed"));
    let (b, _) = replica(&policy, store(&redis.url(), &prefix("gw-b"), "closed"));
    for tools in [&a, &b] {
        let admitted = {
            let mut n = 0;
            for _ in 0..5 {
                if call(tools, "search", "alice").await.is_ok() {
                    n += 1;
                }
            }
            n
        };
        assert_eq!(admitted, 2);
    }
}

//! `notifications/tools/list_changed` across replicas: an MCP server behind the gateway tells
//! only the session it holds with one replica that its tools changed; a client connected to
//! another replica must hear it too (the replicas pass it on through Redis pub/sub).

use std::time::{Duration, Instant};

use serde_json::json;

use super::{KEY, SESSION_KEY, gateway, redis_server, replicas};
use crate::harness::{self, peers, tools_yaml};
use crate::mcp_http::{client, runtime};

#[test]
fn a_tool_list_change_heard_by_one_replica_reaches_clients_of_the_others() {
    let redis = redis_server();
    // One upstream for all replicas, each with a session of its own. Its `add_tool` adds tool
    // `b` for every session but says so only to the session that called it.
    let script = peers::http_session_server_py();
    let upstream = peers::spawn_http_peer_retry(
        peers::python3(),
        &[script.to_str().unwrap(), "{port}"],
        &[("TOOLS_CHANGE", "1")],
    );
    let mcp = format!(
        "    - id: up\n      http:\n        url: \"{}\"\n",
        upstream.url("/mcp")
    );
    let store = format!(
        "store:\n  redis: {{url: \"redis://127.0.0.1:{}\"}}\n",
        redis.port()
    );
    let yaml = tools_yaml(&mcp, &format!("{}{store}", gateway(true)));
    let replicas = replicas(3, &yaml, Some(SESSION_KEY));
    let auth = format!("Bearer {KEY}");
    let headers = [("Authorization", auth.as_str())];

    // Readiness names the store and says it answers (without changing the status).
    let (status, body) = harness::request(replicas[0].port(), "GET", "/readyz", &[], None).unwrap();
    assert_eq!(status, 200, "{body}");
    let ready: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(ready["store"]["store"], "redis", "{ready}");
    assert_eq!(ready["store"]["ok"], true, "{ready}");
    assert_eq!(
        ready["store"]["address"],
        format!("127.0.0.1:{}/0", redis.port()),
        "{ready}"
    );

    runtime().block_on(async {
        // Clients connected straight to replicas B and C (each holds its own stream of
        // notifications), and the caller of the change on replica A.
        let on_b = client(&replicas[1], &headers).await;
        let on_c = client(&replicas[2], &headers).await;
        let on_a = client(&replicas[0], &headers).await;
        for tools in [&on_a, &on_b, &on_c] {
            assert!(tools.describe("gw.up__add_tool").is_some());
            assert!(tools.describe("gw.up__b").is_none());
        }

        let added = on_a.call("gw.up__add_tool", json!({})).await.unwrap();
        assert_eq!(added.text_joined(), "added b", "{added:?}");

        // Clients list again only when told that the tools changed: `b` shows up on B's and
        // C's clients only if their replica heard of the change and said so.
        let deadline = Instant::now() + Duration::from_secs(20);
        for (name, tools, served) in [("B", &on_b, &replicas[1]), ("C", &on_c, &replicas[2])] {
            while tools.describe("gw.up__b").is_none() {
                assert!(
                    Instant::now() < deadline,
                    "the client on replica {name} never heard that the tools changed: {:?}\n{}",
                    tools
                        .tools()
                        .iter()
                        .map(|d| d.name.clone())
                        .collect::<Vec<_>>(),
                    served.log()
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let out = tools
                .call("gw.up__b", json!({"message": format!("via {name}")}))
                .await
                .unwrap();
            assert_eq!(out.text_joined(), format!("via {name}"), "{out:?}");
        }
        for tools in [on_a, on_b, on_c] {
            tools.close().await;
        }
    });
}

//! Sessions across replicas: a session opened on one replica is served by the others when they
//! share a session key, and a session id that is altered, foreign or another caller's is
//! refused.

use super::{
    Balancer, KEY, OTHER_KEY, SESSION_KEY, STRANGER_KEY, calc_calls, gateway, list_in,
    open_session, python_client, replicas,
};
use crate::harness::tools_yaml;

#[test]
fn a_session_and_stateless_requests_are_served_by_every_replica_without_a_failure() {
    let yaml = tools_yaml("", &gateway(true));
    let replicas = replicas(3, &yaml, Some(SESSION_KEY));
    let lb = Balancer::start(&replicas.iter().collect::<Vec<_>>());
    let url = lb.url("/mcp");

    let session = python_client(&url, KEY, "initialize", 100);
    assert_eq!(session["failures"], 0, "{session}");
    assert_eq!(session["ok"], 100, "{session}");
    assert!(
        session["version"]
            .as_str()
            .is_some_and(|v| v < "2026-07-28"),
        "an initialize-era session: {session}"
    );
    let stateless = python_client(&url, KEY, "discover", 100);
    assert_eq!(stateless["failures"], 0, "{stateless}");
    assert_eq!(stateless["ok"], 100, "{stateless}");

    let spread: Vec<u64> = replicas.iter().map(calc_calls).collect();
    eprintln!("calc calls per replica (200 in all, round robin): {spread:?}");
    assert_eq!(spread.iter().sum::<u64>(), 200, "{spread:?}");
    for (i, n) in spread.iter().enumerate() {
        // Round robin over three: each replica serves about a third of the requests.
        assert!(*n >= 20, "replica {i} served {n} of 200 calls: {spread:?}");
    }
}

#[test]
fn without_a_session_key_a_session_ends_when_a_request_reaches_another_replica() {
    // The failure the session key removes: the test above could not pass without it.
    let yaml = tools_yaml("", &gateway(false));
    let replicas = replicas(3, &yaml, None);
    let lb = Balancer::start(&replicas.iter().collect::<Vec<_>>());
    let session = python_client(&lb.url("/mcp"), KEY, "initialize", 10);
    assert!(
        session["ok"].as_u64().unwrap_or(0) < 10,
        "every call of a session made it through replicas that do not share it: {session}"
    );
}

#[test]
fn a_session_id_is_refused_when_altered_foreign_or_used_by_another_caller() {
    let yaml = tools_yaml("", &gateway(true));
    let ours = replicas(2, &yaml, Some(SESSION_KEY));
    let stranger = replicas(1, &yaml, Some(STRANGER_KEY));
    let id = open_session(ours[0].port(), KEY);
    assert!(id.starts_with("tg1."), "a sealed id: {id}");

    // The other replica resumes it (it never saw the initialize).
    let (status, body) = list_in(ours[1].port(), KEY, &id);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"calc\""), "{body}");

    // Another caller with a valid credential may not use it, on either replica.
    for replica in &ours {
        let (status, body) = list_in(replica.port(), OTHER_KEY, &id);
        assert_eq!(status, 403, "{body}");
    }
    // A gateway with another key does not know it: a session that ended (404).
    let (status, body) = list_in(stranger[0].port(), KEY, &id);
    assert_eq!(status, 404, "{body}");
    // One character changed anywhere: 404 on a replica that does not hold the session.
    let mut altered = id.clone().into_bytes();
    let at = altered.len() / 2;
    altered[at] = if altered[at] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).expect("ASCII");
    let fresh = replicas(1, &yaml, Some(SESSION_KEY));
    let (status, body) = list_in(fresh[0].port(), KEY, &altered);
    assert_eq!(status, 404, "{body}");
    // ...while the id as given still works there.
    let (status, body) = list_in(fresh[0].port(), KEY, &id);
    assert_eq!(status, 200, "{body}");
}

#[test]
fn inspector_cli_sessions_are_served_across_replicas() {
    // Each inspector-cli run is a whole session (initialize, initialized, tools/call, DELETE),
    // its requests handed to the replicas in turn: no two of them reach the same one in a
    // row, so every call runs on a replica that did not see the session's initialize.
    let yaml = tools_yaml("", &gateway(true));
    let replicas = replicas(3, &yaml, Some(SESSION_KEY));
    let lb = Balancer::start(&replicas.iter().collect::<Vec<_>>());
    let url = lb.url("/mcp");
    let header = format!("X-API-Key: {KEY}");
    for i in 0..6 {
        let expression = format!("expression={i}*7");
        let out = crate::inspector::inspector(&[
            &url,
            "--header",
            &header,
            "--transport",
            "http",
            "--method",
            "tools/call",
            "--tool-name",
            "calc",
            "--tool-arg",
            &expression,
        ]);
        assert_eq!(out["structuredContent"]["value"], i * 7, "run {i}: {out}");
    }
    let spread: Vec<u64> = replicas.iter().map(calc_calls).collect();
    eprintln!("inspector-cli calls per replica: {spread:?}");
    assert_eq!(spread.iter().sum::<u64>(), 6, "{spread:?}");
}

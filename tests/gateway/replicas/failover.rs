//! A replica that dies under load: the balancer sends the rest of the session to the others.

use super::{
    Balancer, KEY, SESSION_KEY, calc_calls, gateway, replicas, report, start_python_client,
};
use crate::harness::tools_yaml;

#[test]
fn a_replica_killed_under_load_fails_only_its_call_in_flight_and_the_session_goes_on() {
    let yaml = tools_yaml("", &gateway(true));
    let mut replicas = replicas(3, &yaml, Some(SESSION_KEY));
    let lb = Balancer::start(&replicas.iter().collect::<Vec<_>>());
    const CALLS: usize = 300;
    let client = start_python_client(&lb.url("/mcp"), KEY, "initialize", CALLS);
    // Kill a replica once the session is well under way (a third of the calls done).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while replicas.iter().map(calc_calls).sum::<u64>() < (CALLS / 3) as u64 {
        assert!(
            std::time::Instant::now() < deadline,
            "the client made too few calls in 120 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut killed = replicas.remove(1);
    let served_before = calc_calls(&killed);
    killed.process.kill(); // SIGKILL of its process group: no grace, no goodbye
    let session = report(client.wait_with_output().expect("the Python client ends"));
    eprintln!(
        "after a SIGKILL of one of three replicas at call ~{}: {session}",
        CALLS / 3
    );
    let ok = session["ok"].as_u64().unwrap_or(0);
    let failures = session["failures"].as_u64().unwrap_or(u64::MAX);
    assert_eq!(
        ok + failures,
        CALLS as u64,
        "every call got an answer: {session}"
    );
    // Sequential calls: at most the one in flight when the replica went away fails.
    assert!(failures <= 1, "{session}");
    let after: u64 = replicas.iter().map(calc_calls).sum();
    // The killed replica may finish a call or two between the read of its count and the
    // SIGKILL (the client does not wait for the test): those are the slack.
    assert!(
        after + served_before + 2 >= ok,
        "the rest of the session ran on the other replicas: {after} + {served_before} vs {session}"
    );
    assert!(after > (CALLS / 3) as u64, "{after}");
}

//! A shard whose network stalls without closing (issue 31, faults mid-run): its link
//! taken down mid-run, so nothing arrives and nothing says goodbye. The coordinator
//! must name it within a bounded time, end the run with exit 1, and keep the other
//! shard's figures, marked.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::shards_cli::{lines_until, spawn_headroom, wait};
use crate::support::{assert_adds_up, read_summary, require, Nginx, TestBridge};

/// How long the coordinator waits for a silent shard (`SILENCE` in
/// `src/shard/coordinator.rs`), plus the time the others take to stop and report.
const NAMED_WITHIN: Duration = Duration::from_secs(10 + 8);

#[test]
fn a_shard_whose_link_goes_down_is_named_silent_and_the_others_figures_are_kept() {
    let Some(bridge) = require(
        "a bridge for the shards' network namespaces (root, iproute2)",
        TestBridge::create(),
    ) else {
        return;
    };
    let nginx = Nginx::start_logged(bridge.gateway.into());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.json");
    let url = format!("http://{}/", nginx.addr());
    let (mut child, rx) = spawn_headroom(&[
        "run",
        "--url",
        &url,
        "--rate",
        "100",
        "--duration",
        "60s",
        "--shards",
        "2",
        "--shard-netns",
        &bridge.name,
        "--out",
        out.to_str().unwrap(),
    ]);
    lines_until(&rx, "coordinating 2 shards");
    lines_until(&rx, " 2s/1m00s]");
    // Shard 1's side of its veth pair, on the bridge (`hr{pid}s1` + `o`): down, the
    // shard's packets go nowhere and no reset comes back.
    let link = format!("hr{}s1o", child.id() % 100_000);
    let down = Command::new("ip")
        .args(["link", "set", &link, "down"])
        .status()
        .unwrap();
    assert!(down.success(), "ip link set {link} down");
    let stalled = Instant::now();
    let code = wait(&mut child);
    let took = stalled.elapsed();
    let said: Vec<String> = rx.try_iter().collect();
    let said = said.join("\n");
    assert_eq!(code, 1, "{said}");
    assert!(took <= NAMED_WITHIN, "named after {took:?}: {said}");
    assert!(
        said.contains("shard 1") && said.contains("silent"),
        "{said}"
    );

    // The other shard's figures, stopped early and kept; the silent one's left out.
    let s = read_summary(&out);
    assert_adds_up(&s);
    assert!(s.interrupted);
    assert_eq!(s.shards.len(), 2);
    assert_eq!(s.shards[1].status, "lost", "{:?}", s.shards[1]);
    assert!(
        s.shards[1]
            .error
            .as_deref()
            .unwrap_or("")
            .contains("silent"),
        "{:?}",
        s.shards[1]
    );
    assert_eq!(s.shards[0].status, "interrupted", "{:?}", s.shards[0]);
    assert!(s.shards[0].requests >= 100, "{:?}", s.shards[0]);
    assert_eq!(s.requests, s.shards[0].requests);
}

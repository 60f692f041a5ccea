//! Helpers shared by the integration tests in `tests/tests.rs`.
//!
//! - [`Nginx`]: a real nginx on a free loopback port, stopped when dropped.
//! - [`headroom_bin`] and [`run_headroom`]: the built `headroom` binary, run with a
//!   time limit; [`stdout`], [`stderr`] and [`assert_exit`] read what it did.
//! - [`run_with_summary`] and [`read_summary`]: `headroom run --out` and the summary
//!   JSON it wrote.
//! - [`hostile::Hostile`]: a misbehaving HTTP server on loopback (floods, resets, ...).
//! - [`free_port`]: a loopback port that was free a moment ago.
//! - [`http_get`]: one plain GET, to read back what a target holds; [`http_post`]: one
//!   empty POST, to poke a target's `/admin/*`.
//! - [`RouteGuide`]: grpc-go's route_guide example server (a peer) on a free port.
//! - [`journey::GoHttpbin`] and [`journey::JourneyApp`] (a Django login behind CSRF
//!   protection): the application journeys' peers on free ports, and
//!   [`journey::exchange`]: one request whose every header (`Set-Cookie`s) is kept.
//! - [`KubeCluster`]: a throwaway Kubernetes control plane on loopback with one Node,
//!   and [`NodeAgent`]: the test-only kubelet that runs that node's pods as local
//!   processes in network namespaces on the cluster's 10.200.X.0/24 bridge.
//! - [`Cluster`]: a throwaway PostgreSQL cluster on a free loopback port.
//! - [`require`]: a test's prerequisite, or a skip when it is missing here (a failure
//!   when `HEADROOM_REQUIRE_ALL` is set, as `scripts/test.sh` does);
//!   [`machine_feature`]: the same for what no package installs, always a skip.
//! - [`Chromium`]: headless Chromium driven through the DevTools protocol, with what
//!   its page logged and requested, and [`Shot`]: a screenshot's pixels.
//!
//! Every address used here is on 127.0.0.1 (or in 10.200.0.0/16 inside network
//! namespaces a test made); no helper opens a fixed port.

// Each test module uses a different subset of these helpers.
#![allow(dead_code)]

pub(crate) mod certs;
mod chromium;
mod headroom;
pub(crate) mod hostile;
mod http;
pub(crate) mod journey;
mod keep_alive;
pub(crate) mod kube;
pub(crate) mod kube_agent;
mod netns;
mod nginx;
pub(crate) mod peers;
// The library's throwaway PostgreSQL cluster, shared rather than copied.
#[path = "../../crates/testbed/src/pg_cluster.rs"]
mod pg_cluster;
mod ports;
pub(crate) mod route_guide;
#[cfg(test)]
mod self_test;
mod summary;
// Skip-or-fail for a missing prerequisite; the crates' unit tests include it by path,
// as they do `alloc.rs` beside it (the counting allocator of their hostile-input tests).
mod require;

pub(crate) use self::kube::KubeCluster;
pub(crate) use chromium::{
    contrast, luminance, runtime as chromium_runtime, saturated, Chromium, Shot,
};
pub(crate) use headroom::{
    assert_exit, headroom_bin, run_command, run_headroom, stderr, stdout, test_store,
};
pub(crate) use http::{http_get, http_post};
pub(crate) use keep_alive::{keep_alive_server, keep_alive_writer};
pub(crate) use kube_agent::NodeAgent;
pub(crate) use netns::TestBridge;
pub(crate) use nginx::{Nginx, NginxExtra, NginxH2, NginxTls, JSON_BODY};
pub(crate) use peers::peer_path;
pub(crate) use pg_cluster::Cluster;
pub(crate) use ports::{free_port, refusing_port};
pub(crate) use require::{machine_feature, require};
pub(crate) use route_guide::{route_guide_proto, RouteGuide};
pub(crate) use summary::{assert_adds_up, assert_clean, read_summary, run_with_summary};

/// A throwaway cluster that preloads `pg_stat_statements` (with `settings` besides),
/// the extension created in its database; `None` where PostgreSQL cannot run here
/// (the caller skips; a failure when `HEADROOM_REQUIRE_ALL` is set, see [`require`]).
pub(crate) fn statements_cluster(settings: &[&str]) -> Option<Cluster> {
    let mut all = vec!["shared_preload_libraries=pg_stat_statements"];
    all.extend_from_slice(settings);
    let cluster = require(
        "a PostgreSQL server with pg_stat_statements",
        Cluster::start_with(&all),
    )?;
    create_pg_stat_statements(&cluster.url());
    Some(cluster)
}

/// A throwaway cluster; `None` where PostgreSQL cannot run here (the caller skips; a
/// failure when `HEADROOM_REQUIRE_ALL` is set, see [`require`]).
pub(crate) fn postgres_cluster() -> Option<Cluster> {
    require("a PostgreSQL server", Cluster::start())
}

/// Creates `pg_stat_statements` in a test cluster's database (the cluster must preload it).
pub(crate) fn create_pg_stat_statements(url: &str) {
    pg_execute(url, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
}

/// Runs `sql` (statements separated by `;`) in a test cluster's database.
pub(crate) fn pg_execute(url: &str, sql: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .expect("connect to the test cluster");
        tokio::spawn(conn);
        client
            .batch_execute(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    });
}

/// `n` bytes of words in an order a generator picks: text gzip has work to do on.
pub(crate) fn prose(n: usize) -> Vec<u8> {
    const WORDS: &[&str] = &[
        "load",
        "target",
        "latency",
        "worker",
        "master",
        "queue",
        "ceiling",
        "knee",
        "rate",
        "shard",
        "socket",
        "request",
        "response",
        "budget",
        "percentile",
        "histogram",
    ];
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut out = Vec::with_capacity(n + 16);
    while out.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(WORDS[(x % WORDS.len() as u64) as usize].as_bytes());
        out.push(if x.is_multiple_of(11) { b'\n' } else { b' ' });
    }
    out
}

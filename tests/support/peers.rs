//! Servers nobody here wrote (a WebSocket echo, an SSE endpoint, a GraphQL server, a
//! gRPC example server, go-httpbin, a Django app), installed once per machine by
//! `scripts/peers.sh` into `$HEADROOM_PEERS` (default `~/.cache/headroom/peers`). The
//! test command runs that script first, so there a missing peer is a broken machine:
//! [`peer_path`] fails the test; [`peer_file`] goes through `support::require`, a
//! failure under `HEADROOM_REQUIRE_ALL` (which the test command sets) and a skip in a
//! test run by hand without the peer.

use std::path::PathBuf;

/// The peers' cache directory, as `scripts/peers.sh` fills it.
pub(crate) fn peers_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("HEADROOM_PEERS") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").expect("HOME is set");
    PathBuf::from(home).join(".cache/headroom/peers")
}

/// A file under the peers' cache that must exist; fails the test naming the fix.
#[track_caller]
pub(crate) fn peer_path(relative: &str) -> PathBuf {
    let path = peers_dir().join(relative);
    assert!(
        path.exists(),
        "{} is missing: run `bash scripts/peers.sh` (the test command does)",
        path.display()
    );
    path
}

/// A file under the peers' cache, or why not (naming the fix): for a test that does
/// without a missing peer through `support::require`.
pub(crate) fn peer_file(relative: &str) -> Result<PathBuf, String> {
    let path = peers_dir().join(relative);
    if path.exists() {
        Ok(path)
    } else {
        Err(format!(
            "{} is missing: run `bash scripts/peers.sh`",
            path.display()
        ))
    }
}

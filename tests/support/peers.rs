//! Servers nobody here wrote (a WebSocket echo, an SSE endpoint, a GraphQL server, a
//! gRPC example server), installed once per machine by `scripts/peers.sh` into
//! `$HEADROOM_PEERS` (default `~/.cache/headroom/peers`). The test command runs that
//! script first, so a missing peer is a failure here, never a skip.

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

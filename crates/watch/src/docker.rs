//! `docker:NAME`: a container's cgroup, found through the Docker Engine API on its unix
//! socket (`GET /containers/NAME/json` → `State.Pid` → `/proc/PID/cgroup`), then
//! watched as a cgroup. Without a reachable engine the watch cannot start.

use std::os::unix::net::UnixStream;
use std::time::Duration;

use super::cgroup::cgroup_of;
use super::error::ProbeError;
use super::http;

/// Where the engine listens unless `DOCKER_HOST` names another `unix://` socket.
const DEFAULT_SOCKET: &str = "/var/run/docker.sock";

/// The engine's socket path: `DOCKER_HOST=unix:///path` or the default.
fn socket_path() -> String {
    std::env::var("DOCKER_HOST")
        .ok()
        .and_then(|h| h.strip_prefix("unix://").map(String::from))
        .unwrap_or_else(|| DEFAULT_SOCKET.to_string())
}

/// The cgroup v2 path of container `name`, or why it cannot be found.
pub(crate) fn container_cgroup(name: &str) -> Result<String, ProbeError> {
    container_cgroup_at(&socket_path(), name)
}

/// [`container_cgroup`], asking the engine on `socket`.
fn container_cgroup_at(socket: &str, name: &str) -> Result<String, ProbeError> {
    let stream = UnixStream::connect(socket).map_err(|source| ProbeError::NoDocker {
        socket: socket.to_owned(),
        source,
    })?;
    let timeout = Some(Duration::from_secs(5));
    stream
        .set_read_timeout(timeout)
        .map_err(ProbeError::DockerSocket)?;
    stream
        .set_write_timeout(timeout)
        .map_err(ProbeError::DockerSocket)?;
    let (status, body) = http::get(stream, "docker", &format!("/containers/{name}/json"))?;
    match status {
        200 => {}
        404 => {
            return Err(ProbeError::NoContainer {
                name: name.to_string(),
            })
        }
        other => {
            return Err(ProbeError::DockerStatus {
                status: other,
                name: name.to_string(),
            })
        }
    }
    let info: serde_json::Value = serde_json::from_slice(&body).map_err(ProbeError::DockerReply)?;
    let pid = info["State"]["Pid"]
        .as_u64()
        .filter(|&p| p > 0)
        .ok_or_else(|| ProbeError::NotRunning {
            name: name.to_string(),
        })?;
    cgroup_of(pid as u32).ok_or_else(|| ProbeError::NoContainerCgroup {
        name: name.to_string(),
        pid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_an_engine_the_error_says_so() {
        // A socket path nothing listens on, whether or not this machine runs Docker.
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("docker.sock");
        let socket = socket.to_str().unwrap();
        let err = container_cgroup_at(socket, "db").unwrap_err().to_string();
        assert!(
            err.contains(&format!("no Docker engine is reachable at {socket}")),
            "{err}"
        );
    }
}

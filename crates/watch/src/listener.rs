//! Which process serves a TCP port on this machine ([`listener`]): the one a `find`
//! that no watch explained should watch, named in its conclusion.

use std::collections::HashSet;

use procfs::net::TcpState;
use procfs::process::FDTarget;

/// The process listening on TCP `port` (IPv4 or IPv6, any local address) and its
/// command name; of a tree that shares the socket (a master and its workers), the one
/// whose parent does not hold it. `None` when no readable process listens there.
pub fn listener(port: u16) -> Option<(u32, String)> {
    let tables = [procfs::net::tcp(), procfs::net::tcp6()];
    let inodes: HashSet<u64> = tables
        .into_iter()
        .flat_map(Result::unwrap_or_default)
        .filter(|e| e.state == TcpState::Listen && e.local_address.port() == port)
        .map(|e| e.inode)
        .collect();
    if inodes.is_empty() {
        return None;
    }
    let holders: Vec<(i32, i32, String)> = procfs::process::all_processes()
        .ok()?
        .filter_map(Result::ok)
        .filter(|p| {
            p.fd().is_ok_and(|fds| {
                fds.filter_map(Result::ok)
                    .any(|f| matches!(f.target, FDTarget::Socket(i) if inodes.contains(&i)))
            })
        })
        .filter_map(|p| {
            let stat = p.stat().ok()?;
            Some((p.pid, stat.ppid, stat.comm))
        })
        .collect();
    let pids: HashSet<i32> = holders.iter().map(|h| h.0).collect();
    holders
        .into_iter()
        .filter(|(_, ppid, _)| !pids.contains(ppid))
        .min_by_key(|h| h.0)
        .and_then(|(pid, _, comm)| Some((u32::try_from(pid).ok()?, comm)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_this_process_listening_and_nothing_on_a_closed_port() {
        let socket = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = socket.local_addr().unwrap().port();
        let (pid, _) = listener(port).expect("our own listener");
        assert_eq!(pid, std::process::id());
        drop(socket);
        assert_eq!(listener(port), None);
    }
}

//! Local ports toward one target: how many of the ephemeral range a new connection to
//! it can still take ([`free_toward`]), and how many the next step may need
//! ([`needed`]).
//!
//! A connection to the target takes a local port from
//! `/proc/sys/net/ipv4/ip_local_port_range` that no other socket toward the same
//! address and port holds (in any state, TIME_WAIT included) and that no listener has
//! bound. Sockets toward *other* addresses do not count: the kernel reuses a local
//! port for a different destination. Nor do TIME_WAIT sockets when the kernel may
//! reuse them for new outgoing connections: `tcp_tw_reuse` 1, or 2 (Linux's default)
//! toward loopback, with TCP timestamps on. The reuse waits for a TIME_WAIT socket's
//! last timestamp to be a second old, which a cooldown of a second or more covers.

use std::io::Read;
use std::net::SocketAddr;

use procfs::net::{TcpNetEntry, TcpState};

use crate::client::ConnectionModel;
use crate::metrics::summary::Summary;
use crate::plan::{Load, Plan};

/// Connections the next step may hold at once are multiplied by this...
pub const MARGIN: f64 = 2.0;
/// ...and this many more ports are asked for, for the warm-up's connections and the
/// odd reconnect.
pub const SLACK: usize = 100;

/// Local ports toward a target, from the tables in /proc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ports {
    /// Ports in the ephemeral range.
    pub range: usize,
    /// Of those, ports a new connection to the target cannot take now.
    pub taken: usize,
}

impl Ports {
    /// Ports a new connection to the target can take.
    pub fn free(&self) -> usize {
        self.range.saturating_sub(self.taken)
    }
}

/// Local ports toward `target` on this machine, or `None` when /proc cannot be read
/// (not Linux, or no /proc).
pub fn free_toward(target: SocketAddr) -> Option<Ports> {
    let range = port_range(&read_small("/proc/sys/net/ipv4/ip_local_port_range")?)?;
    let v4 = procfs::net::tcp().ok()?;
    // A host without IPv6 has no tcp6 table: that is zero sockets, not an error.
    let v6 = procfs::net::tcp6().unwrap_or_default();
    let reuse = time_wait_reusable(
        read_small("/proc/sys/net/ipv4/tcp_tw_reuse").as_deref(),
        read_small("/proc/sys/net/ipv4/tcp_timestamps").as_deref(),
        target,
    );
    let taken = taken(&v4, target, range, reuse) + taken(&v6, target, range, reuse);
    Some(Ports {
        range: usize::from(range.1 - range.0) + 1,
        taken,
    })
}

/// Ports of the range `(low, high)` that `entries` keep from a new connection to
/// `target`: sockets toward it (TIME_WAIT ones only when `reuse` is false) and
/// listeners.
pub fn taken(entries: &[TcpNetEntry], target: SocketAddr, range: (u16, u16), reuse: bool) -> usize {
    let target = (target.ip().to_canonical(), target.port());
    entries
        .iter()
        .filter(|e| (range.0..=range.1).contains(&e.local_address.port()))
        .filter(|e| match e.state {
            TcpState::Listen => true,
            TcpState::TimeWait if reuse => false,
            _ => {
                let remote = e.remote_address;
                (remote.ip().to_canonical(), remote.port()) == target
            }
        })
        .count()
}

/// Parses `ip_local_port_range` (`32768\t60999`): `None` unless two ports, low ≤ high.
pub fn port_range(text: &str) -> Option<(u16, u16)> {
    let mut parts = text.split_whitespace().map(|p| p.parse::<u16>().ok());
    let (low, high) = (parts.next()??, parts.next()??);
    (parts.next().is_none() && low <= high).then_some((low, high))
}

/// Whether the kernel may hand a TIME_WAIT socket's port to a new connection toward
/// `target`, given the text of `tcp_tw_reuse` and `tcp_timestamps`.
pub fn time_wait_reusable(
    tw_reuse: Option<&str>,
    timestamps: Option<&str>,
    target: SocketAddr,
) -> bool {
    let flag = |t: Option<&str>| t.and_then(|t| t.trim().parse::<u8>().ok());
    let loopback = target.ip().to_canonical().is_loopback();
    flag(timestamps).is_some_and(|t| t != 0)
        && match flag(tw_reuse) {
            Some(1) => true,
            Some(2) => loopback,
            _ => false,
        }
}

/// Ports to have free before a step at `value` (in the plan's unit): twice the
/// connections it may hold at once, plus [`SLACK`]. The connections: the
/// `connections` cap when set; else the rate times the previous step's p99 latency
/// (at least 1 ms), within the in-flight cap; a user each in the closed model.
pub fn needed(plan: &Plan, value: f64, previous: Option<&Summary>) -> usize {
    let at_once = match (&plan.load, plan.client.connection) {
        (_, ConnectionModel::Shared(Some(c))) => c as f64,
        (Load::ArrivalRate { max_in_flight, .. }, _) => {
            let p99_s = previous.map_or(0.0, |s| s.latency_ms.p99 / 1000.0);
            let p99_s = if p99_s.is_finite() {
                p99_s.max(0.001)
            } else {
                0.001
            };
            (value * p99_s).min(*max_in_flight as f64)
        }
        (Load::Users { .. }, _) => value,
    };
    (at_once.max(0.0) * MARGIN).ceil() as usize + SLACK
}

/// The first bytes of a small /proc file as text, `None` when unreadable.
fn read_small(path: &str) -> Option<String> {
    let mut text = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(256)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{self, Overrides};

    fn entries(text: &str) -> Vec<TcpNetEntry> {
        use procfs::FromBufReadSI;
        let header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n";
        procfs::net::TcpNetEntries::from_buf_read(
            format!("{header}{text}").as_bytes(),
            procfs::current_system_info(),
        )
        .unwrap()
        .0
    }

    #[test]
    fn counts_the_ports_a_connection_to_the_target_cannot_take() {
        // 0x1F90 = 8080; local ports 0x8000 = 32768 .. 0x8004, and 0x0400 = 1024
        // (outside the range); 0x0100007F = 127.0.0.1, 0x0200007F = 127.0.0.2.
        // States: 01 ESTABLISHED, 06 TIME_WAIT, 0A LISTEN.
        let e = entries(
            "   0: 0100007F:8000 0100007F:1F90 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000000000000000\n\
             1: 0100007F:8001 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 20 4 30 10 -1\n\
             2: 0100007F:8002 0200007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 20 4 30 10 -1\n\
             3: 0100007F:0400 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 20 4 30 10 -1\n\
             4: 00000000:8003 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 20 4 30 10 -1\n\
             5: 0100007F:8004 0100007F:0050 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000000000000000\n",
        );
        assert_eq!(e.len(), 6);
        let target: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let range = (32768, 60999);
        // The TIME_WAIT and the established socket toward it, and the listener.
        assert_eq!(taken(&e, target, range, false), 3);
        // With TIME_WAIT reuse, only the established one and the listener.
        assert_eq!(taken(&e, target, range, true), 2);
        let v6: SocketAddr = "[::ffff:127.0.0.1]:8080".parse().unwrap();
        assert_eq!(taken(&e, v6, range, false), 3);
        let other: SocketAddr = "127.0.0.1:9090".parse().unwrap();
        assert_eq!(taken(&e, other, range, false), 1);
    }

    #[test]
    fn reads_the_port_range_and_the_reuse_flags() {
        assert_eq!(port_range("32768\t60999\n"), Some((32768, 60999)));
        assert_eq!(port_range("1024 1024"), Some((1024, 1024)));
        for bad in ["", "32768", "60999 32768", "1 2 3", "a b", "70000 80000"] {
            assert_eq!(port_range(bad), None, "{bad:?}");
        }
        let lo: SocketAddr = "127.0.0.1:80".parse().unwrap();
        // Only parsed, never connected to: an address off loopback (in the test
        // namespace range) for the rule that reuses TIME_WAIT on loopback alone.
        let far: SocketAddr = "10.200.0.1:80".parse().unwrap();
        assert!(time_wait_reusable(Some("2\n"), Some("1\n"), lo));
        assert!(!time_wait_reusable(Some("2\n"), Some("1\n"), far));
        assert!(time_wait_reusable(Some("1"), Some("1"), far));
        assert!(!time_wait_reusable(Some("1"), Some("0"), far));
        assert!(!time_wait_reusable(Some("0"), Some("1"), lo));
        assert!(!time_wait_reusable(None, Some("1"), lo));
    }

    #[test]
    fn this_machine_has_a_port_range_and_connections_take_ports() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let ports = free_toward(addr).expect("/proc is readable");
        assert!(ports.range > 1000, "{ports:?}");
        // Listeners anywhere on the machine (other tests bind port 0) take ports too.
        assert!(ports.taken < ports.range / 2, "{ports:?}");
        let held: Vec<_> = (0..3)
            .map(|_| std::net::TcpStream::connect(addr).unwrap())
            .collect();
        let with = free_toward(addr).unwrap();
        assert!(with.taken >= 3, "{with:?}");
        assert_eq!(with.free(), with.range - with.taken);
        drop(held);
    }

    fn plan(extra: impl FnOnce(&mut Overrides)) -> Plan {
        let mut o = Overrides {
            url: Some("http://127.0.0.1:9/work".into()),
            rate: Some(10.0),
            ..Overrides::default()
        };
        extra(&mut o);
        scenario::load(None, &o).unwrap()
    }

    #[test]
    fn the_next_step_needs_twice_its_connections_plus_slack() {
        let mut prev = Summary::empty("t", 1.0);
        prev.latency_ms.p99 = 50.0;
        // 2000/s × 50 ms = 100 connections at once.
        let open = plan(|_| {});
        assert_eq!(needed(&open, 2000.0, Some(&prev)), 300);
        // The in-flight cap bounds it; the connections cap replaces it.
        let capped = plan(|o| o.max_in_flight = Some(20));
        assert_eq!(needed(&capped, 2000.0, Some(&prev)), 140);
        let pooled = plan(|o| o.connections = Some(64));
        assert_eq!(needed(&pooled, 1e6, Some(&prev)), 228);
        // Users own a connection each.
        let users = plan(|o| {
            o.rate = None;
            o.users = Some(1);
        });
        assert_eq!(needed(&users, 500.0, None), 1100);
        // Without a previous step, 1 ms each.
        assert_eq!(needed(&open, 10_000.0, None), 120);
    }
}

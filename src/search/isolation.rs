//! Isolation between search steps, so one step's leftovers do not tip the next one's
//! result: a minimum cooldown, then a bounded wait for what can affect the next step
//! ([`between_steps`]).
//!
//! What can: local ports. A step that closed thousands of connections leaves their
//! ports in TIME_WAIT for a minute; if the next step needs more ports toward the
//! target than are free, its connections fail. So after the cooldown the wait lasts
//! until enough ports of the ephemeral range are free toward the target
//! ([`ports::free_toward`]) for the connections the next step may open
//! ([`ports::needed`], or a count the user gives, [`PortRule`]). When enough are free
//! it does not wait at all: TIME_WAIT sockets that leave plenty of ports free change
//! nothing, and waiting for them to drain (Linux keeps them 60 s) costs minutes and
//! achieves nothing. A TIME_WAIT count can still be required
//! ([`IsolationOptions::time_wait_limit`]). The wait gives up at
//! [`IsolationOptions::drain_timeout`], or as soon as the shortfall stops shrinking
//! for [`IsolationOptions::stall_after`] ([`STALL_AFTER`] by default): sockets created together expire together, so a count that does
//! not move will not move soon. Scenario hooks (see [`super::hooks`]) cover the rest
//! of the system under test.

pub mod ports;

use std::net::SocketAddr;
use std::str::FromStr;
use std::time::{Duration, Instant};

use procfs::net::{TcpNetEntry, TcpState};
use serde::{Deserialize, Serialize};

use super::hooks::sleep_unless_stopped;
use crate::engine::Control;

/// By default the wait gives up when the shortfall has not shrunk for this long.
pub const STALL_AFTER: Duration = Duration::from_secs(5);
/// How often the wait looks again.
const POLL: Duration = Duration::from_millis(250);

/// How many free local ports toward the target the next step waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PortRule {
    /// As many as the next step may need ([`ports::needed`]).
    #[default]
    Auto,
    /// This many.
    Free(usize),
    /// None: do not look at ports.
    Off,
}

/// A `--free-ports` value that is not `auto`, `off` or a count.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected auto, off or a number of ports, found {found:?}")]
pub struct PortRuleError {
    /// The value given.
    pub found: String,
}

impl FromStr for PortRule {
    type Err = PortRuleError;

    /// Parses `auto`, `off` or a port count.
    fn from_str(s: &str) -> Result<PortRule, PortRuleError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(PortRule::Auto),
            "off" => Ok(PortRule::Off),
            n => n.parse().map(PortRule::Free).map_err(|_| PortRuleError {
                found: s.to_string(),
            }),
        }
    }
}

/// How long to rest between steps and what must be true before the next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IsolationOptions {
    /// Minimum wait after a step.
    pub cooldown: Duration,
    /// Free local ports toward the target to wait for.
    pub ports: PortRule,
    /// When set, also wait until at most this many sockets toward the target's port
    /// are in TIME_WAIT...
    pub time_wait_limit: Option<usize>,
    /// ...for no longer than this (the report then says the wait gave up)...
    pub drain_timeout: Duration,
    /// ...and giving up once the shortfall has not shrunk for this long.
    pub stall_after: Duration,
}

impl Default for IsolationOptions {
    /// 2 s cooldown; then up to 30 s for the ports the next step needs.
    fn default() -> Self {
        IsolationOptions {
            cooldown: Duration::from_secs(2),
            ports: PortRule::Auto,
            time_wait_limit: None,
            drain_timeout: Duration::from_secs(30),
            stall_after: STALL_AFTER,
        }
    }
}

/// Where the next step connects and what it may need.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NextStep {
    /// The target's address (`None` when it does not resolve: no port rule then).
    pub addr: Option<SocketAddr>,
    /// The target's port.
    pub port: u16,
    /// Free ports it needs under [`PortRule::Auto`] ([`ports::needed`]).
    pub ports_needed: usize,
}

/// What the wait before a step did.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct IsolationReport {
    /// Seconds of cooldown.
    pub cooldown_s: f64,
    /// TIME_WAIT sockets toward the target after the cooldown (`None`: /proc unreadable).
    pub time_wait_before: Option<usize>,
    /// TIME_WAIT sockets when the step was let go.
    pub time_wait_after: Option<usize>,
    /// Seconds spent waiting beyond the cooldown (for ports, or TIME_WAIT sockets).
    pub drain_wait_s: f64,
    /// False when the wait gave up (at its timeout, or because nothing moved).
    pub drained: bool,
    /// Free local ports toward the target the step waited for (`None`: no port rule).
    #[serde(default)]
    pub ports_needed: Option<usize>,
    /// Free local ports toward the target after the cooldown (`None`: not looked at).
    #[serde(default)]
    pub ports_free_before: Option<usize>,
    /// Free local ports toward the target when the step was let go.
    #[serde(default)]
    pub ports_free_after: Option<usize>,
    /// True when the wait gave up early because the shortfall stopped shrinking.
    #[serde(default)]
    pub stalled: bool,
}

/// One look at what the wait waits for.
#[derive(Debug, Clone, Copy)]
struct Look {
    ports: Option<ports::Ports>,
    time_wait: Option<usize>,
}

impl Look {
    fn take(next: &NextStep, need: Option<usize>) -> Look {
        Look {
            ports: need.and(next.addr).and_then(ports::free_toward),
            time_wait: count_time_wait(next.port),
        }
    }

    /// How far from letting the step go: ports missing plus TIME_WAIT sockets too many.
    fn shortfall(&self, opts: &IsolationOptions, need: Option<usize>) -> usize {
        let ports = match (need, self.ports) {
            (Some(need), Some(p)) => need.saturating_sub(p.free()),
            _ => 0,
        };
        let sockets = match (opts.time_wait_limit, self.time_wait) {
            (Some(limit), Some(n)) => n.saturating_sub(limit),
            _ => 0,
        };
        ports + sockets
    }
}

/// Rests between two steps: the cooldown, then the wait for `next`'s ports (and
/// TIME_WAIT limit, if any). Returns early (with what it saw) once `control` is
/// stopped.
pub fn between_steps(
    opts: &IsolationOptions,
    next: &NextStep,
    control: &Control,
) -> IsolationReport {
    sleep_unless_stopped(opts.cooldown, control);
    let need = match opts.ports {
        PortRule::Auto => Some(next.ports_needed),
        PortRule::Free(n) => Some(n),
        PortRule::Off => None,
    }
    .filter(|_| next.addr.is_some());
    let before = Look::take(next, need);
    // A step estimated to need more than half the range runs short of ports whatever
    // the wait: wait for half. A count the user gave is capped at the whole range.
    let need = match (need, before.ports) {
        (Some(n), Some(p)) if opts.ports == PortRule::Auto => Some(n.min(p.range / 2)),
        (Some(n), Some(p)) => Some(n.min(p.range)),
        (need, _) => need,
    };
    let start = Instant::now();
    let mut now = before;
    // The last time the shortfall shrank enough to count as moving, and its size then.
    let mut moved = (start, before.shortfall(opts, need));
    let mut stalled = false;
    loop {
        let short = now.shortfall(opts, need);
        if short == 0 || control.is_stopped() || start.elapsed() >= opts.drain_timeout {
            break;
        }
        // Moving means 2 % of the shortfall (at least one) gone since the last move.
        if short + (moved.1 / 50).max(1) <= moved.1 {
            moved = (Instant::now(), short);
        } else if moved.0.elapsed() >= opts.stall_after {
            stalled = true;
            break;
        }
        sleep_unless_stopped(POLL, control);
        now = Look::take(next, need);
    }
    IsolationReport {
        cooldown_s: opts.cooldown.as_secs_f64(),
        time_wait_before: before.time_wait,
        time_wait_after: now.time_wait,
        drain_wait_s: start.elapsed().as_secs_f64(),
        drained: now.shortfall(opts, need) == 0,
        ports_needed: need,
        ports_free_before: before.ports.map(|p| p.free()),
        ports_free_after: now.ports.map(|p| p.free()),
        stalled,
    }
}

/// Sockets on this machine in TIME_WAIT toward remote port `port` (IPv4 and IPv6), or
/// `None` when `/proc/net/tcp` cannot be read (not Linux, or no /proc).
pub fn count_time_wait(port: u16) -> Option<usize> {
    let v4 = procfs::net::tcp().ok()?;
    // A host without IPv6 has no tcp6 table: that is zero sockets, not an error.
    let v6 = procfs::net::tcp6().unwrap_or_default();
    Some(time_wait_toward(&v4, port) + time_wait_toward(&v6, port))
}

/// How many of `entries` are in TIME_WAIT with remote port `port`.
pub fn time_wait_toward(entries: &[TcpNetEntry], port: u16) -> usize {
    entries
        .iter()
        .filter(|e| e.state == TcpState::TimeWait && e.remote_address.port() == port)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn counts_time_wait_entries_toward_a_port_from_proc_text() {
        // /proc/net/tcp layout: 0x1F90 = 8080, 0x0050 = 80; states 06 = TIME_WAIT, 01 = ESTABLISHED.
        let text = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:A000 0100007F:1F90 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000000000000000\n\
   1: 0100007F:A001 0100007F:1F90 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000000000000000\n\
   2: 0100007F:A002 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 20 4 30 10 -1\n\
   3: 0100007F:A003 0100007F:0050 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000000000000000\n\
   4: 0100007F:1F90 0100007F:A004 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000000000000000\n";
        use procfs::FromBufReadSI;
        let entries = procfs::net::TcpNetEntries::from_buf_read(
            text.as_bytes(),
            procfs::current_system_info(),
        )
        .unwrap()
        .0;
        assert_eq!(entries.len(), 5);
        assert_eq!(time_wait_toward(&entries, 8080), 2);
        assert_eq!(time_wait_toward(&entries, 80), 1);
        assert_eq!(time_wait_toward(&entries, 443), 0);
    }

    #[test]
    fn a_connection_closed_by_the_client_shows_in_time_wait() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let before = count_time_wait(port).expect("/proc/net/tcp is readable");
        assert_eq!(before, 0, "a fresh port has no TIME_WAIT sockets");
        for _ in 0..3 {
            let mut client = TcpStream::connect(("127.0.0.1", port)).unwrap();
            let (mut server, _) = listener.accept().unwrap();
            client.write_all(b"x").unwrap();
            let mut byte = [0u8; 1];
            server.read_exact(&mut byte).unwrap();
            // The client closes first, so the client side lands in TIME_WAIT.
            drop(client);
            let _ = server.read(&mut byte);
            drop(server);
        }
        let mut seen = 0;
        for _ in 0..50 {
            seen = count_time_wait(port).unwrap();
            if seen == 3 {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(seen, 3);

        // Three TIME_WAIT sockets leave the range free: the default rule lets the
        // step go at once, and says how many ports were free.
        let control = Control::default();
        let next = NextStep {
            addr: Some(listener.local_addr().unwrap()),
            port,
            ports_needed: 300,
        };
        let quick = IsolationOptions {
            cooldown: Duration::ZERO,
            ..IsolationOptions::default()
        };
        let r = between_steps(&quick, &next, &control);
        assert!(r.drained && !r.stalled && r.drain_wait_s < 0.2, "{r:?}");
        assert_eq!(r.ports_needed, Some(300));
        assert!(r.ports_free_before.unwrap() > 1000, "{r:?}");
        assert_eq!(r.time_wait_before, Some(3));
        // An estimate beyond half the range waits for half of it.
        let huge = NextStep {
            ports_needed: 1_000_000,
            ..next
        };
        let r = between_steps(&quick, &huge, &control);
        let range = ports::free_toward(next.addr.unwrap()).unwrap().range;
        assert_eq!(r.ports_needed, Some(range / 2), "{r:?}");

        // A TIME_WAIT limit of 3 is met; one of 0 is not, and since TIME_WAIT sockets
        // stay a minute the count does not move: the wait gives up at the stall limit,
        // well before its timeout.
        let limited = IsolationOptions {
            ports: PortRule::Off,
            time_wait_limit: Some(3),
            drain_timeout: Duration::from_secs(20),
            stall_after: Duration::from_millis(600),
            ..quick
        };
        let r = between_steps(&limited, &next, &control);
        assert!(
            r.drained && r.drain_wait_s < 0.2 && r.ports_needed.is_none(),
            "{r:?}"
        );
        let strict = IsolationOptions {
            time_wait_limit: Some(0),
            ..limited
        };
        let r = between_steps(&strict, &next, &control);
        assert!(!r.drained && r.stalled, "{r:?}");
        assert!(r.drain_wait_s >= 0.6 && r.drain_wait_s < 2.0, "{r:?}");
        // With a long stall limit the timeout ends it.
        let timed = IsolationOptions {
            drain_timeout: Duration::from_millis(600),
            stall_after: Duration::from_secs(20),
            ..strict
        };
        let r = between_steps(&timed, &next, &control);
        assert!(!r.drained && !r.stalled, "{r:?}");
        assert!(r.drain_wait_s >= 0.6 && r.drain_wait_s < 2.0, "{r:?}");
    }

    #[test]
    fn waits_for_ports_until_enough_are_free() {
        // Hold 40 connections to a listener, then ask for 20 more free ports than there
        // are: the wait goes on until the connections close (server side first, so no
        // client port lingers in TIME_WAIT whatever the kernel's reuse setting).
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut held = Vec::new();
        for _ in 0..40 {
            let client = TcpStream::connect(addr).unwrap();
            let (server, _) = listener.accept().unwrap();
            held.push((client, server));
        }
        let free = ports::free_toward(addr).expect("/proc is readable").free();
        let opts = IsolationOptions {
            cooldown: Duration::ZERO,
            ports: PortRule::Free(free + 20),
            drain_timeout: Duration::from_secs(10),
            stall_after: Duration::from_secs(5),
            time_wait_limit: None,
        };
        let next = NextStep {
            addr: Some(addr),
            port: addr.port(),
            ports_needed: 0,
        };
        let closer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(500));
            for (client, server) in held {
                drop(server);
                let mut byte = [0u8; 1];
                let mut client = client;
                let _ = client.read(&mut byte); // the server's FIN
                drop(client);
            }
        });
        let r = between_steps(&opts, &next, &Control::default());
        closer.join().unwrap();
        assert!(r.drained && !r.stalled, "{r:?}");
        assert!(r.drain_wait_s >= 0.4 && r.drain_wait_s < 3.0, "{r:?}");
        assert_eq!(r.ports_free_before, Some(free), "{r:?}");
        assert!(r.ports_free_after.unwrap() >= free + 20, "{r:?}");
    }

    #[test]
    fn parses_the_port_rule() {
        assert_eq!("auto".parse(), Ok(PortRule::Auto));
        assert_eq!("OFF".parse(), Ok(PortRule::Off));
        assert_eq!("5000".parse(), Ok(PortRule::Free(5000)));
        for bad in ["", "-1", "lots", "1e3"] {
            assert!(bad.parse::<PortRule>().is_err(), "{bad:?}");
        }
    }
}

//! Isolation between search steps, so one step's leftovers do not tip the next one's
//! result: a minimum cooldown, then a bounded wait for the TIME_WAIT sockets toward
//! the target to drain ([`between_steps`]).
//!
//! Sockets closed by the generator sit in TIME_WAIT for about a minute; thousands of
//! them from one step can make the next step's connections slower or fail. They are
//! counted from `/proc/net/tcp` and `/proc/net/tcp6` ([`time_wait_toward`]): state
//! TIME_WAIT (06) with the target's port as the remote port. Scenario hooks (see
//! [`super::hooks`]) cover the rest of the system under test.

use std::time::{Duration, Instant};

use procfs::net::{TcpNetEntry, TcpState};
use serde::{Deserialize, Serialize};

use super::hooks::sleep_unless_stopped;
use crate::engine::Control;

/// How long to rest between steps and how clean the network must be before the next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IsolationOptions {
    /// Minimum wait after a step.
    pub cooldown: Duration,
    /// The next step starts once at most this many sockets toward the target's port are
    /// in TIME_WAIT...
    pub time_wait_limit: usize,
    /// ...or once this much more time has passed (the report then says they did not drain).
    pub drain_timeout: Duration,
}

impl Default for IsolationOptions {
    /// 2 s cooldown; then up to 30 s for TIME_WAIT sockets to fall to 1 000.
    fn default() -> Self {
        IsolationOptions {
            cooldown: Duration::from_secs(2),
            time_wait_limit: 1000,
            drain_timeout: Duration::from_secs(30),
        }
    }
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
    /// Seconds spent waiting for them to drain, beyond the cooldown.
    pub drain_wait_s: f64,
    /// False when the drain wait gave up at its timeout.
    pub drained: bool,
}

/// Rests between two steps against `port`: the cooldown, then the TIME_WAIT drain.
/// Returns early (with what it saw) once `control` is stopped.
pub fn between_steps(opts: &IsolationOptions, port: u16, control: &Control) -> IsolationReport {
    sleep_unless_stopped(opts.cooldown, control);
    let before = count_time_wait(port);
    let start = Instant::now();
    let mut now = before;
    while let Some(n) = now {
        if n <= opts.time_wait_limit
            || control.is_stopped()
            || start.elapsed() >= opts.drain_timeout
        {
            break;
        }
        sleep_unless_stopped(Duration::from_millis(250), control);
        now = count_time_wait(port);
    }
    IsolationReport {
        cooldown_s: opts.cooldown.as_secs_f64(),
        time_wait_before: before,
        time_wait_after: now,
        drain_wait_s: start.elapsed().as_secs_f64(),
        drained: now.is_none_or(|n| n <= opts.time_wait_limit),
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

        // With a limit of 3 the drain wait lets the step go at once; with 0 it waits
        // out its timeout and says the sockets did not drain.
        let control = Control::default();
        let quick = IsolationOptions {
            cooldown: Duration::ZERO,
            time_wait_limit: 3,
            drain_timeout: Duration::from_secs(5),
        };
        let r = between_steps(&quick, port, &control);
        assert!(r.drained && r.drain_wait_s < 0.5, "{r:?}");
        let strict = IsolationOptions {
            time_wait_limit: 0,
            drain_timeout: Duration::from_millis(600),
            ..quick
        };
        let r = between_steps(&strict, port, &control);
        assert!(!r.drained, "{r:?}");
        assert_eq!(r.time_wait_before, Some(3));
        assert!(r.drain_wait_s >= 0.6 && r.drain_wait_s < 2.0, "{r:?}");
    }
}

//! An engine thread's UDP socket for QUIC ([`Endpoint`]): the buffers it asks the kernel
//! for (and the warning when it grants less), what one send may batch (GSO), and the
//! tally its connections add their figures to as they close.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};

use headroom_metrics::recorder::QuicTally;

/// The UDP buffer each endpoint asks for, receive and send: 4 MiB, what quic-go asks
/// for too (about 3,000 full-size datagrams).
pub const UDP_BUFFER: usize = 4 * 1024 * 1024;

/// Says once per process when the kernel granted less than [`UDP_BUFFER`].
fn warn_if_short(recv: usize, send: usize) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if let Some(warning) = shortfall(recv, send) {
        if !WARNED.swap(true, Ordering::Relaxed) {
            eprintln!("warning: {warning}");
        }
    }
}

/// The warning for buffers the kernel reports as `recv` and `send` bytes (Linux caps
/// them at `net.core.rmem_max` / `wmem_max`, and reports twice what it granted), or
/// `None` when both are at least [`UDP_BUFFER`].
pub(super) fn shortfall(recv: usize, send: usize) -> Option<String> {
    let granted = |reported: usize| reported / 2;
    let short: Vec<String> = [("receive", "rmem_max", recv), ("send", "wmem_max", send)]
        .into_iter()
        .filter(|&(_, _, reported)| granted(reported) < UDP_BUFFER)
        .map(|(way, limit, reported)| {
            format!("{way} {} KiB (net.core.{limit})", granted(reported) / 1024)
        })
        .collect();
    (!short.is_empty()).then(|| {
        format!(
            "HTTP/3: the kernel granted UDP buffers of {} where {} KiB was asked; at high \
             rates it may drop datagrams before headroom reads them, which QUIC counts as \
             loss (raise them with sysctl -w net.core.rmem_max={} net.core.wmem_max={})",
            short.join(", "),
            UDP_BUFFER / 1024,
            UDP_BUFFER,
            UDP_BUFFER
        )
    })
}

/// An engine thread's UDP socket for QUIC, and where its connections' figures go.
pub struct Endpoint {
    pub(super) quinn: quinn::Endpoint,
    /// Filled by each connection as it closes.
    pub(super) tally: Rc<RefCell<QuicTally>>,
    /// The most packets one send may carry: quinn-udp probed the kernel for
    /// UDP_SEGMENT as it wrapped the socket (more than 1: one sendmsg hands the kernel
    /// a batch of packets to cut into datagrams).
    gso_segments: u64,
}

impl Endpoint {
    /// A client socket bound to an ephemeral port of `target`'s address family, with
    /// [`UDP_BUFFER`] asked for each way. Must be called inside a tokio runtime (quinn
    /// spawns the socket's driver on it).
    pub fn bind(target: SocketAddr) -> std::io::Result<Endpoint> {
        use socket2::{Domain, Protocol, Socket, Type};
        let (domain, local): (Domain, SocketAddr) = if target.is_ipv4() {
            (Domain::IPV4, (std::net::Ipv4Addr::UNSPECIFIED, 0).into())
        } else {
            (Domain::IPV6, (std::net::Ipv6Addr::UNSPECIFIED, 0).into())
        };
        let socket = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))?;
        // Why ask: a thread's connections all read through this one socket, and the
        // kernel's default receive buffer (about 200 KiB) holds some 150 full-size
        // datagrams, a few milliseconds of a busy run; past it the kernel drops them
        // and QUIC reads the drops as loss, which the run would blame on the target.
        let _ = socket.set_recv_buffer_size(UDP_BUFFER);
        let _ = socket.set_send_buffer_size(UDP_BUFFER);
        warn_if_short(socket.recv_buffer_size()?, socket.send_buffer_size()?);
        socket.bind(&local.into())?;
        let runtime = quinn::default_runtime()
            .ok_or_else(|| std::io::Error::other("no async runtime for QUIC"))?;
        let socket = runtime.wrap_udp_socket(socket.into())?;
        let gso_segments = socket.max_transmit_segments() as u64;
        Ok(Endpoint {
            quinn: quinn::Endpoint::new_with_abstract_socket(
                quinn::EndpointConfig::default(),
                None,
                socket,
                runtime,
            )?,
            tally: Rc::default(),
            gso_segments,
        })
    }

    /// The figures of the connections closed so far, leaving zeros (and the socket's
    /// GSO segments, which belong to the socket, not to the connections).
    pub fn take_tally(&self) -> QuicTally {
        QuicTally {
            gso_segments: self.gso_segments,
            ..self.tally.take()
        }
    }
}

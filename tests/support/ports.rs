//! Free loopback ports for servers started by tests.

use std::collections::BTreeSet;
use std::net::{SocketAddr, TcpListener};
use std::sync::Mutex;

/// Ports this test process has handed out already.
static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// Returns a TCP port on 127.0.0.1 that was free when this function returned and that
/// no earlier call in this process returned.
///
/// The port is found by binding `127.0.0.1:0` and dropping the listener, so another
/// process may take it before the caller binds it: callers that hand the port to a
/// child process must retry on "address in use" (as [`crate::support::Nginx::start`]
/// does). A server the test itself runs should bind `127.0.0.1:0` directly instead.
///
/// Why the record: the kernel may give the same port to two binds of port 0 in a row
/// once the first listener is dropped, and a test that asks for two ports before
/// either is bound (nginx's served and status ports) would then configure one
/// server on both. nginx accepts that, and its status page answered "ok" once in CI.
pub(crate) fn free_port() -> u16 {
    let mut seen = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0 for a free port");
        let port = listener
            .local_addr()
            .expect("local address of a bound listener")
            .port();
        if seen.insert(port) {
            return port;
        }
    }
}

/// A TCP socket bound to a free port of 127.0.0.1, not listening, and its address: the
/// port stays this socket's (no other bind can take it) until it is dropped. The
/// caller listens on it, or leaves it closed to refuse.
pub(crate) fn bound_loopback() -> (socket2::Socket, SocketAddr) {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))
        .expect("a TCP socket on loopback");
    let any: SocketAddr = "127.0.0.1:0".parse().expect("loopback address");
    socket.bind(&any.into()).expect("bind 127.0.0.1:0");
    let addr = socket
        .local_addr()
        .ok()
        .and_then(|a| a.as_socket())
        .expect("local address of a bound socket");
    (socket, addr)
}

/// A loopback port that refuses every connection for as long as the returned socket
/// lives: bound, so no other bind (of this process or a neighbour's) can take it, and
/// not listening, so a connection to it is refused at once. For tests of what happens
/// when nothing answers, where a [`free_port`] could be taken by a neighbour's server
/// in the meantime.
pub(crate) fn refusing_port() -> (socket2::Socket, u16) {
    let (socket, addr) = bound_loopback();
    (socket, addr.port())
}

//! Free loopback ports for servers started by tests.

use std::net::TcpListener;

/// Returns a TCP port on 127.0.0.1 that was free when this function returned.
///
/// The port is found by binding `127.0.0.1:0` and dropping the listener, so another
/// process may take it before the caller binds it: callers that hand the port to a
/// child process must retry on "address in use" (as [`crate::support::Nginx::start`]
/// does). A server the test itself runs should bind `127.0.0.1:0` directly instead.
pub(crate) fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0 for a free port");
    listener
        .local_addr()
        .expect("local address of a bound listener")
        .port()
}

//! The client layer: everything the engine knows about talking to a target goes
//! through [`session::Client`], one per engine thread. It opens connections through
//! [`connect::Connector`] (TCP, then TLS for `https://`), speaks HTTP/1.1 ([`http1`],
//! hand-written around `httparse`: the hot path, one write and usually one read per
//! request), HTTP/2 ([`http2`], the `h2` crate) or HTTP/3 ([`http3`], `quinn` and
//! `h3`), and shares connections as the
//! plan's [`ConnectionModel`] says. [`prepared`] makes a
//! [`headroom_plan::RequestTemplate`] ready once per plan in the form its protocol
//! sends; [`request`] renders it.

pub mod connect;
pub mod grpc;
pub mod http1;
pub mod http2;
pub mod http3;
pub mod prepared;
pub mod request;
pub mod session;
pub mod sse;
pub mod tls;
pub mod trace;

// Test builds only: the counting global allocator the hostile-input tests bound their
// allocations with, shared with the main crate's tests rather than copied.
#[cfg(test)]
#[path = "../../../tests/support/alloc.rs"]
mod test_alloc;

pub use headroom_plan::connection::{ConnectionModel, ConnectionModelError, Protocol};

//! HTTP clients the engine drives. [`http1::Conn`] is one keep-alive HTTP/1.1
//! connection, over TCP or TLS as [`connect::Connector`] opens it ([`tls`] builds the
//! run's TLS configuration); [`request`] renders a [`crate::plan::RequestTemplate`] into wire bytes.
//!
//! The connection loop is hand-written around `httparse` because it is the hot path:
//! one write and usually one read per request, no allocation once warm, and the body
//! skipped without copying unless a check or capture needs it.

pub mod connect;
pub mod http1;
pub mod http2;
pub mod request;
pub mod tls;

//! gRPC calls (unary and server-streaming) over the client layer's HTTP/2 connections:
//! h2c with prior knowledge on `http://` targets, h2 by ALPN on `https://`.
//!
//! - [`proto`]: the scenario's `.proto` files compiled at load time (protox, pure Rust),
//!   methods looked up, messages converted between JSON and protobuf (prost-reflect).
//! - [`frame`]: the 5-byte message prefix; every received message is bounded.
//! - [`status`]: `grpc-status` / `grpc-message` and their error kinds, `grpc-timeout`.
//! - [`call`]: one call on a [`crate::http2::Connection`].
//!
//! Limits: one received message ≤ [`frame::DEFAULT_MAX_MESSAGE`] (4 MiB) unless told
//! otherwise, the status message ≤ [`status::MAX_MESSAGE`], headers and trailers by the
//! connection's header-list limit, and nothing else is buffered (messages are handed out
//! as they are cut from the body).

pub mod call;
pub mod frame;
/// The compiled `.proto` schema and methods belong to the plan (what to call); the
/// client encodes and decodes with them.
pub use headroom_plan::proto;
pub mod status;

pub use call::{CallError, CallOptions, ProtocolError, Reply, Responses};
pub use proto::{Method, ProtoError, Schema};
pub use status::Status;

#[cfg(test)]
mod tests;

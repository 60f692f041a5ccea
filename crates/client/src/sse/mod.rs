//! Server-Sent Events (`text/event-stream`): [`parser`] turns the bytes of a response
//! body into events by the WHATWG rules, [`open`] sends the GET (over the run's
//! connector: TCP or TLS, HTTP/1.1 or HTTP/2) and checks the response, and [`pump`]
//! reads a stream in the background, reconnecting after the server's `retry:` with
//! `Last-Event-ID` when it ends or drops.

pub mod open;
pub mod parser;

#[cfg(test)]
mod parser_tests;

pub use open::{open, BadRequest, OpenError, Response, SseRequest};
pub use parser::{Event, Limits, ParseError, Parser};

//! Server-Sent Events (`text/event-stream`): [`parser`] turns the bytes of a response
//! body into events by the WHATWG rules, [`open`] sends the GET (HTTP/1.1 on a
//! connection of its own from the run's connector: TCP or TLS; [`open_h2`]: a stream
//! of an HTTP/2 connection of the client layer's) and checks the response, and [`pump`]
//! reads a stream in the background, reconnecting after the server's `retry:` with
//! `Last-Event-ID` when it ends or drops.

pub mod open;
pub mod parser;

#[cfg(test)]
mod parser_tests;

pub use open::{
    connect_h2, open, open_h2, BadRequest, ChunkError, OpenError, Response, SseRequest,
};
pub use parser::{Event, Limits, ParseError, Parser};

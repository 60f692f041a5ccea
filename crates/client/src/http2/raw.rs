//! A stream whose response is read piece by piece, trailers included: what gRPC calls
//! need (messages as they arrive, the status in the trailers). [`Connection::open_raw`]
//! sends the request; [`RawBody`] hands out DATA frames (their window given back as each
//! is handed out, so nothing builds up beyond what the caller keeps) and then the
//! trailers. Errors map to the same kinds as [`Connection::send`]'s.

use bytes::Bytes;
use h2::RecvStream;
use tokio::sync::OwnedSemaphorePermit;

use super::error::Failure;
use super::watch::GoawayWatch;
use super::Connection;

/// The head of a response read with [`Connection::open_raw`], and its body.
#[derive(Debug)]
pub struct RawResponse {
    /// Status and headers.
    pub head: http::response::Parts,
    /// The body, read frame by frame.
    pub body: RawBody,
}

/// A response body read as it arrives. Dropping it resets the stream if it was not
/// read to its end.
#[derive(Debug)]
pub struct RawBody {
    recv: RecvStream,
    id: u32,
    goaway: GoawayWatch,
    /// The stream slot it holds on a pooled connection, given back on drop.
    _slot: Option<OwnedSemaphorePermit>,
}

impl RawBody {
    fn fail(&self, e: &h2::Error) -> Failure {
        Failure::from_h2(e, Some(self.id), self.goaway.last_stream_id())
    }

    /// Whether the server already ended the stream (a trailers-only response, or a body
    /// read to its end).
    pub fn is_end_stream(&self) -> bool {
        self.recv.is_end_stream()
    }

    /// The next DATA frame, `None` at the end of the body. Its flow-control window is
    /// given back at once: the caller bounds what it keeps.
    pub async fn data(&mut self) -> Option<Result<Bytes, Failure>> {
        let data = match self.recv.data().await? {
            Ok(data) => data,
            Err(e) => return Some(Err(self.fail(&e))),
        };
        let _ = self.recv.flow_control().release_capacity(data.len());
        Some(Ok(data))
    }

    /// The trailers, after the body's end (`None`: the stream ended without any).
    pub async fn trailers(&mut self) -> Result<Option<http::HeaderMap>, Failure> {
        match self.recv.trailers().await {
            Ok(t) => Ok(t),
            Err(e) => Err(self.fail(&e)),
        }
    }
}

impl Connection {
    /// Sends `request` with `body` (none: the HEADERS end the request, as a GET's)
    /// on a new stream and returns once the response head arrives, its body unread.
    /// Unlike [`Connection::send`] it takes none of our stream slots on a user's own
    /// connection (a server-streaming call may hold its stream for the whole run):
    /// only the server's MAX_CONCURRENT_STREAMS bounds these, `h2` queueing a stream
    /// until another closes. On a pooled connection
    /// ([`Connection::slots_for_raw_streams`]) it waits for a slot and holds it until
    /// the body is dropped. Cancel-safe: dropping the future resets the stream.
    pub async fn open_raw(
        &self,
        request: http::Request<()>,
        body: Option<Bytes>,
    ) -> Result<RawResponse, Failure> {
        let fail =
            |e: &h2::Error, id: Option<u32>| Failure::from_h2(e, id, self.goaway.last_stream_id());
        let slot = if self.raw_slots.get() {
            // The semaphore is never closed, so acquiring only ever waits.
            self.slots.clone().acquire_owned().await.ok()
        } else {
            None
        };
        let sender = self.send.borrow().clone();
        let mut sender = sender.ready().await.map_err(|e| fail(&e, None))?;
        let (response, mut stream) = sender
            .send_request(request, body.is_none())
            .map_err(|e| fail(&e, None))?;
        let id = response.stream_id().as_u32();
        if let Some(body) = body {
            stream
                .send_data(body, true)
                .map_err(|e| fail(&e, Some(id)))?;
        }
        let response = response.await.map_err(|e| fail(&e, Some(id)))?;
        let (head, recv) = response.into_parts();
        Ok(RawResponse {
            head,
            body: RawBody {
                recv,
                id,
                goaway: self.goaway.clone(),
                _slot: slot,
            },
        })
    }
}

//! The HTTP/3 side of [`Client`]: a request over QUIC, on the session's own connection,
//! the shared pool's, or a new one, as HTTP/2's requests go (`session.rs`).

use std::cell::Cell;
use std::rc::Rc;

use super::payload::judge_muxed;
use super::{Client, Failure, H2Payload, Link, Note, Reply, Session, Trace};
use crate::http3;
use crate::prepared::PreparedRequest;
use headroom_metrics::recorder::{QuicTally, Speaks};
use headroom_metrics::ErrorKind;

impl Client {
    /// What QUIC measured on this thread's HTTP/3 connections closed since the last
    /// call, leaving zeros (all 0 in a run without HTTP/3).
    pub fn take_quic(&self) -> QuicTally {
        let mut tally = self
            .endpoint
            .get()
            .map(http3::Endpoint::take_tally)
            .unwrap_or_default();
        tally.verified += crate::tls::take_verified();
        tally
    }

    /// Sends an HTTP/3 request through `session` (the request is rendered as for
    /// HTTP/2: the same `http` head and body). A stream the server refused unprocessed
    /// (H3_REQUEST_REJECTED, or never opened because the connection was closing) is
    /// sent once more, on a new connection when that one is closed; never as 0-RTT
    /// early data the second time (a server that rejected it once would again).
    pub(super) async fn send_h3<R>(
        &self,
        session: &mut Session,
        request: &PreparedRequest,
        payload: &H2Payload<'_>,
        connecting: &Cell<bool>,
        trace: &mut Trace,
        judge: impl FnOnce(&Reply<'_>) -> R,
    ) -> Result<R, Failure> {
        let Some(prebuilt) = payload.prebuilt() else {
            return Err(Failure::kind(ErrorKind::Protocol));
        };
        for attempt in 0..2 {
            let conn = match session {
                Session::Own(Some(Link::H3(c))) if c.is_open() => {
                    trace.reused = true;
                    c.clone()
                }
                Session::Own(slot) => {
                    let c = Rc::new(
                        self.open_h3(connecting, trace, request.idempotent && attempt == 0)
                            .await?,
                    );
                    *slot = Some(Link::H3(c.clone()));
                    c
                }
                Session::PerRequest => Rc::new(
                    self.open_h3(connecting, trace, request.idempotent && attempt == 0)
                        .await?,
                ),
                Session::Shared => {
                    let c = self
                        .checkout(&self.pool.h3, connecting, trace, async |client, c, t| {
                            client
                                .open_h3(c, t, request.idempotent && attempt == 0)
                                .await
                        })
                        .await?;
                    if trace.connect.is_none() && trace.tls.is_none() {
                        trace.leased.get_or_insert_with(std::time::Instant::now);
                    }
                    c
                }
            };
            let (head, body) = prebuilt.request();
            match conn.send(head, body, request.keep_body, request.head).await {
                Ok(response) => return Ok(judge_muxed(request, &response, trace, judge)),
                Err(failure) if failure.refused && attempt == 0 => trace.retried = true,
                Err(failure) => return Err(failure.into()),
            }
        }
        Err(Failure::kind(ErrorKind::StreamReset))
    }

    /// Opens an HTTP/3 connection through the thread's UDP socket (bound on first
    /// use): the QUIC handshake, then HTTP/3's setup. Counted as `h3`, its handshake
    /// as a TLS one (TLS 1.3 runs inside QUIC's). `idempotent`: the request it is
    /// opened for may go as 0-RTT early data (`--h3-0rtt`), which a server may replay.
    pub(super) async fn open_h3(
        &self,
        connecting: &Cell<bool>,
        trace: &mut Trace,
        idempotent: bool,
    ) -> Result<http3::Connection, Failure> {
        let Some(config) = self.connector.quic() else {
            unreachable!("an HTTP/3 run's connector has its QUIC configuration")
        };
        let endpoint = match self.endpoint.get() {
            Some(e) => e,
            None => {
                let bound = http3::Endpoint::bind(self.addr()).map_err(|e| Failure {
                    kind: ErrorKind::Generator,
                    note: Some(Note::Connect(format!("no UDP socket for QUIC: {e}"))),
                })?;
                self.endpoint.get_or_init(|| bound)
            }
        };
        connecting.set(true);
        let opened =
            http3::Connection::open(endpoint, config, self.addr(), &self.h3, idempotent).await;
        connecting.set(false);
        match opened {
            Ok((connection, handshake)) => {
                self.opens.count(Speaks::Http3, true);
                trace.opened_quic(handshake);
                Ok(connection)
            }
            Err(e) => {
                let note = if e.is_tls() {
                    Note::Tls(e.to_string())
                } else {
                    Note::Connect(e.to_string())
                };
                Err(Failure {
                    kind: e.kind(),
                    note: Some(note),
                })
            }
        }
    }
}

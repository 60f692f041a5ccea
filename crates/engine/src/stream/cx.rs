//! What a stream protocol opens with and returns: [`OpenCx`] (the step, the thread's
//! state, the connector, and where connections are counted) and [`Opened`] (its
//! writer, its pump and the time it took). A leaf of `stream/`: the protocols
//! (`ws`, `sse`, `grpc`) and the dispatcher (`proto`) import it, never the reverse.

use std::rc::Rc;
use std::time::Duration;

use super::failure::Failure;
use super::url::Endpoint;
use crate::thread::ThreadState;
use headroom_client::connect::{connect_error_kind, ConnectError, Connector, Stream};
use headroom_client::http2::{Connection, Settings};
use headroom_client::session::Note;
use headroom_client::ConnectionModel;
use headroom_metrics::recorder::Speaks;
use headroom_metrics::ErrorKind;
use headroom_plan::StreamStep;

/// What a protocol's `open` is given.
pub(crate) struct OpenCx<'a> {
    /// The engine thread (plan, connectors, recorder).
    pub(crate) state: &'a Rc<ThreadState>,
    /// The step opening the stream.
    pub(crate) step: &'a StreamStep,
    /// Where to.
    pub(crate) endpoint: Endpoint,
    /// Rendered extra headers.
    pub(crate) headers: Vec<(String, String)>,
    /// For a gRPC call: the rendered request message (JSON text), else `None`.
    pub(crate) message: Option<String>,
    /// The user's HTTP/2 connection for gRPC calls (kept in its [`super::Streams`]).
    pub(crate) h2: super::H2Slot,
    /// True while connecting: a protocol whose `open` goes on past its handshake (a gRPC
    /// call) clears it then, so a timeout after that is not counted as `connect`.
    pub(crate) opening: &'a std::cell::Cell<bool>,
    /// True while a gRPC call waits for its answer (a unary reply, a server stream's
    /// response head): a timeout then is the call's, counted as `timeout`.
    pub(crate) calling: &'a std::cell::Cell<bool>,
}

impl OpenCx<'_> {
    /// Opens a connection (TCP, then TLS) through `connector`, counted as `speaks`. A
    /// failure is the step's, and the run's first connect or TLS failure is kept for
    /// the end-of-run message, as a request's is.
    pub(crate) async fn connect(
        &self,
        connector: &Connector,
        speaks: Speaks,
    ) -> Result<Stream, Failure> {
        match connector.open(speaks, self.state.client.opens()).await {
            Ok((stream, _)) => Ok(stream),
            Err(ConnectError::Tcp(e)) => {
                let kind = connect_error_kind(&e);
                if kind == ErrorKind::Connect {
                    self.state.note_connect_failure(&e.to_string());
                }
                Err(Failure::new(kind, e.to_string()))
            }
            Err(ConnectError::Tls(reason)) => {
                let reason = reason.to_string();
                self.state.note_tls_failure(&reason);
                Err(Failure::new(ErrorKind::Tls, reason))
            }
        }
    }

    /// The HTTP/2 connection to the target a user's gRPC call or SSE stream goes on:
    /// the user's own one if it has one open ([`super::grpc::share_with_session`] puts
    /// the one its requests use there). In an `--http2` run, the client layer's own as
    /// the connection model says (`shared`: the pool's, taking one of its stream slots;
    /// `per-user`: a new one counted as `http2` that becomes the user's, its requests'
    /// too; `per-request`: a new one of the user's streams, counted as `speaks`). In an
    /// HTTP/1.1 run, a new one of the user's streams, h2c with prior knowledge or h2 by
    /// ALPN, counted as `speaks`. Kept in the user's slot but under `shared`.
    pub(crate) async fn h2(&self, speaks: Speaks) -> Result<Rc<Connection>, Failure> {
        if let Some(conn) = self.h2.borrow().as_ref().filter(|c| c.is_open()) {
            return Ok(conn.clone());
        }
        let client = &self.state.client;
        let conn = if client.protocol() == headroom_client::Protocol::Http2 {
            client.stream_h2(speaks).await.map_err(|f| {
                let reason = match &f.note {
                    Some(Note::Connect(r)) => {
                        self.state.note_connect_failure(r);
                        r.clone()
                    }
                    Some(Note::Tls(r)) => {
                        self.state.note_tls_failure(r);
                        r.clone()
                    }
                    None => format!("no connection ({})", f.kind),
                };
                Failure::new(f.kind, reason)
            })?
        } else {
            let stream = self.connect(&self.state.streams.h2(), speaks).await?;
            let conn = Connection::handshake(stream, &Settings::default())
                .await
                .map_err(|e| Failure::new(e.kind(), e.to_string()))?;
            Rc::new(conn)
        };
        if !matches!(client.model(), ConnectionModel::Shared(_))
            || client.protocol() != headroom_client::Protocol::Http2
        {
            *self.h2.borrow_mut() = Some(conn.clone());
        }
        Ok(conn)
    }
}

/// An opened stream with its protocol's writer `W`.
pub(crate) struct Opened<W> {
    /// Its sending side.
    pub(crate) writer: W,
    /// Its pump task.
    pub(crate) pump: tokio::task::JoinHandle<()>,
    /// Connect + TLS + protocol handshake.
    pub(crate) connect: Duration,
}

impl<W> Opened<W> {
    /// The same stream with its writer wrapped (a protocol's into the common one).
    pub(crate) fn map<V>(self, f: impl FnOnce(W) -> V) -> Opened<V> {
        Opened {
            writer: f(self.writer),
            pump: self.pump,
            connect: self.connect,
        }
    }
}

//! [`spawn`] and [`RunningSink`]: the sink's listener on its own thread and runtime.
//!
//! Each delivery: the body is read up to `max_body` (over it: 413, counted), the id is
//! looked for (no id, or a body that is not JSON: 400, counted), the [`Tracker`] counts
//! it and decides accept or refuse, and the answer goes out after the configured
//! latency. The delivery is recorded on receipt, before the wait: a sender that gives
//! up waiting (a timeout shorter than the sink's latency) and retries has still
//! delivered, so its retry is a duplicate — as a real receiver would see it.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use rand::Rng as _;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use super::options::{Correlate, SinkLatency, SinkOptions, SinkOptionsError};
use super::tracker::{Tracker, Verdict};

/// A sink serving on its own thread; stops on [`RunningSink::shutdown`] or drop.
pub struct RunningSink {
    addr: SocketAddr,
    tracker: Arc<Tracker>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl RunningSink {
    /// The address it listens on (the real port when asked for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its base URL, `http://127.0.0.1:PORT` (what `{{ sink_url }}` renders to).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The registry and counts.
    pub fn tracker(&self) -> &Arc<Tracker> {
        &self.tracker
    }

    /// Stops listening, closes connections and joins the thread.
    pub fn shutdown(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for RunningSink {
    fn drop(&mut self) {
        self.stop_now();
    }
}

struct Shared {
    opts: SinkOptions,
    tracker: Arc<Tracker>,
}

/// The sink could not start.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    /// The options are invalid.
    #[error(transparent)]
    Options(#[from] SinkOptionsError),
    /// The listening address could not be bound (taken, or not local).
    #[error("binding the sink to {addr}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why it could not be bound.
        source: std::io::Error,
    },
    /// The sink's thread could not be started.
    #[error("starting the sink thread")]
    Thread(#[source] std::io::Error),
}

/// Binds (in the caller's thread, so a busy port fails at once) and serves deliveries
/// into `tracker` until shut down. Errors if the options are invalid or binding fails.
pub fn spawn(opts: SinkOptions, tracker: Arc<Tracker>) -> Result<RunningSink, SinkError> {
    opts.validate()?;
    let bind_error = |source| SinkError::Bind {
        addr: opts.listen,
        source,
    };
    let std_listener = std::net::TcpListener::bind(opts.listen).map_err(bind_error)?;
    std_listener.set_nonblocking(true).map_err(bind_error)?;
    let addr = std_listener.local_addr().map_err(bind_error)?;
    let (stop_tx, stop_rx) = oneshot::channel();
    let shared = Arc::new(Shared {
        opts,
        tracker: tracker.clone(),
    });
    let thread = std::thread::Builder::new()
        .name("headroom-sink".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    eprintln!("sink: cannot start its runtime: {e}");
                    return;
                }
            };
            let local = tokio::task::LocalSet::new();
            local.block_on(&runtime, serve(std_listener, shared, stop_rx));
        })
        .map_err(SinkError::Thread)?;
    Ok(RunningSink {
        addr,
        tracker,
        stop: Some(stop_tx),
        thread: Some(thread),
    })
}

async fn serve(
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
    mut stop: oneshot::Receiver<()>,
) {
    let Ok(listener) = TcpListener::from_std(listener) else {
        return;
    };
    loop {
        let accepted = tokio::select! {
            _ = &mut stop => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else {
            // EMFILE and the like: back off a little rather than spin.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        tokio::task::spawn_local(async move {
            let service = hyper::service::service_fn(move |req| {
                let shared = shared.clone();
                async move { Ok::<_, Infallible>(handle(&shared, req).await) }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await;
        });
    }
}

fn reply(status: u16, body: &'static str) -> Response<Full<Bytes>> {
    let mut res = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *res.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    res
}

async fn handle(shared: &Shared, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let tracker = &shared.tracker;
    let (parts, body) = req.into_parts();
    let body = match Limited::new(body, shared.opts.max_body).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            // Over the limit (or the connection failed mid-body): nothing more is read.
            tracker.too_large();
            return reply(413, "delivery body too large\n");
        }
    };
    // Received now: the delivery latency ends here, not after the sink's own wait.
    let received = Instant::now();
    let id = match &shared.opts.correlate {
        Correlate::Header(name) => parts
            .headers
            .get(name.as_str())
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        Correlate::JsonPath(path) => {
            let Ok(value) = serde_json::from_slice::<serde_json::Value>(&body) else {
                tracker.bad_body();
                return reply(400, "delivery body is not JSON\n");
            };
            path.query(&value).first().and_then(|v| match v {
                serde_json::Value::String(s) => Some(s.clone()),
                serde_json::Value::Number(n) => Some(n.to_string()),
                _ => None,
            })
        }
    };
    let Some(id) = id else {
        tracker.no_id();
        return reply(400, "delivery has no id\n");
    };
    let verdict = tracker.deliver(&id, received);
    let wait = match shared.opts.latency {
        SinkLatency::Fixed(d) => d,
        SinkLatency::Range(lo, hi) => {
            let span = (hi - lo).as_nanos() as u64;
            lo + Duration::from_nanos(rand::rng().random_range(0..=span))
        }
    };
    if !wait.is_zero() {
        tokio::time::sleep(wait).await;
    }
    match verdict {
        Verdict::Accept => reply(shared.opts.status, "ok\n"),
        Verdict::Refuse(status) => reply(status, "refused by the sink's failure share\n"),
    }
}

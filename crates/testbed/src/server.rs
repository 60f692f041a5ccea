//! [`spawn`] and [`RunningTarget`]: the target's threads, runtime, accept loop and
//! per-request bookkeeping.
//!
//! `spawn` binds in the caller's thread (so a busy port fails at once), then starts one
//! OS thread that owns a tokio runtime (current-thread by default, multi-threaded when
//! `threads > 1`) plus the [`PreciseTimer`] thread. Each accepted connection is served
//! on its own task by `conn` (HTTP/1.1 and h2c on one port, or TLS with ALPN); every
//! request goes through `dispatch.rs`, which counts it, runs the route, and applies a
//! stall if one is on. What the handlers share is `state.rs`'s `State`.

use std::net::SocketAddr;
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::oneshot;

use super::conn;
use super::error::TargetError;
use super::metrics::ConnectionMetrics;
use super::options::TargetOptions;
use super::state::State;
use super::tls;

/// Accept backlog; the kernel caps it at `net.core.somaxconn`.
const BACKLOG: u32 = 4096;

/// A target serving on its own threads. Stops when [`RunningTarget::shutdown`] is
/// called or it is dropped; either way, open connections are closed and the threads
/// joined before it returns.
pub struct RunningTarget {
    addr: SocketAddr,
    /// The self-signed certificate (PEM) when serving TLS.
    cert_pem: Option<String>,
    /// The server's connection counters (shared with its handlers).
    counters: Option<ConnectionMetrics>,
    /// Kernel id of the thread that runs a current-thread runtime (`None` with more).
    server_tid: Option<u32>,
    capacity: f64,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl RunningTarget {
    /// The address it listens on (the real port when the options asked for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its base URL, e.g. `http://127.0.0.1:8080` (`https://` with TLS), without a
    /// trailing slash.
    pub fn url(&self) -> String {
        let scheme = if self.cert_pem.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.addr)
    }

    /// The certificate made at start (PEM) when serving TLS: what a client trusts
    /// with `--cacert`. `None` in cleartext.
    pub fn cert_pem(&self) -> Option<&str> {
        self.cert_pem.as_deref()
    }

    /// The true ceiling of `/work` in requests per second (workers / mean service time).
    pub fn capacity(&self) -> f64 {
        self.capacity
    }

    /// Requests answered so far, every endpoint and protocol.
    pub fn requests_answered(&self) -> u64 {
        self.counters.as_ref().map_or(0, |c| c.requests.total())
    }

    /// TCP connections accepted so far (every protocol: HTTP, WebSocket, SSE).
    pub fn connections_accepted(&self) -> u64 {
        self.counters.as_ref().map_or(0, |c| c.accepted.get())
    }

    /// CPU time the server has used so far, from `/proc` (Linux): the one thread that
    /// runs a current-thread runtime, so all of its serving, TLS included, but not the
    /// `/work` timer thread (sleeping costs nothing). `None` with `threads > 1` or
    /// without `/proc`.
    pub fn cpu_time(&self) -> Option<Duration> {
        let tid = self.server_tid?;
        let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
        let ns: u64 = stat.split_whitespace().next()?.parse().ok()?;
        Some(Duration::from_nanos(ns))
    }

    /// Stops accepting, closes open connections and joins the server threads.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for RunningTarget {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// Starts a target as `opts` describe and returns once it is listening (and, with
/// `postgres`, connected). With `tls`, makes its certificate first (and writes it to
/// `tls_cert_out`). Errors: invalid options, the certificate cannot be made or written,
/// the address cannot be bound, the database cannot be reached, or threads cannot be
/// started.
pub fn spawn(opts: TargetOptions) -> Result<RunningTarget, TargetError> {
    opts.validate()?;
    let (cert_pem, tls_config) = if opts.tls {
        let made = tls::self_signed(opts.listen)?;
        if let Some(path) = &opts.tls_cert_out {
            std::fs::write(path, &made.cert_pem).map_err(|source| {
                TargetError::WriteCertificate {
                    path: path.clone(),
                    source,
                }
            })?;
        }
        (Some(made.cert_pem), Some((made.config, made.quic)))
    } else {
        (None, None)
    };
    let runtime = if opts.threads == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(opts.threads);
        b
    }
    .enable_all()
    .thread_name("headroom-target")
    .build()
    .map_err(|source| TargetError::Start {
        what: "building the target's runtime",
        source,
    })?;
    // Bind here, in the caller's thread, so a taken port is reported by `spawn`; the
    // listener is registered with the runtime that will move to the server thread.
    let listener = {
        let _entered = runtime.enter();
        bind(opts.listen).map_err(|source| TargetError::Bind {
            addr: opts.listen,
            source,
        })?
    };
    let addr = listener.local_addr().map_err(|source| TargetError::Bind {
        addr: opts.listen,
        source,
    })?;
    // HTTP/3 on the same port number over UDP, bound here for the same reason.
    let (tls_config, quic) = match tls_config {
        Some((tcp, quic)) => {
            let _entered = runtime.enter();
            let endpoint =
                super::h3::bind(addr, quic).map_err(|source| TargetError::Bind { addr, source })?;
            (Some(tcp), Some(endpoint))
        }
        None => (None, None),
    };
    let h3_port = quic.as_ref().map(|_| addr.port());

    type Ready = (ConnectionMetrics, Option<u32>);
    let (ready_tx, ready_rx) = mpsc::channel::<Result<Ready, TargetError>>();
    let single_thread = opts.threads == 1;
    let (stop_tx, stop_rx) = oneshot::channel();
    let capacity = opts.capacity();
    let thread = std::thread::Builder::new()
        .name("headroom-target".into())
        .spawn(move || {
            let tid = if single_thread { own_tid() } else { None };
            runtime.block_on(async move {
                match State::new(&opts, tls_config, h3_port).await {
                    Ok(state) => {
                        let state = Arc::new(state);
                        let _ = ready_tx.send(Ok((state.metrics.connections.clone(), tid)));
                        let quic = quic.map(|endpoint| {
                            let (stop, stopped) = oneshot::channel();
                            let serving = tokio::spawn(super::h3::accept_loop(
                                endpoint,
                                state.clone(),
                                stopped,
                            ));
                            (stop, serving)
                        });
                        accept_loop(listener, state, stop_rx).await;
                        if let Some((stop, serving)) = quic {
                            let _ = stop.send(());
                            let _ = serving.await;
                        }
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                    }
                }
            });
            // Dropping the runtime here cancels every connection task.
        })
        .map_err(|source| TargetError::Start {
            what: "starting the target thread",
            source,
        })?;

    let mut running = RunningTarget {
        addr,
        cert_pem,
        counters: None,
        server_tid: None,
        capacity,
        stop: Some(stop_tx),
        thread: Some(thread),
    };
    match ready_rx.recv() {
        Ok(Ok((counters, tid))) => {
            running.counters = Some(counters);
            running.server_tid = tid;
            Ok(running)
        }
        Ok(Err(e)) => {
            running.stop_and_join();
            Err(e)
        }
        Err(_) => {
            running.stop_and_join();
            Err(TargetError::ThreadStopped)
        }
    }
}

/// The calling thread's kernel id, from the `/proc/thread-self` link (`PID/task/TID`).
fn own_tid() -> Option<u32> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

/// Listens on `addr` with a deep accept backlog. The standard library's 128 is too
/// short for a load test's opening burst: connections past it have their SYN dropped
/// and retried a whole second later, which would read as target latency.
fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

async fn accept_loop(listener: TcpListener, state: Arc<State>, mut stop: oneshot::Receiver<()>) {
    loop {
        tokio::select! {
            _ = &mut stop => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    tokio::spawn(conn::serve(stream, Arc::clone(&state)));
                }
                // Out of file descriptors or a connection reset before accept: back off
                // briefly instead of spinning on the error.
                Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
            },
        }
    }
}

//! `headroom shard`: one shard of a sharded run. It dials its coordinator, opens the
//! TLS 1.3 channel only the run's secret can answer ([`super::channel`]), proves it
//! knows the run's secret (and makes the coordinator prove it too, so nothing else can
//! hand it load to send), builds the plan from the coordinator's setup (scenario text
//! and overrides, [`crate::scenario::Setup`]), then runs each job it is given: gets its engine threads ready, says
//! so, starts at the absolute instant the coordinator names, streams each completed
//! second, and sends its raw share at the end.

use std::net::TcpStream;
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::auth;
use super::channel::{self, Channel, ClientKeys};
use super::wire::{
    self, FromShard, Setup, ToShard, WireError, HEARTBEAT, MAX_FRAME, MAX_HANDSHAKE,
};
use crate::engine::{self, Control, EngineError, Live, Observer, Step};
use crate::plan::{Plan, Slice};

/// How long a shard keeps trying to reach its coordinator (a pod may start before the
/// coordinator listens).
const CONNECT_FOR: Duration = Duration::from_secs(60);
/// How long a handshake message may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Who this shard is: what the environment told it.
#[derive(Debug, Clone)]
pub struct Identity {
    /// Its part of the run's load.
    pub slice: Slice,
    /// The run's secret.
    pub secret: String,
}

/// Why a shard ended without delivering its share.
#[derive(Debug, thiserror::Error)]
pub enum ShardError {
    /// The coordinator could not be reached.
    #[error("cannot reach the coordinator at {addr}: {source}")]
    Unreachable {
        /// Where it was dialled.
        addr: String,
        /// The last failure.
        #[source]
        source: std::io::Error,
    },
    /// The coordinator did not prove it knows the run's secret.
    #[error("the coordinator at {addr} did not prove it knows the run's secret ({why}); nothing was sent")]
    Impostor {
        /// Where it was dialled.
        addr: String,
        /// How it failed: the channel's handshake or the proof inside it.
        why: String,
    },
    /// The encrypted channel could not be set up (a failed connection, or a key that
    /// could not be made).
    #[error("no encrypted channel to the coordinator at {addr}: {source}")]
    Channel {
        /// Where it was dialled.
        addr: String,
        /// Why.
        #[source]
        source: channel::ChannelError,
    },
    /// The coordinator refused this shard.
    #[error("the coordinator refused this shard: {reason}")]
    Refused {
        /// The coordinator's reason, as it sent it.
        reason: String,
    },
    /// The channel failed.
    #[error("lost the coordinator: {0}")]
    Lost(#[from] WireError),
    /// The coordinator sent a message out of turn.
    #[error("the coordinator sent {0:?} out of turn")]
    Protocol(Box<ToShard>),
    /// The coordinator's channel closed between jobs.
    #[error("the coordinator sent nothing out of turn")]
    Silent,
    /// The run's secret is too weak to use.
    #[error("cannot set up the run: {0}")]
    Secret(#[source] auth::WeakSecret),
    /// The plan could not be built from the coordinator's setup.
    #[error("cannot set up the run: {0}")]
    Setup(#[source] BasePlanError),
    /// The engine could not run a job.
    #[error("{0}")]
    Engine(#[from] EngineError),
}

/// Why a shard cannot build the plan its coordinator's setup describes: the
/// scenario or a threshold, as [`crate::scenario::Setup::plan`] words it.
pub type BasePlanError = crate::scenario::SetupError;

/// The base plan a setup describes, compiled as the coordinator compiled its own;
/// the engine threads are this shard's share of its host's unless `--threads` said.
pub fn base_plan(setup: &Setup) -> Result<Plan, BasePlanError> {
    let mut plan = setup.setup.plan()?;
    let threads_given = setup.setup.overrides.threads.is_some();
    if let (Some(threads), false) = (setup.threads, threads_given) {
        plan.threads = threads.max(1);
    }
    Ok(plan)
}

/// Runs the shard until the coordinator says goodbye.
pub fn serve(coordinator: &str, me: &Identity) -> Result<(), ShardError> {
    auth::check_secret(&me.secret).map_err(ShardError::Secret)?;
    let keys = ClientKeys::from_secret(&me.secret).map_err(|source| ShardError::Channel {
        addr: coordinator.into(),
        source,
    })?;
    let sock = dial(coordinator)?;
    sock.set_read_timeout(Some(HANDSHAKE_TIMEOUT))
        .map_err(WireError::from)?;
    let mut stream = match channel::connect(sock, &keys) {
        Ok(stream) => stream,
        // Whatever answered did not sign with the run's key: nothing is sent to it.
        Err(e) if e.is_tls() => {
            return Err(ShardError::Impostor {
                addr: coordinator.into(),
                why: format!("TLS: {e}"),
            })
        }
        Err(source) => {
            return Err(ShardError::Channel {
                addr: coordinator.into(),
                source,
            })
        }
    };
    handshake(&mut stream, coordinator, me)?;
    stream.set_read_timeout(None).map_err(WireError::from)?;
    let setup = match wire::recv(&mut stream, MAX_FRAME)? {
        ToShard::Setup(setup) => setup,
        ToShard::Refused { reason } => return Err(ShardError::Refused { reason }),
        other => return Err(ShardError::Protocol(Box::new(other))),
    };
    let writer = Arc::new(Mutex::new(stream.try_clone().map_err(WireError::from)?));
    let base = match base_plan(&setup) {
        Ok(plan) => plan,
        Err(e) => {
            let _ = send(
                &writer,
                &FromShard::Failed {
                    error: e.to_string(),
                },
            );
            return Err(ShardError::Setup(e));
        }
    };
    let control = Arc::new(Mutex::new(Control::default()));
    let inbox = read_on(stream, control.clone());
    let _heartbeat = Heartbeat::start(writer.clone());
    loop {
        match inbox.recv() {
            Ok(Ok(ToShard::Job { step })) => {
                let job = Control::default();
                *control.lock().unwrap_or_else(|p| p.into_inner()) = job.clone();
                run_job(&base, step, me.slice, &job, &writer, &inbox)?;
            }
            Ok(Ok(ToShard::Bye)) => return Ok(()),
            // A stop between jobs has nothing to stop.
            Ok(Ok(ToShard::Stop)) => {}
            Ok(Ok(other)) => return Err(ShardError::Protocol(Box::new(other))),
            Ok(Err(e)) => return Err(e.into()),
            Err(_) => return Err(ShardError::Silent),
        }
    }
}

type Inbox = Receiver<Result<ToShard, WireError>>;

/// Runs one job: its plan, started when the coordinator says, its seconds streamed
/// and its share sent back.
fn run_job(
    base: &Plan,
    step: Option<Step>,
    slice: Slice,
    control: &Control,
    writer: &Arc<Mutex<Channel>>,
    inbox: &Inbox,
) -> Result<(), ShardError> {
    let plan = match step {
        Some(step) => crate::search::step::step_plan(base, step),
        None => base.clone(),
    };
    let plan = Arc::new(plan);
    let ready = FromShard::Ready {
        names: plan.names.clone(),
        length_ms: plan.duration().as_millis() as u64,
        threads: plan.threads.max(1),
        host: host_name(),
    };
    let mut heard_ahead_us = 0i64;
    let mut lost = None;
    let mut starter = || -> Option<Instant> {
        if let Err(e) = send(writer, &ready) {
            lost = Some(e);
            return None;
        }
        match inbox.recv() {
            Ok(Ok(ToShard::Start { at_unix_ns })) => {
                let (at, ahead) = instant_of(at_unix_ns);
                heard_ahead_us = ahead;
                Some(at)
            }
            Ok(Err(e)) => {
                lost = Some(e);
                None
            }
            _ => None,
        }
    };
    let mut observer = Streamer {
        writer,
        control,
        failed: None,
    };
    let result = engine::run_share_at(plan, slice, Some(&mut starter), control, &mut observer);
    if let Some(e) = lost.or(observer.failed) {
        return Err(e.into());
    }
    let reply = match result {
        Ok(share) => FromShard::Done {
            share: Box::new(share),
            heard_ahead_us,
        },
        // Stopped before the start: the coordinator gave this job up.
        Err(EngineError::NotStarted) => return Ok(()),
        Err(e) => FromShard::Failed {
            error: e.to_string(),
        },
    };
    send(writer, &reply)?;
    Ok(())
}

/// The instant `at_unix_ns` (the coordinator's absolute start) is on this host's
/// monotonic clock, and how far ahead of it this shard is now, in microseconds.
///
/// Why via `SystemTime`: the shards' monotonic clocks share no origin; their wall
/// clocks do (NTP), so the skew between shards is what their wall clocks disagree
/// by, whatever the number of shards or how long each took to hear the start.
fn instant_of(at_unix_ns: u64) -> (Instant, i64) {
    let (now, wall) = (Instant::now(), SystemTime::now());
    let wall_ns = wall
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let ahead_ns = at_unix_ns as i128 - wall_ns as i128;
    let at = match ahead_ns {
        n if n >= 0 => now + Duration::from_nanos(n as u64),
        // Heard late: start now; the lag shows in this shard's generator figures.
        _ => now,
    };
    (at, (ahead_ns / 1000) as i64)
}

/// Sends each completed second (and the end of the warm-up) to the coordinator; a
/// send that fails means the coordinator is gone, so the job stops.
struct Streamer<'a> {
    writer: &'a Arc<Mutex<Channel>>,
    control: &'a Control,
    failed: Option<WireError>,
}

impl Observer for Streamer<'_> {
    fn second(&mut self, live: &Live) {
        let msg = FromShard::Second {
            bucket: Box::new(live.last_bucket.clone()),
            delta: live.delta.clone(),
        };
        self.send(&msg);
    }

    fn measuring(&mut self) {
        self.send(&FromShard::Measuring);
    }
}

impl Streamer<'_> {
    fn send(&mut self, msg: &FromShard) {
        if self.failed.is_some() {
            return;
        }
        if let Err(e) = send(self.writer, msg) {
            self.failed = Some(e);
            self.control.stop();
        }
    }
}

fn send(writer: &Mutex<Channel>, msg: &FromShard) -> Result<(), WireError> {
    let mut w = writer.lock().unwrap_or_else(|p| p.into_inner());
    wire::send(&mut *w, msg)
}

/// Reads the coordinator's messages on a thread of their own, so that a `Stop` stops
/// the job at once, and a lost coordinator too.
fn read_on(mut stream: Channel, control: Arc<Mutex<Control>>) -> Inbox {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || loop {
        let msg = wire::recv::<ToShard>(&mut stream, MAX_FRAME);
        let stop = matches!(msg, Ok(ToShard::Stop) | Err(_));
        if stop {
            control.lock().unwrap_or_else(|p| p.into_inner()).stop();
        }
        let end = msg.is_err();
        if tx.send(msg).is_err() || end {
            return;
        }
    });
    rx
}

/// Says "alive" every [`HEARTBEAT`] until dropped, so the coordinator can tell a
/// shard that went silent (its host gone, the network cut) from one still draining.
struct Heartbeat {
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl Heartbeat {
    fn start(writer: Arc<Mutex<Channel>>) -> Heartbeat {
        use std::sync::atomic::Ordering;
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let done = stop.clone();
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(HEARTBEAT);
                if done.load(Ordering::Relaxed) || send(&writer, &FromShard::Alive).is_err() {
                    return;
                }
            }
        });
        Heartbeat { stop }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Connects to the coordinator, retrying for [`CONNECT_FOR`].
fn dial(addr: &str) -> Result<TcpStream, ShardError> {
    let deadline = Instant::now() + CONNECT_FOR;
    loop {
        match TcpStream::connect(addr) {
            Ok(stream) => {
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Err(e) if Instant::now() >= deadline => {
                return Err(ShardError::Unreachable {
                    addr: addr.into(),
                    source: e,
                })
            }
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// Hello → the coordinator's proof → ours.
fn handshake(stream: &mut Channel, addr: &str, me: &Identity) -> Result<(), ShardError> {
    let (index, count) = (me.slice.index(), me.slice.count());
    let nonce = auth::nonce();
    let hello = FromShard::Hello {
        version: wire::VERSION.into(),
        index,
        count,
        nonce: nonce.clone(),
    };
    wire::send(stream, &hello)?;
    let (mac, theirs) = match wire::recv(stream, MAX_HANDSHAKE)? {
        ToShard::Challenge { mac, nonce } => (mac, nonce),
        ToShard::Refused { reason } => return Err(ShardError::Refused { reason }),
        other => return Err(ShardError::Protocol(Box::new(other))),
    };
    let parts = auth::coordinator_parts(&nonce, index, count);
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    if !auth::verify(&me.secret, &parts, &mac) {
        return Err(ShardError::Impostor {
            addr: addr.into(),
            why: "its proof is wrong".into(),
        });
    }
    let mac = auth::shard_mac(&me.secret, (&theirs, &nonce), index, count);
    wire::send(stream, &FromShard::Proof { mac })?;
    Ok(())
}

/// This host's name, for the output ("" when unknown).
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

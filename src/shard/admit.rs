//! Admission to a sharded run: the coordinator's listener, the TLS 1.3 handshake keyed
//! from the run's secret ([`super::channel`]), then the handshake inside it that makes
//! a peer prove it knows the secret (on a thread per connection, so a slow or hostile
//! peer holds up no one), and the reader of an admitted shard's messages.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::auth;
use super::channel::{self, Channel, ServerKeys};
use super::wire::{self, FromShard, ToShard, WireError, MAX_FRAME, MAX_HANDSHAKE};

/// How long a handshake may take.
const HANDSHAKE_FOR: Duration = Duration::from_secs(10);

/// Why a connection was not admitted to the run (the peer is told when it can be).
#[derive(Debug, thiserror::Error)]
pub(super) enum Refusal {
    /// The shard runs another protocol version.
    #[error("shard version {version:?}, the coordinator's is {:?}", wire::VERSION)]
    Version {
        /// The shard's version.
        version: String,
    },
    /// The first message was not a hello.
    #[error("expected a hello, got {0:?}")]
    NotHello(Box<FromShard>),
    /// No hello could be read.
    #[error("no hello: {0}")]
    NoHello(#[source] WireError),
    /// The shard's index or count does not fit the run.
    #[error("shard {index} of {claimed}; this run has {count} shards")]
    Count {
        /// The shard's index.
        index: u64,
        /// The shard count it was told.
        claimed: u64,
        /// The run's shard count.
        count: u64,
    },
    /// Our challenge could not be sent.
    #[error("{0}")]
    Challenge(#[source] WireError),
    /// The answer to the challenge was not a proof.
    #[error("expected a proof, got {0:?}")]
    NotProof(Box<FromShard>),
    /// The peer hung up instead of answering the challenge.
    #[error("it hung up during the handshake ({0}): it does not know the run's secret")]
    HungUp(#[source] WireError),
    /// The peer's proof is wrong.
    #[error("it does not know the run's secret")]
    WrongSecret,
    /// Every shard of the run has joined.
    #[error("the run has all its shards")]
    Full,
    /// No TLS 1.3 channel could be set up: the peer is not a shard of this version, or
    /// it refused the coordinator's key (it does not know the run's secret).
    #[error("no encrypted channel: {0}")]
    Channel(#[source] channel::ChannelError),
}

/// A shard that authenticated: its index, stream, address and handshake round trip.
pub(super) type Joined = (u64, Channel, SocketAddr, Duration);

/// What the readers hear: a shard's message, or that its connection ended.
pub(super) type Heard = (usize, Result<FromShard, WireError>);

/// Reads shard `i`'s messages on a thread of their own until its connection ends.
pub(super) fn read_from(i: usize, mut stream: Channel, tx: Sender<Heard>) {
    std::thread::spawn(move || loop {
        let msg = wire::recv::<FromShard>(&mut stream, MAX_FRAME);
        let end = msg.is_err();
        if tx.send((i, msg)).is_err() || end {
            return;
        }
    });
}

/// Accepts connections until `closed`, each authenticated on a thread of its own (a
/// slow or hostile peer holds up no one); shards that prove the secret go to `joins`
/// until the run is `full`, everything else is refused with a warning.
pub(super) fn accept_on(
    listener: TcpListener,
    secret: String,
    keys: ServerKeys,
    count: u64,
    joins: Sender<Joined>,
    closed: Arc<AtomicBool>,
    full: Arc<AtomicBool>,
) {
    let _ = listener.set_nonblocking(true);
    let secret = Arc::new(secret);
    std::thread::spawn(move || {
        while !closed.load(Ordering::SeqCst) {
            let (stream, peer) = match listener.accept() {
                Ok(accepted) => accepted,
                Err(_) => {
                    // Nonblocking: nothing waiting (or a transient accept error).
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
            };
            let (secret, joins, full) = (secret.clone(), joins.clone(), full.clone());
            let keys = keys.clone();
            std::thread::spawn(move || {
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_nodelay(true);
                match admit(stream, &secret, &keys, count, &full) {
                    Ok((index, stream, rtt)) => {
                        let _ = joins.send((index, stream, peer, rtt));
                    }
                    Err(reason) => {
                        eprintln!("warning: refused a shard connection from {peer}: {reason}")
                    }
                }
            });
        }
    });
}

/// The coordinator's half of the handshake: the shard's hello, our proof and nonce,
/// its proof. Returns the shard's index, or why it was refused (it is told too).
fn admit(
    stream: TcpStream,
    secret: &str,
    keys: &ServerKeys,
    count: u64,
    full: &AtomicBool,
) -> Result<(u64, Channel, Duration), Refusal> {
    let _ = stream.set_read_timeout(Some(HANDSHAKE_FOR));
    let mut stream = channel::accept(stream, keys).map_err(Refusal::Channel)?;
    let refuse = |stream: &mut Channel, reason: Refusal| {
        let _ = wire::send(
            stream,
            &ToShard::Refused {
                reason: reason.to_string(),
            },
        );
        Err(reason)
    };
    let (index, claimed, nonce) = match wire::recv(&mut stream, MAX_HANDSHAKE) {
        Ok(FromShard::Hello {
            version,
            index,
            count,
            nonce,
        }) if version == wire::VERSION => (index, count, nonce),
        Ok(FromShard::Hello { version, .. }) => {
            return refuse(&mut stream, Refusal::Version { version })
        }
        Ok(other) => return refuse(&mut stream, Refusal::NotHello(Box::new(other))),
        Err(e) => return Err(Refusal::NoHello(e)),
    };
    if claimed != count || index >= count {
        return refuse(
            &mut stream,
            Refusal::Count {
                index,
                claimed,
                count,
            },
        );
    }
    let ours = auth::nonce();
    let mac = auth::coordinator_mac(secret, &nonce, index, count);
    let sent = Instant::now();
    if let Err(e) = wire::send(
        &mut stream,
        &ToShard::Challenge {
            mac,
            nonce: ours.clone(),
        },
    ) {
        return Err(Refusal::Challenge(e));
    }
    let proof = match wire::recv(&mut stream, MAX_HANDSHAKE) {
        Ok(FromShard::Proof { mac }) => mac,
        // A shard that found our proof wrong hangs up: it has the wrong secret.
        Ok(other) => return refuse(&mut stream, Refusal::NotProof(Box::new(other))),
        Err(e) => return Err(Refusal::HungUp(e)),
    };
    let rtt = sent.elapsed();
    let parts = auth::shard_parts((&ours, &nonce), index, count);
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    if !auth::verify(secret, &parts, &proof) {
        return refuse(&mut stream, Refusal::WrongSecret);
    }
    if full.load(Ordering::SeqCst) {
        return refuse(&mut stream, Refusal::Full);
    }
    let _ = stream.set_read_timeout(None);
    Ok((index, stream, rtt))
}

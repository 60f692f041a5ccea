//! The coordinator of a sharded run: it admits exactly its N shards (each proving it
//! knows the run's secret), sets them up, and for each job (a run, or a search step)
//! holds the start barrier, names one absolute start instant, merges the seconds the
//! shards stream into live progress, and merges their shares exactly at the end. A
//! shard that dies, goes silent or fails ends the job loudly, named, with the other
//! shards stopped and their shares kept: it is never replaced mid-run, since its share
//! of the schedule would be lost.

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::admit::{accept_on, read_from, Heard};
use super::channel::{Channel, ServerKeys};
pub use super::coord_error::CoordError;
use super::summary::{keep_shares, own_cpu};
use super::wire::{self, FromShard, Setup, ToShard, WireError};
use super::Placement;
use crate::engine::{self, Control, EngineError, Observer, Outcome, Runner, Share, Step, Timeline};
use crate::metrics::summary::CoordinatorSummary;
use crate::plan::Plan;

/// How long every shard has to get its engine threads ready for a job.
const READY_FOR: Duration = Duration::from_secs(60);
/// A shard not heard from for this long (it sends [`wire::HEARTBEAT`]s) is lost.
const SILENCE: Duration = Duration::from_secs(10);
/// How far ahead the start instant is named, beyond twice the slowest round trip.
///
/// Why a lead at all: every shard must hear the instant before it comes, or it starts
/// late and its first arrivals carry that lag. Sending N messages takes microseconds
/// each; the rest is each shard's wake-up, so the lead covers a busy host's
/// scheduling delay, not N round trips.
const START_LEAD: Duration = Duration::from_millis(50);

/// A joined shard.
struct Link {
    stream: Channel,
    peer: SocketAddr,
    rtt: Duration,
}

/// The coordinator of one sharded run, its shards joined and set up.
pub struct Coordinator {
    links: Vec<Link>,
    heard: Receiver<Heard>,
    placement: Box<dyn Placement>,
    /// Where it listens.
    address: String,
    /// Why each shard's process or pod ended, once it did.
    ended: Vec<Option<String>>,
    /// Tells the acceptor thread the run is over.
    closed: Arc<AtomicBool>,
    finished: bool,
}

impl Coordinator {
    /// Admits `placement`'s shards on `listener` (each proving it knows `secret`),
    /// waiting at most `join_for`, and sends each the run's `setup`. Connections that
    /// cannot prove the secret are refused with a warning and change nothing.
    pub fn join(
        listener: TcpListener,
        secret: &str,
        setup: &Setup,
        mut placement: Box<dyn Placement>,
        join_for: Duration,
    ) -> Result<Coordinator, CoordError> {
        let count = placement.count();
        let address = listener
            .local_addr()
            .map_or_else(|_| "?".into(), |a| a.to_string());
        let closed = Arc::new(AtomicBool::new(false));
        let full = Arc::new(AtomicBool::new(false));
        let (join_tx, join_rx) = mpsc::channel();
        let keys = match ServerKeys::from_secret(secret) {
            Ok(keys) => keys,
            Err(e) => {
                placement.finish();
                return Err(CoordError::Channel(e));
            }
        };
        accept_on(
            listener,
            secret.to_string(),
            keys,
            count,
            join_tx,
            closed.clone(),
            full.clone(),
        );
        let mut slots: Vec<Option<Link>> = (0..count).map(|_| None).collect();
        let started = Instant::now();
        let fail = |e: CoordError, placement: &mut Box<dyn Placement>| {
            closed.store(true, Ordering::SeqCst);
            placement.finish();
            Err(e)
        };
        while slots.iter().any(Option::is_none) {
            if let Some((index, reason)) = placement.lost() {
                let name = placement.name(index);
                return fail(
                    CoordError::EndedEarly {
                        index,
                        name,
                        reason,
                    },
                    &mut placement,
                );
            }
            if started.elapsed() > join_for {
                let missing: Vec<String> = (0..count)
                    .filter(|&i| slots[i as usize].is_none())
                    .map(|i| format!("shard {i} ({})", placement.name(i)))
                    .collect();
                let e = CoordError::JoinTimeout {
                    joined: slots.iter().flatten().count(),
                    count: count as usize,
                    waited: join_for,
                    missing: missing.join(", "),
                };
                return fail(e, &mut placement);
            }
            match join_rx.recv_timeout(Duration::from_millis(50)) {
                Ok((index, mut stream, peer, rtt)) => {
                    let slot = &mut slots[index as usize];
                    if slot.is_some() {
                        let reason = format!("shard {index} has joined already");
                        let _ = wire::send(
                            &mut stream,
                            &ToShard::Refused {
                                reason: reason.clone(),
                            },
                        );
                        eprintln!("warning: refused a shard connection from {peer}: {reason}");
                        continue;
                    }
                    *slot = Some(Link { stream, peer, rtt });
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        full.store(true, Ordering::SeqCst);
        let mut links: Vec<Link> = slots.into_iter().flatten().collect();
        let (tx, heard) = mpsc::channel();
        for (i, link) in links.iter_mut().enumerate() {
            let sent = wire::send(&mut link.stream, &ToShard::Setup(Box::new(setup.clone())))
                .and_then(|()| Ok(link.stream.try_clone()?));
            match sent {
                Ok(read) => read_from(i, read, tx.clone()),
                Err(e) => {
                    let reason = e.to_string();
                    return fail(
                        CoordError::Setup {
                            index: i as u64,
                            reason,
                        },
                        &mut placement,
                    );
                }
            }
        }
        Ok(Coordinator {
            address,
            ended: vec![None; links.len()],
            links,
            heard,
            placement,
            closed,
            finished: false,
        })
    }

    /// How shard `index` was placed, for messages ("pid 1234", "pod run-2").
    fn name(&self, index: usize) -> String {
        format!("shard {index} ({})", self.placement.name(index as u64))
    }

    /// Sends `msg` to every shard, ignoring shards already gone (their loss is heard
    /// by their reader).
    fn broadcast(&mut self, msg: &ToShard) {
        for link in &mut self.links {
            let _ = wire::send(&mut link.stream, msg);
        }
    }

    /// Ends the run: tells the shards goodbye and lets their processes or pods go.
    pub fn finish(mut self) {
        self.broadcast(&ToShard::Bye);
        self.finished = true;
        self.closed.store(true, Ordering::SeqCst);
        self.placement.finish();
    }

    /// Runs one job on every shard, as [`Runner::run`] describes; see the module doc.
    fn job(
        &mut self,
        plan: Arc<Plan>,
        step: Option<Step>,
        control: &Control,
        observer: &mut dyn Observer,
    ) -> Result<Outcome, EngineError> {
        let n = self.links.len();
        let cpu_before = own_cpu();
        self.broadcast(&ToShard::Job { step });
        let mut ready = vec![None; n];
        let deadline = Instant::now() + READY_FOR;
        while ready.iter().any(Option::is_none) {
            if control.is_stopped() {
                self.broadcast(&ToShard::Stop);
                return Err(EngineError::NotStarted);
            }
            if let Some(lost) = self.placement_lost(&[]) {
                return self.give_up(lost.1);
            }
            if Instant::now() > deadline {
                let slow: Vec<String> = (0..n)
                    .filter(|&i| ready[i].is_none())
                    .map(|i| self.name(i))
                    .collect();
                let why = format!("{} not ready within {READY_FOR:?}", slow.join(", "));
                return self.give_up(why);
            }
            let (i, msg) = match self.heard.recv_timeout(Duration::from_millis(50)) {
                Ok(heard) => heard,
                Err(_) => continue,
            };
            match msg {
                Ok(FromShard::Ready {
                    names,
                    length_ms,
                    host,
                    ..
                }) => {
                    let length = plan.duration().as_millis() as u64;
                    if names != plan.names || length_ms != length {
                        let why = format!(
                            "{} built another plan than the coordinator's (requests {names:?}, {length_ms} ms; expected {:?}, {length} ms): are the shard and the coordinator the same version, with the same files?",
                            self.name(i),
                            plan.names
                        );
                        return self.give_up(why);
                    }
                    ready[i] = Some(host);
                }
                Ok(FromShard::Failed { error }) => {
                    let why = format!("{} could not run: {error}", self.name(i));
                    return self.give_up(why);
                }
                Ok(FromShard::Alive) => {}
                Ok(other) => {
                    let why = format!("{} sent {other:?} before it was ready", self.name(i));
                    return self.give_up(why);
                }
                Err(e) => {
                    let why = format!(
                        "{} was lost before the start: {}",
                        self.name(i),
                        lost_words(&e)
                    );
                    return self.give_up(why);
                }
            }
        }
        let rtt = self.links.iter().map(|l| l.rtt).max().unwrap_or_default();
        let at = SystemTime::now() + START_LEAD + rtt * 2;
        let at_unix_ns = at
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        self.broadcast(&ToShard::Start { at_unix_ns });
        let hosts: Vec<String> = ready.into_iter().map(Option::unwrap_or_default).collect();
        let mut outcome = self.collect(&plan, &hosts, control, observer)?;
        let cpu_s = own_cpu().saturating_sub(cpu_before).as_secs_f64();
        let wall = outcome.summary.duration_s.max(1e-9) * n as f64;
        outcome.summary.coordinator = Some(CoordinatorSummary {
            address: self.address.clone(),
            cpu_s,
            cpu_percent_per_shard: cpu_s / wall * 100.0,
        });
        Ok(outcome)
    }

    /// After the start: streams seconds into the live timeline until every shard sent
    /// its share or was lost, then merges what came.
    fn collect(
        &mut self,
        plan: &Arc<Plan>,
        hosts: &[String],
        control: &Control,
        observer: &mut dyn Observer,
    ) -> Result<Outcome, EngineError> {
        let n = self.links.len();
        let mut timeline = Timeline::new(plan, n);
        let mut shares: Vec<Option<(Share, i64)>> = (0..n).map(|_| None).collect();
        let mut gone: Vec<Option<String>> = vec![None; n];
        let mut heard_at = vec![Instant::now(); n];
        let mut measuring = 0;
        let mut stopped = false;
        // After a loss, the others get the request timeout plus a margin to drain.
        let mut drain_by: Option<Instant> = None;
        let open = |s: &[Option<(Share, i64)>], g: &[Option<String>]| {
            (0..n).filter(|&i| s[i].is_none() && g[i].is_none()).count()
        };
        while open(&shares, &gone) > 0 {
            if let Ok((i, msg)) = self.heard.recv_timeout(Duration::from_millis(50)) {
                heard_at[i] = Instant::now();
                match msg {
                    Ok(FromShard::Second { bucket, delta }) => {
                        match delta.as_deref().map(|d| engine::fits(plan, d)) {
                            Some(Err(reason)) => {
                                gone[i] = Some(format!("{}: {reason}", self.name(i)))
                            }
                            _ => timeline.add(*bucket, delta.map(|d| *d), false, observer),
                        }
                    }
                    Ok(FromShard::Measuring) => {
                        measuring += 1;
                        if measuring == n {
                            observer.measuring();
                        }
                    }
                    Ok(FromShard::Alive) => {}
                    Ok(FromShard::Done {
                        share,
                        heard_ahead_us,
                    }) => match share.check(plan) {
                        Ok(()) if share.shard.index() == i as u64 => {
                            shares[i] = Some((*share, heard_ahead_us))
                        }
                        Ok(()) => {
                            gone[i] = Some(format!(
                                "{} sent shard {}'s share",
                                self.name(i),
                                share.shard.index()
                            ))
                        }
                        Err(e) => gone[i] = Some(format!("{}: {e}", self.name(i))),
                    },
                    Ok(FromShard::Failed { error }) => {
                        gone[i] = Some(format!("{} failed: {error}", self.name(i)))
                    }
                    Ok(other) => {
                        gone[i] = Some(format!("{} sent {other:?} out of turn", self.name(i)))
                    }
                    Err(e) if shares[i].is_none() => {
                        // Its process (or pod) ending says more than the closed socket.
                        gone[i] = Some(match self.ended(i) {
                            Some(ended) => ended,
                            None => {
                                format!("{} was lost mid-run: {}", self.name(i), lost_words(&e))
                            }
                        })
                    }
                    Err(_) => {}
                }
            }
            while let Some((index, reason)) = self.placement.lost() {
                let i = index as usize;
                let ended = format!("{} ended: {reason}", self.name(i));
                if shares[i].is_none() && gone[i].is_none() {
                    gone[i] = Some(ended.clone());
                }
                self.ended[i] = Some(ended);
            }
            for i in 0..n {
                if shares[i].is_none() && gone[i].is_none() && heard_at[i].elapsed() > SILENCE {
                    gone[i] = Some(format!("{} went silent for {SILENCE:?}", self.name(i)));
                }
            }
            let lost_one = gone.iter().any(Option::is_some);
            if (lost_one || control.is_stopped()) && !stopped {
                // Every other shard stops as Ctrl-C would stop a single process: what
                // it measured is kept, nothing of a lost shard's share is made up.
                stopped = true;
                self.broadcast(&ToShard::Stop);
                if lost_one {
                    drain_by = Some(Instant::now() + plan.timeout + Duration::from_secs(10));
                }
            }
            if drain_by.is_some_and(|t| Instant::now() > t) {
                for i in 0..n {
                    if shares[i].is_none() && gone[i].is_none() {
                        gone[i] = Some(format!("{} did not stop after the loss", self.name(i)));
                    }
                }
            }
        }
        let _ = timeline.finish(observer);
        keep_shares(&shares);
        let got: Vec<Share> = shares.iter().flatten().map(|(s, _)| s.clone()).collect();
        let mut outcome = engine::merge(plan, &got);
        let lost: Vec<String> = gone.iter().flatten().cloned().collect();
        if !lost.is_empty() {
            outcome.summary.interrupted = true;
            outcome.lost = Some(lost.join("; "));
        }
        let mut generators = outcome.shards.iter();
        outcome.summary.shards = (0..n)
            .map(|i| {
                let name = self.placement.name(i as u64);
                let peer = self.links[i].peer.ip().to_string();
                match &shares[i] {
                    Some((share, ahead)) => {
                        let generator = generators.next().cloned().unwrap_or_default();
                        super::summary::of_share(
                            plan,
                            share,
                            generator,
                            *ahead,
                            (&name, &peer, &hosts[i]),
                        )
                    }
                    None => {
                        super::summary::lost(i as u64, (&name, &peer, &hosts[i]), gone[i].clone())
                    }
                }
            })
            .collect();
        Ok(outcome)
    }

    /// A shard whose process or pod ended before it delivered (ignoring those in
    /// `done`), named with why.
    fn placement_lost(&mut self, done: &[usize]) -> Option<(usize, String)> {
        let (index, reason) = self.placement.lost()?;
        let i = index as usize;
        let ended = format!("{} ended: {reason}", self.name(i));
        self.ended[i] = Some(ended.clone());
        (!done.contains(&i)).then_some((i, ended))
    }

    /// Why shard `i` ended, when its process or pod is seen to end within a second
    /// (a closed connection is usually heard a moment before the exit).
    fn ended(&mut self, i: usize) -> Option<String> {
        let deadline = Instant::now() + Duration::from_secs(1);
        while self.ended[i].is_none() && Instant::now() < deadline {
            match self.placement.lost() {
                Some((index, reason)) => {
                    let ended = format!("{} ended: {reason}", self.name(index as usize));
                    self.ended[index as usize] = Some(ended);
                }
                None => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        self.ended[i].clone()
    }

    /// Ends a job that could not start: every shard is told to give it up.
    fn give_up<T>(&mut self, why: String) -> Result<T, EngineError> {
        self.broadcast(&ToShard::Stop);
        Err(EngineError::Shard(why))
    }
}

impl Runner for Coordinator {
    fn run(
        &mut self,
        plan: Arc<Plan>,
        step: Option<Step>,
        control: &Control,
        observer: &mut dyn Observer,
    ) -> Result<Outcome, EngineError> {
        self.job(plan, step, control, observer)
    }
}

impl Drop for Coordinator {
    fn drop(&mut self) {
        if !self.finished {
            self.closed.store(true, Ordering::SeqCst);
            self.placement.finish();
        }
    }
}

/// How a lost connection reads in a message.
fn lost_words(e: &WireError) -> String {
    match e.is_closed() {
        true => "its connection closed".into(),
        false => e.to_string(),
    }
}

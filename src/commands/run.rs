//! `headroom run`: load the plan, start the watches, drive the load, print progress and
//! the summary (with the resource profile), write the JSON, record the run in the store
//! as it goes, and turn the verdict into an exit code.

use std::sync::Arc;

use crate::engine::{Control, Live, Runner};
use crate::metrics::summary::{Aborted, Summary};
use crate::metrics::threshold::window::LiveJudge;
use crate::report::progress::Progress;
use crate::store::{self, RunKind};
use crate::watch::Watches;

use super::args::RunArgs;
use super::common;
use super::error::CommandError;
use super::exit::ExitCode;
use super::sharded::Engine;

/// `--abort-on-fail` judges no rule before this many seconds were recorded: the first
/// seconds (connections opening, caches warming) say little about the run, and k6's
/// `delayAbortEval` exists for the same reason.
const ABORT_GRACE_S: u64 = 5;

/// Runs `headroom run` and returns its exit code (the verdict), or why it stopped.
/// (`--compare-protocols` is [`super::compare_protocols::run`]'s, which `cli` calls
/// instead.)
pub fn run(args: &RunArgs) -> Result<ExitCode, CommandError> {
    measure(args, true, &Control::default()).map(|(code, _)| code)
}

/// Runs one `headroom run`: its exit code and summary. `show`: print the summary's
/// text as `run` does; without, only the stored run and the warnings. `control` stops
/// it (Ctrl-C, the dashboard's button); Ctrl-C is wired to the first `control` a
/// process measures with, so runs measured one after another share one.
pub(crate) fn measure(
    args: &RunArgs,
    show: bool,
    control: &Control,
) -> Result<(ExitCode, Summary), CommandError> {
    let mut setup = super::setup::run(args)?;
    let mut plan = setup.plan()?;
    // `setup:` runs once before anything else; shards get its values with the setup.
    setup.setup_values = super::once::setup(&plan, args.common.quiet)?;
    plan.journey.setup_values = setup.setup_values.clone();
    // The sink listens before any request is sent, so `{{ sink_url }}` is known and no
    // delivery can arrive before it.
    let sink = super::delivery::start(&mut plan).map_err(CommandError::ScenarioSink)?;
    let plan = Arc::new(plan);
    let store = common::open_store(&store::resolve_path(args.common.store.as_deref()))?;
    let mut engine = Engine::start(&args.common, &setup, &plan)?;
    let specs = common::watch_specs(&plan, &args.common);
    // Watches start before any load is sent, so one that cannot start is bad input
    // with nothing sent yet.
    let tls = common::watch_tls(&args.common, &specs)?;
    let watches = Watches::start(&specs, args.common.watch_interval, tls)?;
    common::stop_on_ctrl_c_once(control, "; an interrupted run will leave no summary");
    let started = common::start_otlp(&args.common, "run", &plan)
        .map_err(CommandError::from)
        .and_then(|otlp| {
            let dashboard = common::start_dashboard(&args.common, "run", &plan, control)?;
            Ok((otlp, dashboard))
        });
    let (otlp, dashboard) = match started {
        Ok(started) => started,
        Err(e) => {
            watches.finish(None);
            return Err(e);
        }
    };
    if let Some(d) = &dashboard {
        d.set_watches(watches.live());
    }
    let mut writer = common::begin_record(
        &store,
        RunKind::Run,
        args.scenario.as_deref(),
        &plan,
        &args.common,
    );
    let mut progress = (!args.common.quiet).then(|| Progress::new(&plan.name));
    let mut store_warned = false;
    let mut judge = args
        .abort_on_fail
        .then(|| LiveJudge::new(&plan.thresholds, &plan.names, ABORT_GRACE_S));
    let mut aborted: Option<Aborted> = None;
    let mut on_second = |live: &Live| {
        if let Some(failure) = judge.as_mut().and_then(|j| j.second(&live.last_bucket)) {
            // Stopped as Ctrl-C stops a run: the summary so far still adds up.
            control.stop();
            judge = None;
            aborted = Some(Aborted {
                reason: failure.reason,
                at_s: failure.at_s,
            });
        }
        if let Some(p) = progress.as_mut() {
            p.update(live);
        }
        if let Some(d) = &dashboard {
            d.second(live);
        }
        if let Some(o) = &otlp {
            o.second(live);
        }
        // Every second the store gets what was measured so far, so that a run killed
        // at any instant still has its numbers.
        let saved = writer
            .as_mut()
            .map(|w| match (&live.checkpoint, &live.so_far) {
                (Some(summary), Some(so_far)) => {
                    w.checkpoint(Some(&live.last), summary, so_far, &plan.names)
                }
                _ => w.second(&live.last),
            });
        if let Some(Err(e)) = saved {
            if !std::mem::replace(&mut store_warned, true) {
                eprintln!(
                    "warning: {e}; the run goes on, and the store keeps it as it was before second {}",
                    live.last.t
                );
            }
        }
    };
    let result = engine.run(plan.clone(), None, control, &mut on_second);
    engine.finish();
    // `teardown:` runs once the load ended, whatever it measured.
    let teardown = super::once::teardown(&plan, args.common.quiet);
    if let Some(p) = progress.as_mut() {
        p.finish();
    }
    common::finish_otlp(otlp);
    let mut outcome = match result {
        Ok(outcome) => outcome,
        Err(e) => {
            watches.finish(None);
            if let Some(Err(w)) = writer.map(|w| w.fail(&e.to_string())) {
                eprintln!("warning: {w}");
            }
            let e = CommandError::from(e);
            if let Some(d) = dashboard {
                d.failed(&e.to_string(), e.exit_code().into());
            }
            return Err(e);
        }
    };
    outcome.summary.aborted = aborted;
    if let Some(sink) = sink {
        super::delivery::finish(sink, &plan, &mut outcome.summary, args.common.quiet);
    }
    outcome.summary.watches = watches.finish(Some(&outcome.summary));
    let summary = &outcome.summary;
    if let Some(w) = writer {
        let id = w.id();
        match w.finish(summary, &outcome.recorder, &plan.names) {
            Ok(()) if !args.common.quiet => eprintln!("saved as run {id}"),
            Ok(()) => {}
            // The store failed mid-run and said so once: its end fails alike.
            Err(_) if store_warned => {}
            Err(e) => eprintln!("warning: {e}"),
        }
    }
    if show {
        println!("{}", crate::report::text::render(summary));
    }
    if let Some(failure) = &outcome.connect_failure {
        eprintln!("warning: could not connect to {failure}");
    }
    if let Some(failure) = &outcome.tls_failure {
        eprintln!(
            "warning: {}",
            tls_warning(failure, plan.client.cacert.as_deref())
        );
    }
    // What the run could not deliver: its files, or the shares of lost shards.
    let mut unfinished = Vec::new();
    if let Err(e) = common::write_out(args.common.out.as_deref(), summary) {
        unfinished.push(e);
    }
    if let Some(prefix) = &args.csv {
        if let Err(e) = crate::report::csv::write(prefix, summary, &summary.timeline, &[]) {
            unfinished.push(CommandError::Csv(e));
        }
    }
    if let Some(lost) = &outcome.lost {
        unfinished.push(CommandError::Lost(lost.clone()));
    }
    if let Err(e) = teardown {
        unfinished.push(e);
    }
    let ended = match CommandError::all(unfinished) {
        Some(e) => Err(e),
        None => Ok(verdict(summary, outcome.connect_failure.is_some())),
    };
    // The page hears the end last, once the summary is printed and written: then the
    // server stops, so an open tab never holds the process.
    if let Some(d) = dashboard {
        let code = ended.as_ref().map_or_else(CommandError::exit_code, |c| *c);
        d.run_finished(summary, code.into());
    }
    ended.map(|code| (code, outcome.summary))
}

/// The end-of-run line for the first failed TLS handshake (`address: reason`), with
/// the way out when the server's certificate was not trusted, never a flag already
/// given: with `cacert` (the run's `--cacert` file) it says that the certificate did not
/// verify against that file.
fn tls_warning(failure: &str, cacert: Option<&std::path::Path>) -> String {
    let (addr, reason) = failure.split_once(": ").unwrap_or(("the target", failure));
    if reason.contains("not valid for name") {
        return format!(
            "TLS handshake with {addr} failed: {reason} \
             (use --resolve HOST:PORT:ADDR with a name it is valid for, or --insecure)"
        );
    }
    if !reason.contains("invalid peer certificate") {
        // The server refused us, not we the server (our own refusal names the peer's
        // certificate, and over QUIC carries the alert we sent, 42, beside it).
        return format!(
            "TLS handshake with {addr} failed: {reason}{}",
            client_certificate_hint(reason)
        );
    }
    match cacert {
        Some(file) => format!(
            "TLS handshake with {addr} failed: the server's certificate did not verify \
             against {}: {reason} (the file must hold the CA that issued it, or the \
             server's own certificate; or use --insecure)",
            file.display()
        ),
        None => {
            format!("TLS handshake with {addr} failed: {reason} (use --cacert FILE or --insecure)")
        }
    }
}

/// What a server's refusal says about the client's certificate, if anything: TLS's
/// certificate_required (116), bad_certificate (42) and unknown_ca (48), as rustls names
/// them over TCP and as QUIC carries them (crypto error 0x100 + the alert's number).
fn client_certificate_hint(reason: &str) -> &'static str {
    let has = |names: &[&str]| names.iter().any(|n| reason.contains(n));
    if has(&["CertificateRequired", "error 116"]) {
        " (the server asks for a client certificate: give --cert FILE and --key FILE)"
    } else if has(&["BadCertificate", "UnknownCA", "error 42", "error 48"]) {
        " (the server refused the client certificate, or its absence: check --cert and \
         --key, and the CA it trusts)"
    } else {
        ""
    }
}

/// 99 when a threshold failed (or `--abort-on-fail` stopped the run on one); 105 when
/// the run was interrupted otherwise (partial data decides nothing); 1 when nothing got through because no connection could ever be
/// opened; 0 otherwise.
fn verdict(summary: &Summary, connect_failed: bool) -> ExitCode {
    let kind = |k: &str| summary.errors.by_kind.get(k).copied().unwrap_or(0);
    if summary.aborted.is_some() {
        ExitCode::THRESHOLD
    } else if summary.interrupted {
        ExitCode::INTERRUPTED
    } else if summary.thresholds.iter().any(|t| !t.ok) {
        ExitCode::THRESHOLD
    } else if connect_failed && kind("connect") + kind("generator") == summary.requests {
        ExitCode::FAILURE
    } else {
        ExitCode::OK
    }
}

//! What `run` and `find` do alike around the load: scenario overrides and watch specs
//! from [`CommonArgs`], stopping on Ctrl-C, the record in the run store, and the JSON
//! written to `--out`. `demo` uses the store and Ctrl-C parts too.

use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use crate::dashboard::{Dashboard, DashboardError};
use crate::engine::Control;
use crate::otlp::{Otlp, OtlpError};
use crate::plan::Plan;
use crate::scenario::Overrides;
use crate::store::{RunKind, RunMeta, RunWriter, Store};

use super::args::CommonArgs;
use super::error::CommandError;
use super::quick::BodyFileError;

/// The scenario overrides that `--url` and the shared flags give; the caller adds its
/// own (the load model and its size). Fails, saying why, when `--body-file` cannot be
/// read.
pub fn overrides(url: Option<&str>, common: &CommonArgs) -> Result<Overrides, BodyFileError> {
    Ok(Overrides {
        url: url.map(str::to_owned),
        threads: common.threads,
        thresholds: common.thresholds.clone(),
        max_in_flight: common.max_in_flight,
        connections: common.connections,
        timeout: common.timeout,
        client: crate::scenario::ClientFlags {
            insecure: common.insecure,
            cacert: common.cacert.clone(),
            cert: common.cert.clone(),
            key: common.key.clone(),
            resolve: common.resolve.clone(),
            http2: common.http2,
            http3: common.http3,
            h3_resume: common.h3_resume,
            h3_0rtt: common.h3_0rtt,
            streams: common.streams,
            connection: common.connection,
        },
        request: common.request.request()?,
        proto_paths: common.proto_paths.clone(),
        ..Overrides::default()
    })
}

/// The specs to watch: the scenario's `watch` list, then each `--watch`.
pub fn watch_specs(plan: &Plan, common: &CommonArgs) -> Vec<String> {
    plan.watches
        .iter()
        .chain(&common.watches)
        .cloned()
        .collect()
}

/// The trust of the watches' `https://` scrapes: the run's `--cacert` and `--insecure`,
/// as curl applies its flags to every URL; `None` (Mozilla's roots) without either,
/// or when no watch in `specs` scrapes over `https://` (then the flags are the target's
/// business alone, as before). A CA file that cannot be used is bad input, as it is for
/// an `https://` target.
pub fn watch_tls(
    common: &CommonArgs,
    specs: &[String],
) -> Result<Option<Arc<rustls::ClientConfig>>, crate::scenario::ScenarioError> {
    let any_https = specs.iter().any(|s| s.contains("https://"));
    if !any_https || (!common.insecure && common.cacert.is_none()) {
        return Ok(None);
    }
    let options = crate::client::tls::TlsOptions {
        insecure: common.insecure,
        cacert: common.cacert.clone(),
        ..Default::default()
    };
    crate::client::tls::client_config(&options)
        .map(Some)
        .map_err(|e| crate::scenario::ScenarioError {
            location: "command line".into(),
            message: e.to_string(),
        })
}

/// Makes Ctrl-C stop what `control` drives, so the command still ends normally and
/// reports what it measured. A handler that cannot be installed costs a warning that
/// ends with `consequence` (e.g. `"; an interrupted run will leave no summary"`).
pub fn stop_on_ctrl_c(control: &Control, consequence: &str) {
    let handler_control = control.clone();
    if let Err(e) = ctrlc::set_handler(move || handler_control.stop()) {
        eprintln!("warning: cannot catch Ctrl-C ({e}){consequence}");
    }
}

/// [`stop_on_ctrl_c`] the first time a process calls it, nothing after: a handler
/// can be set once, and the commands that measure several runs one after another
/// (`run --compare-protocols`) pass the same `control` to each.
pub fn stop_on_ctrl_c_once(control: &Control, consequence: &str) {
    use std::sync::atomic::{AtomicBool, Ordering};
    static SET: AtomicBool = AtomicBool::new(false);
    if !SET.swap(true, Ordering::Relaxed) {
        stop_on_ctrl_c(control, consequence);
    }
}

/// Starts the live dashboard when `--dashboard` was given, its stop button wired to
/// `control` as Ctrl-C is. An address that cannot be listened on is bad input.
pub fn start_dashboard(
    common: &CommonArgs,
    command: &'static str,
    plan: &Plan,
    control: &Control,
) -> Result<Option<Dashboard>, DashboardError> {
    common
        .dashboard
        .map(|addr| {
            let token = common.dashboard_token.clone();
            Dashboard::start_with(addr, token, command, plan, control)
        })
        .transpose()
}

/// Sets up the OTLP push when `--otlp` was given. A receiver that cannot be set up
/// (its CA file unreadable...) is bad input; one that cannot be reached is only a
/// warning, when a push fails.
pub fn start_otlp(
    common: &CommonArgs,
    command: &'static str,
    plan: &Plan,
) -> Result<Option<Otlp>, OtlpError> {
    common
        .otlp
        .as_deref()
        .map(|endpoint| Otlp::start(endpoint, command, plan))
        .transpose()
}

/// Pushes the OTLP totals one last time (when `--otlp` was given), warning when
/// pushes failed.
pub fn finish_otlp(otlp: Option<Otlp>) {
    if let Some(warning) = otlp.and_then(Otlp::finish) {
        eprintln!("warning: {warning}");
    }
}

/// What the user calls a record of `kind` in messages: a run or a search.
fn noun(kind: RunKind) -> &'static str {
    match kind {
        RunKind::Run => "run",
        RunKind::Find => "search",
    }
}

/// Opens the run store at `path`. A store that cannot be opened or written is bad
/// input, found before any load is sent: a run the user cannot keep is not worth
/// sending, and `--store` (or `HEADROOM_STORE`) says where to keep it instead.
pub fn open_store(path: &Path) -> Result<Store, CommandError> {
    Store::open(path).map_err(CommandError::StoreUnusable)
}

/// Records the start of a `kind` run of `plan` (from the `scenario` file, if any) in
/// `store`, with status `running`, with the labels and note of `common`. A record that cannot be started costs a warning.
pub fn begin_record<'s>(
    store: &'s Store,
    kind: RunKind,
    scenario: Option<&Path>,
    plan: &Plan,
    common: &CommonArgs,
) -> Option<RunWriter<'s>> {
    let meta = RunMeta {
        note: common.note.clone(),
        secret_headers: plan.journey.secrets.headers.clone(),
        ..RunMeta::of_this_process(kind, scenario, &plan.name, &common.labels)
    };
    store
        .begin_run(&meta)
        .map_err(|e| eprintln!("warning: {e}; this {} will not be kept", noun(kind)))
        .ok()
}

pub use crate::report::json::write_json;

/// Writes `value` to `out` when `--out` was given; an error names the file.
pub fn write_out(out: Option<&Path>, value: &impl Serialize) -> Result<(), CommandError> {
    let Some(path) = out else {
        return Ok(());
    };
    write_json(path, value).map_err(|source| CommandError::Write {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_leaves_no_partial_file_and_keeps_the_old_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        write_json(&path, &serde_json::json!({"a": 1})).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\n  \"a\": 1\n}\n"
        );
        // A directory where the file should go: the rename fails after the write.
        let blocked = dir.path().join("d.json");
        std::fs::create_dir(&blocked).unwrap();
        std::fs::write(blocked.join("x"), "keep").unwrap();
        assert!(write_json(&blocked, &serde_json::json!([1, 2])).is_err());
        assert!(!dir.path().join("d.json.partial").exists());
        assert!(blocked.join("x").exists());
        // A directory that does not exist: nothing is created.
        let missing = dir.path().join("no/such/s.json");
        assert!(write_out(Some(&missing), &1).is_err());
        assert!(!dir.path().join("no").exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }
}

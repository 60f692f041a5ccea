//! From YAML text (or from flags alone) to a [`Plan`]: parse, then check and compile
//! each section in turn, stopping at the first error.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_saphyr::Spanned;

use super::errors::{ScenarioError, Source};
use super::format::ScenarioFile;
use super::requests::{self, Context};
use super::rules::{check_names, threshold, weight};
use super::target::parse_target;
use super::values::duration;
use super::{flows, load_model, Overrides};
use headroom_plan::{ClientPlan, Expect, Hooks, Item, Plan, RequestTemplate, Target, WaitUntil};
use headroom_template::{Escape, Template};

/// Request timeout when neither file nor flag sets one.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest scenario file read, bytes. Real ones are a few KiB.
pub(crate) const MAX_FILE_BYTES: u64 = 4 << 20;

/// What the YAML parser may build from one file, alias expansions included. A file is
/// small, but aliases (`*a`) replay what an anchor (`&a`) holds, so a few hundred bytes
/// can describe billions of nodes (an "alias bomb"); these budgets stop such a file
/// with an error after a few MiB of work. Each is far above what a scenario needs.
fn budget() -> Option<serde_saphyr::Budget> {
    serde_saphyr::budget! {
        max_events: 200_000,
        max_nodes: 100_000,
        max_depth: 48,
        max_documents: 1,
        max_total_scalar_bytes: 8 << 20,
        max_aliases: 10_000,
        max_anchors: 10_000,
        max_recorded_anchor_events: 100_000,
        max_recorded_anchor_bytes: 8 << 20,
        max_merge_keys: 1_000,
    }
}

/// Parses the YAML text of `file`.
pub(crate) fn parse<'a>(
    file: &'a str,
    text: &str,
) -> Result<(Spanned<ScenarioFile>, Source<'a>), ScenarioError> {
    let mut failed_at = None;
    let mut options = serde_saphyr::options! {
        with_snippet: false,
        budget: budget(),
    };
    options.alias_limits.max_total_replayed_events = 100_000;
    options.alias_limits.max_replay_stack_depth = 32;
    let parsed = serde_saphyr::with_deserializer_from_str_with_options(text, options, |de| {
        serde_path_to_error::deserialize(de).map_err(|e| {
            failed_at = Some(e.path().clone());
            e.into_inner()
        })
    });
    let empty = Source {
        file,
        root: serde_saphyr::Location::UNKNOWN,
    };
    match parsed {
        Ok(doc) => {
            let doc: Spanned<ScenarioFile> = doc;
            let root = doc.referenced;
            Ok((doc, Source { file, root }))
        }
        Err(e) => Err(empty.yaml(&e, failed_at.as_ref())),
    }
}

/// Compiles a scenario file's text for a run; `file` names it in errors.
pub(crate) fn from_text(
    file: &str,
    text: &str,
    overrides: &Overrides,
) -> Result<Plan, ScenarioError> {
    from_text_for(file, text, overrides, false)
}

/// [`from_text`], for a search when `search` (which varies one workload's load).
pub(crate) fn from_text_for(
    file: &str,
    text: &str,
    overrides: &Overrides,
    search: bool,
) -> Result<Plan, ScenarioError> {
    let (doc, src) = parse(file, text)?;
    let doc = &doc.value;
    if !overrides.request.is_empty() {
        return Err(ScenarioError::command_line(
            "-X/--method, -H/--header, --body, --json and --body-file shape the request of \
             quick mode (--url without a scenario file); a scenario's requests say \
             `method`, `headers`, `body` and `json` themselves",
        ));
    }

    let (target, _) = match (&overrides.url, &doc.target) {
        (Some(url), _) => {
            parse_target(url).map_err(|e| ScenarioError::command_line(format!("--url: {e}")))?
        }
        (None, Some(t)) => parse_target(&t.value).map_err(|e| src.of(t, "target", e))?,
        (None, None) => {
            return Err(src.at(
                src.root,
                "target",
                "missing: expected a base URL such as http://127.0.0.1:8080 (or pass --url)",
            ))
        }
    };
    let defaults = doc.defaults.as_ref();
    let file_timeout = defaults
        .and_then(|d| d.timeout.as_ref())
        .map(|t| duration(src, t, "defaults.timeout"))
        .transpose()?;
    let timeout = overrides
        .timeout
        .or(file_timeout)
        .unwrap_or(DEFAULT_TIMEOUT);

    let mut headers = Vec::new();
    if let Some(d) = defaults {
        for (name, value) in &d.headers {
            let path = format!("defaults.headers.{name}");
            headers.push((
                name.clone(),
                requests::header(src, name, value, &path, None)?,
            ));
        }
    }
    let mut cx = Context {
        src,
        headers,
        names: Vec::new(),
        sink: doc.sink.is_some(),
        streams: Vec::new(),
        proto_paths: &overrides.proto_paths,
        checks: Vec::new(),
        groups: Vec::new(),
        user_vars: Vec::new(),
        captured: Vec::new(),
    };

    let (data, data_vars) = super::data::build(src, &doc.data)?;
    cx.user_vars = data_vars.concat();
    let (setup, setup_captures) = super::data::once_steps(&mut cx, &doc.setup, "setup")?;
    cx.user_vars
        .extend(setup_captures.iter().map(|c| format!("setup.{c}")));
    let (teardown, _) = super::data::once_steps(&mut cx, &doc.teardown, "teardown")?;
    let journey = headroom_plan::journey::JourneyPlan {
        data,
        data_vars,
        setup,
        teardown,
        setup_captures,
        ..Default::default()
    };

    let mut items = Vec::new();
    let mut weights = Vec::new();
    let workloads = match doc.workloads.is_empty() {
        true => None,
        false => Some(super::workloads::compile(&mut cx, doc, overrides, search)?),
    };
    if let Some(w) = &workloads {
        (items, weights) = (w.items.clone(), w.weights.clone());
    }
    for (i, spec) in doc.requests.iter().enumerate() {
        let path = format!("requests[{i}]");
        weights.push(weight(src, spec.value.weight.as_ref(), &path)?);
        let request = requests::compile(&mut cx, spec, &path, None, None)?;
        items.push(Item::Request(Arc::new(request)));
    }
    for (i, spec) in doc.flows.iter().enumerate() {
        let path = format!("flows[{i}]");
        weights.push(weight(src, spec.value.weight.as_ref(), &path)?);
        items.push(Item::Flow(Arc::new(flows::compile(&mut cx, spec, &path)?)));
    }
    if items.is_empty() {
        return Err(src.at(
            src.root,
            "requests",
            "expected at least one entry in `requests` or `flows`",
        ));
    }
    let secrets = super::secrets::build(src, doc.secrets.as_ref(), &cx.user_vars, &cx.captured)?;
    let names = cx.names;
    let streams = cx.streams;
    let (checks, groups) = (cx.checks, cx.groups);

    let mut thresholds = Vec::new();
    for (i, node) in doc.thresholds.iter().enumerate() {
        let path = format!("thresholds[{i}]");
        thresholds
            .push(threshold(&node.value, &names, &streams).map_err(|e| src.of(node, &path, e))?);
    }
    for expr in &overrides.thresholds {
        thresholds.push(
            threshold(expr, &names, &streams)
                .map_err(|e| ScenarioError::command_line(format!("--threshold {expr:?}: {e}")))?,
        );
    }

    check_names(&thresholds, &checks).map_err(|e| src.at(src.root, "thresholds", e))?;

    let mut watches = Vec::new();
    for (i, node) in doc.watch.iter().enumerate() {
        headroom_watch::Spec::parse(&node.value)
            .map_err(|e| src.of(node, &format!("watch[{i}]"), e))?;
        watches.push(node.value.clone());
    }

    let sink = match &doc.sink {
        Some(node) => Some(super::sink::build(src, node)?),
        None => None,
    };
    let (load, pool, client_load) = match &workloads {
        Some(w) => (w.load.clone(), w.pool, w.client_load.clone()),
        None => {
            let (load, pool) = load_model::build(Some(src), doc.load.as_ref(), overrides)?;
            (load.clone(), pool, load)
        }
    };
    let client = super::client::build(
        Some((src, doc.client.as_ref(), doc.defaults.as_ref())),
        overrides,
        &target,
        &client_load,
        pool,
    )?;
    let name = doc.name.clone().unwrap_or_else(|| {
        Path::new(file)
            .file_stem()
            .map_or_else(|| "scenario".into(), |s| s.to_string_lossy().into_owned())
    });
    let plan = Plan {
        name,
        items,
        weights,
        names,
        load,
        timeout,
        thresholds,
        threads: threads(overrides, &client)?,
        watches,
        hooks: hooks(src, doc.hooks.as_ref())?,
        warmup: Duration::ZERO,
        client,
        target,
        sink,
        streams,
        cluster: super::cluster::build(src, doc.cluster.as_ref())?,
        checks,
        groups,
        workloads: workloads.map(|w| w.workloads).unwrap_or_default(),
        journey: headroom_plan::journey::JourneyPlan { secrets, ..journey },
    };
    super::data::check_unique(src, &doc.data, &plan)?;
    Ok(plan)
}

/// Builds the one-request plan of a run with no scenario file: GET of `--url`, or
/// what quick mode's request flags ([`super::QuickRequest`]) make of it.
pub(crate) fn quick(overrides: &Overrides) -> Result<Plan, ScenarioError> {
    let url = overrides
        .url
        .as_deref()
        .ok_or_else(|| ScenarioError::command_line("give a scenario file or --url"))?;
    let (target, path_and_query) =
        parse_target(url).map_err(|e| ScenarioError::command_line(format!("--url: {e}")))?;
    let target = Target {
        base_path: String::new(),
        ..target
    };
    let path = Template::compile(&path_and_query, Escape::None)
        .map_err(|e| ScenarioError::command_line(format!("--url: {e}")))?;
    let parts = overrides
        .request
        .build()
        .map_err(|e| ScenarioError::command_line(e.to_string()))?;
    let name = format!(
        "{} {}",
        parts.method,
        path_and_query.split('?').next().unwrap_or("/")
    );
    let names = vec![name];
    let request = RequestTemplate {
        name_id: 0,
        method: parts.method,
        path,
        headers: parts.headers,
        body: parts.body,
        multipart: None,
        expect: Expect::default(),
        checks: Vec::new(),
        redirects: None,
        timeout: None,
        correlate: None,
    };
    let mut thresholds = Vec::new();
    for expr in &overrides.thresholds {
        thresholds.push(
            threshold(expr, &names, &[])
                .map_err(|e| ScenarioError::command_line(format!("--threshold {expr:?}: {e}")))?,
        );
    }
    let (load, pool) = load_model::build(None, None, overrides)?;
    let client = super::client::build(None, overrides, &target, &load, pool)?;
    Ok(Plan {
        streams: Vec::new(),
        name: "quick".into(),
        items: vec![Item::Request(Arc::new(request))],
        weights: vec![1],
        names,
        load,
        timeout: overrides.timeout.unwrap_or(DEFAULT_TIMEOUT),
        thresholds,
        threads: threads(overrides, &client)?,
        watches: Vec::new(),
        hooks: Hooks::default(),
        warmup: Duration::ZERO,
        client,
        target,
        sink: None,
        cluster: Default::default(),
        checks: Vec::new(),
        groups: Vec::new(),
        journey: Default::default(),
        workloads: Vec::new(),
    })
}

/// Engine threads: `--threads`, else one per core; never more than a capped shared
/// pool has connections, so `shared: 1` means one connection for the whole run (each
/// thread keeps its own pool).
fn threads(overrides: &Overrides, client: &ClientPlan) -> Result<usize, ScenarioError> {
    let threads = match overrides.threads {
        Some(0) => {
            return Err(ScenarioError::command_line(
                "--threads: expected a positive integer, found 0",
            ))
        }
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    Ok(match client.connection {
        headroom_client::ConnectionModel::Shared(Some(pool)) => threads.min(pool),
        _ => threads,
    })
}

/// Checks the `hooks` section: commands must not be blank; durations default to a 60 s
/// timeout (per command and for `wait_until`) and a 1 s polling interval.
fn hooks(src: Source<'_>, spec: Option<&super::format::HooksSpec>) -> Result<Hooks, ScenarioError> {
    let Some(spec) = spec else {
        return Ok(Hooks::default());
    };
    let command = |node: &Spanned<String>, path: String| {
        if node.value.trim().is_empty() {
            Err(src.of(
                node,
                &path,
                "expected a shell command, found an empty string",
            ))
        } else {
            Ok(node.value.clone())
        }
    };
    let commands = |list: &[Spanned<String>], key: &str| -> Result<Vec<String>, ScenarioError> {
        let each = list.iter().enumerate();
        each.map(|(i, n)| command(n, format!("hooks.{key}[{i}]")))
            .collect()
    };
    let optional = |node: Option<&super::format::Node>, path: &str, default: Duration| {
        node.map_or(Ok(default), |n| duration(src, n, path))
    };
    let wait_until = match &spec.wait_until {
        None => None,
        Some(w) => Some(WaitUntil {
            command: command(&w.command, "hooks.wait_until.command".into())?,
            timeout: optional(
                w.timeout.as_ref(),
                "hooks.wait_until.timeout",
                Hooks::DEFAULT_TIMEOUT,
            )?,
            interval: optional(
                w.interval.as_ref(),
                "hooks.wait_until.interval",
                Duration::from_secs(1),
            )?,
        }),
    };
    Ok(Hooks {
        before_step: commands(&spec.before_step, "before_step")?,
        after_step: commands(&spec.after_step, "after_step")?,
        wait_until,
        timeout: optional(
            spec.timeout.as_ref(),
            "hooks.timeout",
            Hooks::DEFAULT_TIMEOUT,
        )?,
    })
}

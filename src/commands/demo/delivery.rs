//! The demo's delivery phase: after the ceiling search, 2 s of tasks posted at
//! [`RATE`]/s to the same target's scheduler, each due [`DELAY_MS`] later and delivered
//! to a sink answering after 100 ms (seed 003's receiver), then the delivery table.
//! About 3 s in all: the load, the last task's delay, and the sink's quiet `settle`.

use std::path::Path;
use std::sync::Arc;

use crate::commands::delivery;
use crate::engine::{self, Control, Live};
use crate::metrics::summary::Summary;
use crate::scenario::{self, Overrides};

use super::DemoError;

/// Tasks posted per second.
pub const RATE: u32 = 50;
/// Each task's `deliver_in_ms`: what the delivery latency should read, plus the
/// scheduler's and the sink's own small costs.
pub const DELAY_MS: u64 = 500;
/// The scenario the phase runs, written under `--out-dir` so it can be run again.
pub const SCENARIO_FILE: &str = ".headroom/demo-delivery.yaml";

/// The delivery scenario against `target_url`.
pub fn scenario(target_url: &str) -> String {
    format!(
        r#"# headroom demo's delivery phase: run it again with
#   headroom target --listen 127.0.0.1:8080 &   headroom run THIS_FILE --url http://127.0.0.1:8080
name: demo-delivery
target: {target_url}
load: {{model: arrival-rate, rate: {RATE}, duration: 2s}}
sink:
  latency: 100ms
  id: {{json_path: "$.event_id"}}
  grace: 5s
  settle: 300ms
requests:
  - name: schedule_task
    method: POST
    path: /tasks
    correlate: "{{{{ uuid() }}}}"
    json: {{event_id: "{{{{ correlation_id }}}}", url: "{{{{ sink_url }}}}/hook", deliver_in_ms: {DELAY_MS}}}
    expect: {{status: 201}}
thresholds:
  - "delivery.p95 < 2s"
  - "delivery.lost < 0.1%"
"#
    )
}

/// Runs the phase against `target_url`, prints the delivery table and returns the
/// Markdown section for the report.
pub(super) fn phase(
    out_dir: &Path,
    target_url: &str,
    control: &Control,
) -> Result<String, DemoError> {
    let file = out_dir.join(SCENARIO_FILE);
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&file, scenario(target_url))?;
    let mut plan = scenario::load(Some(&file), &Overrides::default())?;
    let sink = delivery::start(&mut plan)
        .map_err(DemoError::Sink)?
        .ok_or(DemoError::NoSink)?;
    println!(
        "\nDelivery: {RATE} tasks/s for 2 s through the target's scheduler (due in {DELAY_MS} ms) to a sink at {} answering after 100 ms",
        sink.url()
    );
    let plan = Arc::new(plan);
    let mut quiet = |_: &Live| {};
    let mut outcome = engine::run(plan.clone(), control, &mut quiet)?;
    delivery::finish(sink, &plan, &mut outcome.summary, true);
    let summary: &Summary = &outcome.summary;
    let d = summary
        .delivery
        .as_ref()
        .ok_or(DemoError::NoDeliverySummary)?;
    println!("{}", d.table());
    let verdict: Vec<String> = summary
        .thresholds
        .iter()
        .map(|t| format!("{} {}", t.expr, if t.ok { "PASS" } else { "FAIL" }))
        .collect();
    println!("Delivery thresholds: {}", verdict.join(", "));
    Ok(format!(
        "\n## Delivery\n\n{RATE} tasks/s for 2 s posted to the target's scheduler, each due in {DELAY_MS} ms, delivered to a sink answering after 100 ms; latency is request sent → delivery received (scenario: `{SCENARIO_FILE}`).\n\n{}\nThresholds: {}\n",
        d.table(),
        verdict.join(", ")
    ))
}

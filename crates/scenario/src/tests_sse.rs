//! `sse:` flow steps: what they compile to, and their errors with `file:line:column`.

use super::compile::from_text;
use super::tests_errors::{assert_error, HEAD};
use super::*;
use headroom_plan::{Item, Protocol, Step};

fn flows(steps: &str) -> String {
    format!("{HEAD}flows:\n  - name: f\n    steps:\n{steps}")
}

#[test]
fn sse_steps_compile_to_stream_steps() {
    let yaml = flows(concat!(
        "      - sse: {name: ticks, url: \"/sse/ticker?every_ms=50\", headers: {authorization: \"Bearer {{ uuid() }}\"}, expect: {event: tick, timeout: 2s}}\n",
        "      - sse: {name: ticks, expect: {event: tick, json: {\"$.n\": 3}, count: 2}, capture: {n: \"$.n\"}, timeout: 1s}\n",
        "      - sse: {name: ticks, close: true}\n",
    ));
    let plan = from_text("scenario.yaml", &yaml, &Overrides::default()).unwrap();
    assert_eq!(plan.streams.len(), 1);
    assert_eq!(plan.streams[0].name, "ticks");
    assert_eq!(plan.streams[0].protocol, Protocol::Sse);
    let Item::Flow(flow) = &plan.items[0] else {
        panic!("a flow")
    };
    let steps: Vec<_> = flow
        .steps
        .iter()
        .map(|s| match s {
            Step::Stream(s) => s.clone(),
            _ => panic!("stream steps only"),
        })
        .collect();
    assert!(steps[0].url.is_some());
    assert_eq!(steps[0].headers.len(), 1);
    let expect = steps[1].expect.as_ref().unwrap();
    assert_eq!(expect.event.as_deref(), Some("tick"));
    assert_eq!((expect.count, expect.json.len()), (2, 1));
    assert_eq!(steps[1].captures.len(), 1);
    assert_eq!(steps[1].timeout, Some(std::time::Duration::from_secs(1)));
    assert!(steps[2].close.is_some());
    let names: Vec<&str> = steps
        .iter()
        .map(|s| plan.names[s.name_id].as_str())
        .collect();
    assert_eq!(names, ["ticks.open", "ticks.expect", "ticks.close"]);
}

#[test]
fn sse_step_errors_name_line_and_column() {
    assert_error(
        &flows("      - sse: {name: t, url: /sse/ticker, send: hello}\n"),
        "6:48",
        &["flows[0].steps[0].sse.send", "an SSE stream only receives"],
    );
    assert_error(
        &flows("      - sse: {name: t, expect: {event: tick}}\n"),
        "6:21",
        &[
            "flows[0].steps[0].sse.name",
            "no earlier step of this flow opens stream \"t\"",
        ],
    );
    assert_error(
        &flows("      - ws: {name: t, url: /ws, expect: {event: tick}}\n"),
        "6:49",
        &["event", "only SSE messages have an event type"],
    );
    assert_error(
        &flows("      - sse: {name: t, url: /sse/ticker, retry: 5}\n"),
        "6:42",
        &["sse.retry", "unknown field `retry`"],
    );
}

//! Stream steps (`ws:`, `sse:`, `grpc:`): what compiles, and errors with the file, line,
//! column and field for bad keys, unknown or closed streams, and bad values.

use super::tests::plan;
use super::tests_errors::{assert_error, HEAD};
use headroom_plan::{Item, Protocol, Step};

fn flow(steps: &str) -> String {
    format!("{HEAD}flows:\n  - name: f\n    steps:\n{steps}")
}

#[test]
fn a_ws_flow_compiles_to_stream_steps_with_names_and_captures() {
    let p = plan(&flow(concat!(
        "      - ws: {name: game, url: \"/ws/room/{{ rand_int(1, 3) }}\", expect: {json: {\"$.type\": joined}, timeout: 2s}}\n",
        "      - request: {path: /tasks}\n",
        "      - ws: {name: game, send: {json: {move: \"{{ rand_int(0, 8) }}\"}}, expect: {jsonpath: \"$.move\", regex: \"[0-8]\"}, capture: {m: \"$.move\"}}\n",
        "      - name: bye\n        ws: {name: game, send: \"last {{ m }}\", close: 4000}\n",
    )));
    assert_eq!(p.streams.len(), 1);
    assert_eq!(
        (p.streams[0].name.as_str(), p.streams[0].protocol),
        ("game", Protocol::Ws)
    );
    let Item::Flow(f) = &p.items[0] else { panic!() };
    let [Step::Stream(open), Step::Request { .. }, Step::Stream(send), Step::Stream(close)] =
        f.steps.as_slice()
    else {
        panic!("{:?}", f.steps)
    };
    assert_eq!(p.names[open.name_id], "game.open");
    assert_eq!(open.timeout, Some(std::time::Duration::from_secs(2)));
    assert_eq!(open.expect.as_ref().unwrap().json.len(), 1);
    assert_eq!(p.names[send.name_id], "game.send");
    assert_eq!(send.captures[0].var, "m");
    assert!(send.expect.as_ref().unwrap().regex.is_some());
    assert_eq!(p.names[close.name_id], "bye");
    assert_eq!(close.close, Some(4000));
    assert!(open.url.is_some() && send.url.is_none());
}

#[test]
fn later_steps_must_name_a_stream_opened_earlier_in_the_flow() {
    assert_error(
        &flow("      - ws: {name: game, send: hi}\n"),
        "6:20",
        &["flows[0].steps[0].ws.name: no earlier step of this flow opens stream \"game\""],
    );
    assert_error(
        &flow("      - ws: {name: a, url: /ws/echo}\n      - ws: {name: b, send: hi}\n"),
        "7:20",
        &["flows[0].steps[1].ws.name: no earlier step of this flow opens stream \"b\""],
    );
    assert_error(
        &flow(
            "      - ws: {name: a, url: /ws/echo, close: 1000}\n      - ws: {name: a, send: hi}\n",
        ),
        "7:20",
        &["stream \"a\" was closed by flows[0].steps[0].ws; give `url` to open it again"],
    );
    assert_error(
        &flow("      - ws: {name: a, url: /x}\n      - sse: {name: a, expect: {event: tick}}\n"),
        "7:21",
        &["flows[0].steps[1].sse.name: stream \"a\" is a ws stream, not sse"],
    );
}

#[test]
fn bad_keys_and_values_point_at_their_line_and_column() {
    assert_error(
        &flow("      - ws: {name: a, ulr: /x}\n"),
        "6:23",
        &["ulr", "url"],
    );
    assert_error(
        &flow("      - ws: {name: a, url: /x, expect: {jsonpth: \"$.a\"}}\n"),
        "6:41",
        &["jsonpth"],
    );
    assert_error(
        &flow("      - ws: {name: a, url: /x, close: 999}\n"),
        "6:39",
        &["flows[0].steps[0].ws.close: expected 1000 or a code in 3000..=4999, found 999"],
    );
    assert_error(
        &flow("      - ws: {name: a, url: /x, expect: {regex: \"(\"}}\n"),
        "6:48",
        &["flows[0].steps[0].ws.expect.regex: expected a regular expression"],
    );
    assert_error(
        &flow("      - ws: {name: a, url: /x, send: {xml: a}}\n"),
        "6:38",
        &["flows[0].steps[0].ws.send: expected `text: STRING` or `json: VALUE`, found `xml`"],
    );
    assert_error(
        &flow("      - ws: {name: a, url: /x, send: \"{{ nope }}\"}\n"),
        "6:38",
        &["`{{ nope }}` uses the variable `nope`, which no earlier step captures"],
    );
    assert_error(
        &flow("      - ws: {name: a, url: /x, capture: {v: \"$.v\"}}\n"),
        "6:45",
        &["flows[0].steps[0].ws.capture.v: captures come from the message an `expect` matches"],
    );
    assert_error(
        &flow("      - ws: {name: a, url: /x, call: a.B/C}\n"),
        "6:38",
        &["flows[0].steps[0].ws.call: only `grpc:` steps take `call`"],
    );
    assert_error(
        &flow("      - sse: {name: a, url: /x, send: hi}\n"),
        "6:39",
        &["flows[0].steps[0].sse.send: an SSE stream only receives"],
    );
    assert_error(
        &flow("      - ws: {name: a, url: /x, expect: {event: tick}}\n"),
        "6:48",
        &["flows[0].steps[0].ws.expect.event: only SSE messages have an event type"],
    );
    assert_error(
        &flow("      - ws: {name: a}\n"),
        "6:20",
        &["no earlier step of this flow opens stream \"a\""],
    );
    assert_error(
        &flow("      - {ws: {name: a, url: /x}, think: 1s}\n"),
        "6:14",
        &["flows[0].steps[0].ws: a step is one of `request`, `think`, `ws`, `sse`, `grpc`, `group` or `parallel`; `think` and `ws` were both given"],
    );
}

#[test]
fn stream_thresholds_name_a_stream_or_a_protocol() {
    let steps = "      - ws: {name: game, url: /ws/echo}\n";
    let ok = format!("{HEAD}thresholds: [\"ws.message_p95 < 100ms\", \"game.message_p50 < 1s\", \"stream_errors < 0.1%\", \"game.first_message_p95 < 1s\"]\nflows:\n  - name: f\n    steps:\n{steps}");
    assert_eq!(plan(&ok).thresholds.len(), 4);
    let bad = format!(
        "{HEAD}thresholds: [\"gmae.message_p95 < 1s\"]\nflows:\n  - name: f\n    steps:\n{steps}"
    );
    assert_error(
        &bad,
        "3:14",
        &["`gmae` is not a stream name or a protocol with streams (streams: game)"],
    );
    let none = format!("{HEAD}thresholds: [\"stream_errors < 1%\"]\nrequests: [{{path: /}}]\n");
    assert_error(
        &none,
        "3:14",
        &["a stream rule needs a `ws:`, `sse:` or `grpc:` step"],
    );
}

#[test]
fn proto_as_a_map_takes_files_and_import_paths_only() {
    let step = |proto: &str| {
        flow(&format!(
            "      - grpc: {{name: g, call: a.B/C, proto: {proto}}}\n"
        ))
    };
    assert_error(
        &step("{files: a.proto, include: [x]}"),
        "6:45",
        &["flows[0].steps[0].grpc.proto: unknown key \"include\": `proto` as a map takes `files` and `import_paths`"],
    );
    assert_error(
        &step("{import_paths: [x]}"),
        "6:45",
        &["flows[0].steps[0].grpc.proto: `proto` as a map needs `files`"],
    );
    assert_error(
        &step("{files: [], import_paths: [x]}"),
        "6:45",
        &["flows[0].steps[0].grpc.proto: files: expected a .proto file or a list of 1 to 64"],
    );
    assert_error(
        &step("{files: a.proto, import_paths: x}"),
        "6:45",
        &["flows[0].steps[0].grpc.proto: import_paths: expected a list of up to 64 directories"],
    );
}

#[test]
fn every_goes_on_the_opening_step_and_deadline_only_on_a_grpc_call() {
    let p = plan(&flow(
        "      - sse: {name: t, url: /sse/ticker, every: 100ms}\n      - sse: {name: t, expect: {event: tick}}\n",
    ));
    let Item::Flow(f) = &p.items[0] else { panic!() };
    let [Step::Stream(open), Step::Stream(expect)] = f.steps.as_slice() else {
        panic!("{:?}", f.steps)
    };
    assert_eq!(open.every, Some(std::time::Duration::from_millis(100)));
    assert_eq!((expect.every, open.deadline), (None, None));
    assert_error(
        &flow("      - sse: {name: t, url: /x, deadline: 1s}\n"),
        "6:43",
        &["flows[0].steps[0].sse.deadline: only `grpc:` calls have a deadline"],
    );
    assert_error(
        &flow("      - sse: {name: t, url: /x}\n      - sse: {name: t, every: 1s, expect: {event: tick}}\n"),
        "7:31",
        &["flows[0].steps[1].sse.every: `every` states the cadence of the stream a step opens"],
    );
    assert_error(
        &flow("      - ws: {name: t, url: /x, every: 0ms}\n"),
        "6:39",
        &["flows[0].steps[0].ws.every"],
    );
}

//! Issue 12: `headroom convert har` on a HAR that Chromium itself recorded. The page
//! is opened on the built-in target and sends a GET with a query string, a POST with
//! a JSON body and a custom header and a PUT to `/echo` with a text body; the test
//! records them from the DevTools protocol's Network events (`requestWillBeSent`,
//! `responseReceived`, `loadingFinished`, their `*ExtraInfo` twins with the headers
//! on the wire, and `Network.getRequestPostData` for bodies) and writes HAR 1.2 from
//! them as DevTools' own exporter does (CDP has no HAR export).
//!
//! The recording assumes no order of events: each is merged into its request id's
//! exchange as it comes (an id that never had a `requestWillBeSent` is no request of
//! the page's), and the test waits, bounded, until each expected request was sent,
//! answered and finished. Events are read as CDP's JSON, including the ones
//! chromiumoxide's protocol types reject (Chromium 156's `requestWillBeSentExtraInfo`
//! carries a `localNetworkAccessRequestPolicy` that chromiumoxide 0.9 does not know).
//!
//! Chromium may also fetch `/favicon.ico` for the page (a 404 here): it stays in the
//! recording when it finished in time, as it would in a HAR saved from DevTools. The
//! converted scenario then runs against the same target, which must have received
//! those requests: counted by route and status on its `/metrics`, the posted tasks
//! stored with their fields, and `/echo` answering with the method, query, header and
//! body the browser sent.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use chromiumoxide::cdp::browser_protocol::network::{
    EventLoadingFailed, EventLoadingFinished, EventRequestWillBeSent,
    EventRequestWillBeSentExtraInfo, EventResponseReceived, EventResponseReceivedExtraInfo,
    GetRequestPostDataParams, RequestId,
};
use chromiumoxide::cdp::IntoEventKind;
use chromiumoxide::{MethodType, Page};
use futures_util::stream::{self, BoxStream};
use futures_util::StreamExt;
use headroom::plan::{Item, Step};
use headroom::target::{self, TargetOptions};
use serde::Serialize;
use serde_json::{json, Value};

use crate::support::{
    assert_exit, chromium_runtime, http_get, run_headroom, run_with_summary, Chromium,
};

const LIMIT: Duration = Duration::from_secs(60);
/// How long, once the page's requests finished, the recording still waits for the
/// `*ExtraInfo` events Chromium announced (`responseReceived.hasExtraInfo`).
const WIRE_GRACE: Duration = Duration::from_secs(2);

/// The page's requests after it loaded, sent one after another as an app would.
const SESSION: &str = r#"(async () => {
    const work = await fetch('/work?ms=1&src=chromium');
    const task = await fetch('/tasks', {method: 'POST',
        headers: {'Content-Type': 'application/json', 'X-Recorded-By': 'chromium'},
        body: JSON.stringify({name: 'recorded by chromium', n: 1})});
    const echo = await fetch('/echo?via=har', {method: 'PUT',
        headers: {'Content-Type': 'text/plain', 'X-Recorded-By': 'chromium'},
        body: 'echo from chromium'});
    await Promise.all([work.text(), task.text(), echo.text()]);
    return [work.status, task.status, echo.status];
})()"#;

/// What `requestWillBeSent` said of a request.
#[derive(Debug)]
struct Sent {
    wall_time: f64,
    sent_at: f64,
    method: String,
    url: String,
    /// The headers as Blink built them (no `Host`, `Connection`, `Content-Length`).
    headers: Value,
    has_body: bool,
}

/// What `responseReceived` said of its answer.
#[derive(Debug)]
struct Received {
    status: i64,
    status_text: String,
    protocol: String,
    headers: Value,
    mime_type: String,
    /// Whether Chromium sends (or sent) the two `*ExtraInfo` events for this request.
    has_extra_info: bool,
}

/// One request as the Network domain reported it, event by event: each part is
/// filled by its own event, whichever order they arrive in (Chromium sends the
/// `*ExtraInfo` events from the network service, before or after the others, and
/// chromiumoxide hands each event type over on its own channel).
#[derive(Default, Debug)]
struct Exchange {
    /// `requestWillBeSent`; never set for an id that only had other events.
    sent: Option<Sent>,
    /// `requestWillBeSentExtraInfo`: the headers on the wire, which DevTools'
    /// exporter prefers.
    wire_headers: Option<Value>,
    body: Option<String>,
    received: Option<Received>,
    /// `responseReceivedExtraInfo`: the response headers on the wire.
    wire_response_headers: Option<Value>,
    /// `loadingFinished`: when, and the bytes received.
    finished: Option<(f64, f64)>,
    /// `loadingFailed`: why.
    failed: Option<String>,
}

impl Exchange {
    /// Sent, answered and finished: what a HAR entry is made of.
    fn complete(&self) -> bool {
        self.sent.is_some() && self.received.is_some() && self.finished.is_some()
    }

    /// Whether the `*ExtraInfo` events Chromium announced have both arrived.
    fn wire_complete(&self) -> bool {
        let announced = self.received.as_ref().is_some_and(|r| r.has_extra_info);
        !announced || (self.wire_headers.is_some() && self.wire_response_headers.is_some())
    }
}

/// The Network events a recording reads.
const NETWORK_EVENTS: [&str; 6] = [
    "Network.requestWillBeSent",
    "Network.requestWillBeSentExtraInfo",
    "Network.responseReceived",
    "Network.responseReceivedExtraInfo",
    "Network.loadingFinished",
    "Network.loadingFailed",
];

/// The page's exchanges by request id, and how many of the messages chromiumoxide
/// could not read ([`Chromium::unread`]) were looked at.
#[derive(Default)]
struct Recording {
    exchanges: BTreeMap<String, Exchange>,
    unread_seen: usize,
}

type Recorder = Arc<Mutex<Recording>>;

impl Recording {
    /// Puts what the Network event `method` says into the exchange of its request
    /// id. Events are read as CDP's JSON, not as chromiumoxide's types, so that the
    /// ones whose types reject what a newer Chromium sends read the same.
    fn apply(&mut self, method: &str, params: &Value) {
        let Some(id) = params["requestId"].as_str() else {
            return;
        };
        if !NETWORK_EVENTS.contains(&method) {
            return;
        }
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let number = |v: &Value| v.as_f64().unwrap_or_default();
        let x = self.exchanges.entry(id.to_string()).or_default();
        match method {
            "Network.requestWillBeSent" => {
                let request = &params["request"];
                x.sent = Some(Sent {
                    wall_time: number(&params["wallTime"]),
                    sent_at: number(&params["timestamp"]),
                    method: text(&request["method"]),
                    url: text(&request["url"]),
                    headers: request["headers"].clone(),
                    has_body: request["hasPostData"] == json!(true),
                });
            }
            "Network.requestWillBeSentExtraInfo" => {
                x.wire_headers = Some(params["headers"].clone());
            }
            "Network.responseReceived" => {
                let response = &params["response"];
                x.received = Some(Received {
                    status: response["status"].as_i64().unwrap_or_default(),
                    status_text: text(&response["statusText"]),
                    protocol: text(&response["protocol"]),
                    headers: response["headers"].clone(),
                    mime_type: text(&response["mimeType"]),
                    has_extra_info: params["hasExtraInfo"] == json!(true),
                });
            }
            "Network.responseReceivedExtraInfo" => {
                x.wire_response_headers = Some(params["headers"].clone());
            }
            "Network.loadingFinished" => {
                x.finished = Some((
                    number(&params["timestamp"]),
                    number(&params["encodedDataLength"]),
                ));
            }
            "Network.loadingFailed" => x.failed = Some(text(&params["errorText"])),
            _ => {}
        }
    }

    /// Applies the Network events among the messages chromiumoxide could not read
    /// that were not looked at yet.
    fn absorb_unread(&mut self, chromium: &Chromium) {
        let unread = chromium.unread.lock().unwrap();
        for raw in &unread[self.unread_seen.min(unread.len())..] {
            let Some(message) = raw.message.as_deref() else {
                continue;
            };
            let Ok(message) = serde_json::from_str::<Value>(message) else {
                continue;
            };
            if let Some(method) = message["method"].as_str() {
                self.apply(method, &message["params"]);
            }
        }
        self.unread_seen = unread.len();
    }
}

/// The events of type `E`, each as its CDP method name and JSON params.
async fn listen<E>(page: &Page) -> BoxStream<'static, (String, Value)>
where
    E: IntoEventKind + MethodType + Serialize + Unpin + Send + Sync + 'static,
{
    let events = page.event_listener::<E>().await.unwrap();
    let method = E::method_id().into_owned();
    events
        .map(move |e| (method.clone(), serde_json::to_value(&*e).unwrap()))
        .boxed()
}

/// Starts recording the page's exchanges: every Network event, of any type and in
/// whatever order they come, merged by request id on one task.
async fn record(chromium: &Chromium) -> Recorder {
    let recorder: Recorder = Arc::default();
    let page = &chromium.page;
    let mut events = stream::select_all([
        listen::<EventRequestWillBeSent>(page).await,
        listen::<EventRequestWillBeSentExtraInfo>(page).await,
        listen::<EventResponseReceived>(page).await,
        listen::<EventResponseReceivedExtraInfo>(page).await,
        listen::<EventLoadingFinished>(page).await,
        listen::<EventLoadingFailed>(page).await,
    ]);
    let into = recorder.clone();
    tokio::spawn(async move {
        while let Some((method, params)) = events.next().await {
            into.lock().unwrap().apply(&method, &params);
        }
    });
    recorder
}

/// Waits, at most `limit`, until each of `want` (`(method, url)`) was sent, answered
/// and finished; then, at most [`WIRE_GRACE`] longer, for the `*ExtraInfo` events
/// Chromium announced for them (without them an entry keeps `requestWillBeSent`'s
/// headers). Fails at once when one of them failed to load, and at the limit with
/// everything recorded and every message chromiumoxide could not read.
async fn wait_for(
    chromium: &Chromium,
    recorder: &Recorder,
    want: &[(String, String)],
    limit: Duration,
) {
    let started = Instant::now();
    let mut complete_at: Option<Instant> = None;
    loop {
        let (complete, wire) = {
            let mut recording = recorder.lock().unwrap();
            recording.absorb_unread(chromium);
            let all = &recording.exchanges;
            let mut complete = true;
            let mut wire = true;
            for (method, url) in want {
                let found = all.values().find(|x| {
                    x.sent
                        .as_ref()
                        .is_some_and(|s| &s.method == method && &s.url == url)
                });
                let Some(x) = found else {
                    complete = false;
                    continue;
                };
                if let Some(why) = &x.failed {
                    panic!("{method} {url} failed to load: {why}\n{all:#?}");
                }
                complete &= x.complete();
                wire &= x.wire_complete();
            }
            (complete, wire)
        };
        if complete {
            let at = *complete_at.get_or_insert_with(Instant::now);
            if wire || at.elapsed() >= WIRE_GRACE {
                return;
            }
        }
        if started.elapsed() >= limit {
            let all = &recorder.lock().unwrap().exchanges;
            let unread = chromium.unread.lock().unwrap();
            panic!(
                "after {limit:?} not every one of {want:?} was sent, answered and finished:\n\
                 {all:#?}\nmessages chromiumoxide could not read: {unread:#?}"
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// HAR `[{name, value}]` from a CDP headers object (repeated headers joined by `\n`).
fn har_headers(headers: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for (name, value) in headers.as_object().into_iter().flatten() {
        for line in value.as_str().unwrap_or_default().split('\n') {
            out.push(json!({"name": name, "value": line}));
        }
    }
    out
}

/// HTTP/1.1 as HAR spells it, from CDP's `http/1.1`.
fn http_version(protocol: &str) -> String {
    protocol.to_ascii_uppercase()
}

/// The HAR 1.2 entry of one complete exchange ([`Exchange::complete`]), with the
/// headers on the wire where Chromium sent them, as DevTools' exporter writes it.
fn entry(x: &Exchange) -> Value {
    let (Some(sent), Some(received), Some((finished_at, size))) =
        (&x.sent, &x.received, x.finished)
    else {
        panic!("an entry of an incomplete exchange: {x:#?}")
    };
    let headers = x.wire_headers.as_ref().unwrap_or(&sent.headers);
    let response_headers = x
        .wire_response_headers
        .as_ref()
        .unwrap_or(&received.headers);
    let started = SystemTime::UNIX_EPOCH + Duration::from_secs_f64(sent.wall_time);
    let time_ms = (finished_at - sent.sent_at) * 1000.0;
    let query: Vec<Value> = url_query(&sent.url)
        .map(|(n, v)| json!({"name": n, "value": v}))
        .collect();
    let mut request = json!({
        "method": sent.method,
        "url": sent.url,
        "httpVersion": http_version(&received.protocol),
        "headers": har_headers(headers),
        "queryString": query,
        "cookies": [],
        "headersSize": -1,
        "bodySize": x.body.as_ref().map_or(0, String::len),
    });
    if let Some(text) = &x.body {
        let mime = headers
            .as_object()
            .into_iter()
            .flatten()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
            .and_then(|(_, v)| v.as_str())
            .unwrap_or_default();
        request["postData"] = json!({"mimeType": mime, "text": text});
    }
    json!({
        "startedDateTime": humantime::format_rfc3339_millis(started).to_string(),
        "time": time_ms,
        "request": request,
        "response": {
            "status": received.status, "statusText": received.status_text,
            "httpVersion": http_version(&received.protocol),
            "headers": har_headers(response_headers), "cookies": [],
            "content": {"size": size, "mimeType": received.mime_type},
            "redirectURL": "", "headersSize": -1, "bodySize": size,
        },
        "cache": {},
        "timings": {"send": 0, "wait": time_ms, "receive": 0},
    })
}

/// The `name=value` pairs of a URL's query.
fn url_query(url: &str) -> impl Iterator<Item = (&str, &str)> {
    let query = url.split_once('?').map_or("", |(_, q)| q);
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').unwrap_or((p, "")))
}

/// The count of `series` (`name{labels}`) in a Prometheus exposition, 0 when absent.
fn counter(exposition: &str, series: &str) -> u64 {
    exposition
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map_or(0, |v| v.trim().parse::<f64>().unwrap() as u64)
}

#[test]
fn a_har_recorded_by_chromium_converts_to_a_scenario_the_target_receives() {
    let target = target::spawn(TargetOptions::loopback()).unwrap();
    let origin = target.url();
    let dir = tempfile::tempdir().unwrap();
    let har = dir.path().join("chromium.har");

    chromium_runtime().block_on(async {
        let chromium = Chromium::launch().await;
        let recorder = record(&chromium).await;
        let page_url = format!("{origin}/health");
        chromium.page.goto(page_url.as_str()).await.unwrap();
        let statuses: Vec<i64> = chromium.eval(SESSION).await;
        assert_eq!(statuses, [200, 201, 200]);
        let want = [
            "GET /health",
            "GET /work?ms=1&src=chromium",
            "POST /tasks",
            "PUT /echo?via=har",
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|w| w.split_once(' ').unwrap())
            .map(|(m, p)| (m.to_string(), format!("{origin}{p}")))
            .collect();
        wait_for(&chromium, &recorder, &want, Duration::from_secs(20)).await;
        let ids: Vec<String> = recorder
            .lock()
            .unwrap()
            .exchanges
            .iter()
            .filter(|(_, x)| x.sent.as_ref().is_some_and(|s| s.has_body))
            .map(|(id, _)| id.clone())
            .collect();
        for id in ids {
            let body = chromium
                .page
                .execute(GetRequestPostDataParams::new(RequestId::new(id.clone())))
                .await
                .expect("Network.getRequestPostData")
                .result
                .post_data;
            let mut recording = recorder.lock().unwrap();
            recording.exchanges.get_mut(&id).unwrap().body = Some(body);
        }
        // Ids that only had other events (no `requestWillBeSent`) are no request of
        // the page's; a favicon still loading stays out, as does its 404.
        let mut recorded: Vec<Exchange> = std::mem::take(&mut recorder.lock().unwrap().exchanges)
            .into_values()
            .filter(|x| x.sent.is_some())
            .collect();
        recorded.sort_by(|a, b| {
            let at = |x: &Exchange| x.sent.as_ref().map_or(0.0, |s| s.sent_at);
            at(a).total_cmp(&at(b))
        });
        let favicon = format!("{origin}/favicon.ico");
        let is_favicon = |x: &Exchange| x.sent.as_ref().is_some_and(|s| s.url == favicon);
        let shown: Vec<(String, String)> = recorded
            .iter()
            .filter(|x| !is_favicon(x))
            .filter_map(|x| x.sent.as_ref())
            .map(|s| (s.method.clone(), s.url.clone()))
            .collect();
        assert_eq!(shown, want, "what Chromium sent besides a favicon");
        let favicon_status = recorded
            .iter()
            .filter(|x| is_favicon(x))
            .find_map(|x| x.received.as_ref().map(|r| r.status));
        assert!(
            matches!(favicon_status, None | Some(404)),
            "{favicon_status:?}"
        );
        recorded.retain(Exchange::complete);
        let entries: Vec<Value> = recorded.iter().map(entry).collect();
        let har_json = json!({"log": {
            "version": "1.2",
            "creator": {"name": "headroom tests (Chromium's Network events)", "version": "1"},
            "browser": {"name": "Chromium", "version": chromium.eval::<String>("navigator.userAgent").await},
            "pages": [],
            "entries": entries,
        }});
        std::fs::write(&har, serde_json::to_vec_pretty(&har_json).unwrap()).unwrap();
        // The session itself went without an error; a missing favicon is the target's.
        let problems = chromium.problems.lock().unwrap().clone();
        assert!(problems.iter().all(|p| p.contains(&favicon)), "{problems:#?}");
        chromium.close().await;
    });

    let scenario = dir.path().join("chromium.yaml");
    let out = run_headroom(
        [
            "convert",
            "har",
            har.to_str().unwrap(),
            "-o",
            scenario.to_str().unwrap(),
        ],
        LIMIT,
    );
    assert_exit(&out, 0);
    let yaml = std::fs::read_to_string(&scenario).unwrap();
    check_plan(&yaml);

    // The target tells what it received: /echo answers with the request it got, and
    // a check on that answer makes any difference an error of the run.
    let echo_line = "          name: \"PUT /echo\"\n";
    assert!(yaml.contains(echo_line), "{yaml}");
    let checked = yaml.replace(
        echo_line,
        &format!(
            "{echo_line}          expect: {{json: {{\"$.method\": PUT, \"$.query\": \"via=har\", \"$.headers['x-recorded-by']\": chromium, \"$.body\": \"echo from chromium\"}}}}\n"
        ),
    );
    std::fs::write(&scenario, &checked).unwrap();
    let before = http_get(target.addr(), "/metrics").1;
    let (out, summary) = run_with_summary(
        dir.path(),
        &[
            scenario.to_str().unwrap(),
            "--rate",
            "5",
            "--duration",
            "1s",
            "--threads",
            "1",
        ],
        LIMIT,
    );
    assert_exit(&out, 0);
    assert_eq!(summary.errors.count, 0, "{:?}\n{checked}", summary.errors);
    let after = http_get(target.addr(), "/metrics").1;
    let received = |endpoint: &str, status: u16| {
        let series = format!(
            "headroom_target_requests_total{{endpoint=\"{endpoint}\",status=\"{status}\"}}"
        );
        counter(&after, &series) - counter(&before, &series)
    };
    let by_name = |name: &str| summary.by_name.get(name).map_or(0, |n| n.requests);
    // The favicon Chromium asked for, when it did, is replayed and expected a 404.
    assert_eq!(received("not_found", 404), by_name("GET /favicon.ico"));
    for (name, endpoint, status) in [
        ("GET /health", "health", 200),
        ("GET /work", "work", 200),
        ("POST /tasks", "tasks", 201),
        ("PUT /echo", "echo", 200),
    ] {
        assert!(by_name(name) >= 3, "{name}: {:?}", summary.by_name);
        assert_eq!(
            received(endpoint, status),
            by_name(name),
            "{endpoint} {status}"
        );
    }
    let posted = by_name("POST /tasks");
    // Every posted task was stored with the fields the page posted.
    let (_, listed) = http_get(target.addr(), "/tasks?limit=1000");
    let listed: Value = serde_json::from_str(&listed).unwrap();
    let tasks = listed["data"].as_array().unwrap();
    assert_eq!(
        tasks.len() as u64,
        1 + posted,
        "the browser's task and the run's"
    );
    for task in tasks {
        assert_eq!(
            (&task["name"], &task["n"]),
            (&json!("recorded by chromium"), &json!(1))
        );
    }
    target.shutdown();
}

/// The converted scenario replays the recording: one flow, a request per exchange in
/// order, with the query, the custom header and the bodies the browser sent, and
/// without the headers a client writes itself.
fn check_plan(yaml: &str) {
    let plan = headroom::scenario::load_text("chromium.yaml", yaml, &Default::default())
        .unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    let [Item::Flow(flow)] = plan.items.as_slice() else {
        panic!("one flow: {yaml}")
    };
    let requests: Vec<_> = flow
        .steps
        .iter()
        .map(|s| match s {
            Step::Request { request, .. } => request.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    // Chromium's own favicon request, when it made one, expects the 404 it got.
    let requests: Vec<_> = requests
        .into_iter()
        .filter(|r| {
            let favicon = r.path.as_static() == Some("/favicon.ico");
            if favicon {
                assert_eq!(r.expect.status.len(), 1, "{yaml}");
                assert_eq!((r.expect.status[0].lo, r.expect.status[0].hi), (404, 404));
            }
            !favicon
        })
        .collect();
    let shown: Vec<String> = requests
        .iter()
        .map(|r| format!("{} {}", r.method, r.path.as_static().unwrap()))
        .collect();
    assert_eq!(
        shown,
        [
            "GET /health",
            "GET /work?ms=1&src=chromium",
            "POST /tasks",
            "PUT /echo?via=har"
        ]
    );
    for r in &requests {
        let names: Vec<String> = r
            .headers
            .iter()
            .map(|(n, _)| n.to_ascii_lowercase())
            .collect();
        assert!(names.iter().any(|n| n == "user-agent"), "{names:?}");
        assert!(
            r.expect.status.is_empty(),
            "a success expects no status: {yaml}"
        );
        for dropped in ["host", "connection", "content-length"] {
            assert!(
                !names.iter().any(|n| n == dropped),
                "{dropped} kept: {yaml}"
            );
        }
    }
    let header = |i: usize, name: &str| {
        requests[i]
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_static().unwrap().to_string())
    };
    assert_eq!(
        header(2, "x-recorded-by").as_deref(),
        Some("chromium"),
        "{yaml}"
    );
    assert_eq!(
        header(3, "x-recorded-by").as_deref(),
        Some("chromium"),
        "{yaml}"
    );
    let body = |i: usize| {
        requests[i]
            .body
            .as_ref()
            .map(|b| b.as_static().unwrap().to_string())
    };
    let posted: Value = serde_json::from_str(&body(2).unwrap()).unwrap();
    assert_eq!(posted, json!({"name": "recorded by chromium", "n": 1}));
    assert_eq!(body(3).as_deref(), Some("echo from chromium"));
    assert_eq!(body(0), None);
}

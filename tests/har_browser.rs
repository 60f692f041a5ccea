//! Issue 12: `headroom convert har` on a HAR that Chromium itself recorded. The page
//! is opened on the built-in target and sends a GET with a query string, a POST with
//! a JSON body and a custom header and a PUT to `/echo` with a text body; the test
//! records them from the DevTools protocol's Network events (`requestWillBeSent`,
//! `responseReceived`, `loadingFinished`, and `Network.getRequestPostData` for
//! bodies) and writes HAR 1.2 from them as DevTools' own exporter does (CDP has no HAR
//! export). Chromium may also fetch `/favicon.ico` for the page (a 404 here): it stays
//! in the recording, as it would in a HAR saved from DevTools. The converted scenario
//! then runs against the same target, which must have received those requests:
//! counted by route and status on its `/metrics`, the posted tasks stored with their
//! fields, and `/echo` answering with the method, query, header and body the browser
//! sent.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use chromiumoxide::cdp::browser_protocol::network::{
    EventLoadingFinished, EventRequestWillBeSent, EventResponseReceived, GetRequestPostDataParams,
    RequestId,
};
use futures_util::StreamExt;
use headroom::plan::{Item, Step};
use headroom::target::{self, TargetOptions};
use serde_json::{json, Value};

use crate::support::{
    assert_exit, chromium_runtime, http_get, run_headroom, run_with_summary, Chromium,
};

const LIMIT: Duration = Duration::from_secs(60);

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

/// One request as the Network domain reported it.
#[derive(Default, Debug)]
struct Exchange {
    wall_time: f64,
    sent_at: f64,
    method: String,
    url: String,
    /// `requestWillBeSent`'s headers. (DevTools prefers `requestWillBeSentExtraInfo`'s,
    /// the headers on the wire, but this Chromium does not send that event to
    /// chromiumoxide's page session.)
    headers: Value,
    has_body: bool,
    body: Option<String>,
    status: i64,
    status_text: String,
    protocol: String,
    response_headers: Value,
    mime_type: String,
    finished_at: Option<f64>,
    size: f64,
}

type Exchanges = Arc<Mutex<BTreeMap<String, Exchange>>>;

/// Applies every event of `events` to the exchange of its request id.
fn follow<E: Send + Sync + 'static>(
    mut events: impl futures_util::Stream<Item = Arc<E>> + Unpin + Send + 'static,
    into: Exchanges,
    id: fn(&E) -> &RequestId,
    apply: fn(&mut Exchange, &E),
) {
    tokio::spawn(async move {
        while let Some(event) = events.next().await {
            let mut all = into.lock().unwrap();
            apply(all.entry(id(&event).inner().clone()).or_default(), &event);
        }
    });
}

/// Starts recording the page's exchanges.
async fn record(chromium: &Chromium) -> Exchanges {
    let all: Exchanges = Arc::default();
    let page = &chromium.page;
    let sent = page
        .event_listener::<EventRequestWillBeSent>()
        .await
        .unwrap();
    follow(
        sent,
        all.clone(),
        |e| &e.request_id,
        |x, e| {
            x.wall_time = *e.wall_time.inner();
            x.sent_at = *e.timestamp.inner();
            x.method = e.request.method.clone();
            x.url = e.request.url.clone();
            x.headers = e.request.headers.inner().clone();
            x.has_body = e.request.has_post_data == Some(true);
        },
    );
    let received = page
        .event_listener::<EventResponseReceived>()
        .await
        .unwrap();
    follow(
        received,
        all.clone(),
        |e| &e.request_id,
        |x, e| {
            x.status = e.response.status;
            x.status_text = e.response.status_text.clone();
            x.protocol = e.response.protocol.clone().unwrap_or_default();
            x.response_headers = e.response.headers.inner().clone();
            x.mime_type = e.response.mime_type.clone();
        },
    );
    let finished = page.event_listener::<EventLoadingFinished>().await.unwrap();
    follow(
        finished,
        all.clone(),
        |e| &e.request_id,
        |x, e| {
            x.finished_at = Some(*e.timestamp.inner());
            x.size = e.encoded_data_length;
        },
    );
    all
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

/// The HAR 1.2 entry of one finished exchange.
fn entry(x: &Exchange) -> Value {
    let started = SystemTime::UNIX_EPOCH + Duration::from_secs_f64(x.wall_time);
    let time_ms = (x.finished_at.unwrap() - x.sent_at) * 1000.0;
    let query: Vec<Value> = url_query(&x.url)
        .map(|(n, v)| json!({"name": n, "value": v}))
        .collect();
    let mut request = json!({
        "method": x.method,
        "url": x.url,
        "httpVersion": http_version(&x.protocol),
        "headers": har_headers(&x.headers),
        "queryString": query,
        "cookies": [],
        "headersSize": -1,
        "bodySize": x.body.as_ref().map_or(0, String::len),
    });
    if let Some(text) = &x.body {
        let mime = x
            .headers
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
            "status": x.status, "statusText": x.status_text,
            "httpVersion": http_version(&x.protocol),
            "headers": har_headers(&x.response_headers), "cookies": [],
            "content": {"size": x.size, "mimeType": x.mime_type},
            "redirectURL": "", "headersSize": -1, "bodySize": x.size,
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
        let exchanges = record(&chromium).await;
        let page_url = format!("{origin}/health");
        chromium.page.goto(page_url.as_str()).await.unwrap();
        let statuses: Vec<i64> = chromium.eval(SESSION).await;
        assert_eq!(statuses, [200, 201, 200]);
        // Every exchange finished (its loadingFinished arrived), at most 10 s.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let done = {
                let all = exchanges.lock().unwrap();
                all.len() >= 4 && all.values().all(|x| x.finished_at.is_some())
            };
            if done {
                break;
            }
            assert!(Instant::now() < deadline, "{:#?}", exchanges.lock().unwrap());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let ids: Vec<String> = exchanges
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, x)| x.has_body)
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
            exchanges.lock().unwrap().get_mut(&id).unwrap().body = Some(body);
        }
        let mut recorded: Vec<Exchange> =
            std::mem::take(&mut *exchanges.lock().unwrap()).into_values().collect();
        recorded.sort_by(|a, b| a.sent_at.total_cmp(&b.sent_at));
        let favicon = format!("{origin}/favicon.ico");
        let shown: Vec<(String, String)> = recorded
            .iter()
            .filter(|x| x.url != favicon || x.status != 404)
            .map(|x| (x.method.clone(), x.url.clone()))
            .collect();
        let want = ["GET /health", "GET /work?ms=1&src=chromium", "POST /tasks", "PUT /echo?via=har"];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|w| w.split_once(' ').unwrap())
            .map(|(m, p)| (m.to_string(), format!("{origin}{p}")))
            .collect();
        assert_eq!(shown, want, "what Chromium sent besides a favicon");
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

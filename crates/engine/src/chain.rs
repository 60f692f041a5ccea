//! One request's exchange as a browser makes it: the user's cookies sent and stored,
//! and redirects followed (up to the request's `redirects:`, else the run's
//! `client.redirects`) until a final response, which alone is judged: `expect`,
//! captures and checks see it, not the hops before it.
//!
//! 301, 302 and 303 turn a request into a GET without a body (HEAD stays HEAD, and
//! 301/302 change only a POST, as browsers do); 307 and 308 keep the method and body.
//! A hop to the same origin goes through the user's own session; one to another
//! origin through a client of that origin kept by the thread, with the run's TLS
//! settings, on a connection of its own. One more redirect than allowed fails the
//! request with `redirect`; the caller times the whole chain from its scheduled start
//! and bounds it by one timeout.

use std::cell::Cell;
use std::rc::Rc;

use url::Url;

use crate::capture::Captured;
use crate::capture::Heads;
use crate::check;
use crate::cookies::Jar;
use crate::thread::{ThreadState, MEASURING};
use crate::work::Prepared;
use headroom_client::prepared::PreparedRequest;
use headroom_client::session::{Client, Failure, Payload, Reply, Scratch, Session, Trace};
use headroom_metrics::ErrorKind;
use headroom_plan::journey::{CheckRule, Multipart, Piece};
use headroom_plan::{ClientPlan, RequestTemplate, Target};
use headroom_template::{Escape, RenderContext, Template, Vars};

/// What a chain did besides its verdict, for the recorder.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    /// Redirect hops followed.
    pub(crate) redirects: u64,
    /// Cookies stored, sent and dropped.
    pub(crate) received: u64,
    pub(crate) sent: u64,
    pub(crate) dropped: u64,
    /// Checks judged on the final response: (check id, passed). Duration checks are
    /// judged by the caller, which knows the chain's latency.
    pub(crate) checks: Vec<(usize, bool)>,
}

/// The final verdict of a chain: captures to store, or the error it counts as; or
/// the client's failure to get a response at all.
pub(crate) type Verdict = Result<Result<Captured, ErrorKind>, Failure>;

/// What the judge of one hop decided.
enum Judged {
    /// Follow `location`, which answered `status`.
    Redirect(String, u16),
    /// The final response's verdict.
    Final(Result<Captured, ErrorKind>),
}

/// The user's part of a chain: its jar and variables.
pub(crate) struct User<'a> {
    /// The cookie jar (unused when `client.cookies` is off).
    pub(crate) jar: &'a mut Jar,
    /// The flow's variables (read by checks' templates).
    pub(crate) vars: &'a Vars,
    /// Reused rendering space for hops.
    pub(crate) scratch: &'a mut Scratch,
    /// The user's number and iteration (`user()`, `iteration()`).
    pub(crate) who: (u64, u64),
}

/// The URL of a request to the target with the rendered `path` (the target's base
/// path in front, as the client sends it).
pub(crate) fn target_url(target: &Target, path: &[u8]) -> Option<Url> {
    let path = std::str::from_utf8(path).ok()?;
    let slash = if path.starts_with('/') { "" } else { "/" };
    Url::parse(&format!(
        "{}://{}{}{slash}{path}",
        target.scheme, target.authority, target.base_path
    ))
    .ok()
}

/// The URL of a request to the target's origin with `path` as sent (base path included).
fn origin_url(target: &Target, path: &[u8]) -> Option<Url> {
    let path = std::str::from_utf8(path).ok()?;
    Url::parse(&format!("{}://{}{path}", target.scheme, target.authority)).ok()
}

/// Runs the exchange of `prepared`, whose first hop's `payload` was rendered for
/// `url`, through `session` until a final response.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run(
    state: &Rc<ThreadState>,
    prepared: &Prepared,
    payload: &Payload<'_>,
    url: Option<Url>,
    session: &mut Session,
    connecting: &Cell<bool>,
    trace: &mut Trace,
    user: User<'_>,
    tally: &mut Tally,
) -> Verdict {
    let plan = &state.plan;
    let template = prepared.template();
    let limit = template.redirects.unwrap_or(plan.client.redirects);
    let cookies = plan.client.cookies;
    let User {
        jar,
        vars,
        scratch,
        who,
    } = user;
    let mut url = url;
    // The hop being sent: `None` for the request itself.
    let mut hop: Option<(PreparedRequest, Option<Rc<Client>>)> = None;
    loop {
        let (request, client): (&PreparedRequest, &Client) = match &hop {
            None => (&prepared.request, &state.client),
            Some((r, Some(other))) => (r, other),
            Some((r, None)) => (r, &state.client),
        };
        // A hop was rendered whole when it was made (`hop_request`): its prebuilt
        // form, with its own target's authority and no base path.
        let rendered = hop
            .as_ref()
            .map(|_| state.render(vars, who, |ctx| client.payload(request, ctx, &[], scratch)));
        let redirects_left = tally.redirects < u64::from(limit);
        let heads = &prepared.heads;
        let judge = |reply: &Reply<'_>| -> Judged {
            if let (true, Some(i)) = (cookies, heads.set_cookie) {
                if reply.header(i).next().is_some() {
                    // The URL is made only now, from the request as sent, when the
                    // response sets a cookie: most responses set none.
                    if url.is_none() {
                        url = payload.path().and_then(|p| origin_url(&plan.target, p));
                    }
                    if let Some(at) = &url {
                        let stored = jar.store(reply.header(i), at);
                        tally.received += stored.received;
                        tally.dropped += stored.dropped;
                    }
                }
            }
            if limit > 0 && matches!(reply.status, 301 | 302 | 303 | 307 | 308) {
                let location = heads.location.and_then(|i| reply.header(i).next());
                if let Some(location) = location {
                    if !redirects_left {
                        return Judged::Final(Err(ErrorKind::Redirect));
                    }
                    return Judged::Redirect(
                        String::from_utf8_lossy(location).into_owned(),
                        reply.status,
                    );
                }
            }
            Judged::Final(final_verdict(
                state, prepared, reply, heads, vars, who, tally,
            ))
        };
        let sent = match (&hop, &rendered) {
            (Some((_, Some(_))), Some(p)) => {
                let mut own = Session::PerRequest;
                client
                    .send(&mut own, request, p, connecting, trace, judge)
                    .await
            }
            (_, Some(p)) => {
                client
                    .send(session, request, p, connecting, trace, judge)
                    .await
            }
            (_, None) => {
                client
                    .send(session, request, payload, connecting, trace, judge)
                    .await
            }
        };
        let (location, status) = match sent {
            Ok(Judged::Final(verdict)) => return Ok(verdict),
            Ok(Judged::Redirect(location, status)) => (location, status),
            Err(failure) => return Err(failure),
        };
        tally.redirects += 1;
        if url.is_none() {
            url = payload.path().and_then(|p| origin_url(&plan.target, p));
        }
        let Some(next) = url
            .as_ref()
            .and_then(|u| u.join(location.trim()).ok())
            .filter(|u| matches!(u.scheme(), "http" | "https"))
        else {
            // A `Location` that is not a URL: the chain cannot go on.
            return Ok(Err(ErrorKind::Redirect));
        };
        let current = match &hop {
            Some((r, _)) => r.template.clone(),
            None => prepared.request.template.clone(),
        };
        let to_get = status == 303 && current.method != "HEAD"
            || matches!(status, 301 | 302) && current.method == "POST";
        let same_origin = next.origin() == origin_of(&plan.target);
        let other = if same_origin {
            None
        } else {
            match origin_client(state, &next).await {
                Ok(c) => Some(c),
                Err(failure) => return Err(failure),
            }
        };
        let target = target_of(&next);
        let mut hop_template = state.render(vars, who, |ctx| {
            hop_request(
                &current,
                &next,
                to_get,
                same_origin,
                &plan.journey.secrets,
                ctx,
            )
        });
        if let Some(cookie) = cookie_header(cookies, jar, Some(&next), tally) {
            hop_template.headers.push((
                "cookie".into(),
                Template::literal(&cookie, headroom_template::Escape::None),
            ));
        }
        let mut hop_request = match PreparedRequest::new(
            &std::sync::Arc::new(hop_template),
            &target,
            other
                .as_ref()
                .map_or(plan.client.protocol, |c| c.protocol()),
            prepared.request.keep_body,
        ) {
            Ok(r) => r,
            Err(_) => return Ok(Err(ErrorKind::Redirect)),
        };
        hop_request.keep_headers = prepared.request.keep_headers.clone();
        hop = Some((hop_request, other));
        url = Some(next);
    }
}

/// The `Cookie` header for a request to `url`, counted as sent.
pub(crate) fn cookie_header(
    cookies: bool,
    jar: &Jar,
    url: Option<&Url>,
    tally: &mut Tally,
) -> Option<String> {
    if !cookies || jar.is_empty() {
        return None;
    }
    let (header, n) = jar.header(url?)?;
    tally.sent += n;
    Some(header)
}

/// The verdict on the final response: `expect` and captures (fatal), then the checks
/// (counted in `tally`, never fatal).
fn final_verdict(
    state: &Rc<ThreadState>,
    prepared: &Prepared,
    reply: &Reply<'_>,
    heads: &Heads,
    vars: &Vars,
    who: (u64, u64),
    tally: &mut Tally,
) -> Result<Captured, ErrorKind> {
    let template = prepared.template();
    let mut rng = state.rng.borrow_mut();
    let mut ctx = RenderContext {
        rng: &mut rng,
        vars,
        user: who.0,
        iteration: who.1,
    };
    let verdict = check::judge(&template.expect, &prepared.captures, reply, heads, &mut ctx);
    // Warm-up failures are discarded with the warm-up's record, their message too.
    if verdict.as_ref().err() == Some(&ErrorKind::Graphql) && state.phase.get() == MEASURING {
        // Only the first is kept: later failures lock an uncontended mutex, and
        // only the first one parses the body again for its message.
        let mut first = state
            .graphql_failure
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if first.is_none() {
            // A server may echo what it refused (`invalid token …`): the kept message
            // never holds a secret header's value or a secret variable's.
            let secrets = &state.plan.journey.secrets;
            *first = Some(check::graphql_message(reply.body, |message| {
                secrets.scrub(message, &template.headers, &mut ctx)
            }));
        }
    }
    if !template.checks.is_empty() {
        let json: Option<serde_json::Value> = template
            .checks
            .iter()
            .any(|c| matches!(c.rule, CheckRule::Json { .. }))
            .then(|| serde_json::from_slice(reply.body).ok())
            .flatten();
        for c in &template.checks {
            let passed = match &c.rule {
                CheckRule::Status(ranges) => ranges
                    .iter()
                    .any(|r| r.lo <= reply.status && reply.status <= r.hi),
                CheckRule::BodyContains(t) => {
                    let mut text = Vec::new();
                    t.render(&mut ctx, &mut text);
                    text.is_empty() || reply.body.windows(text.len()).any(|w| w == text)
                }
                CheckRule::Json { path, equals } => match &json {
                    Some(json) => match (path.query(json).first(), equals) {
                        (None, _) => false,
                        (Some(_), None) => true,
                        (Some(found), Some(want)) => check::expected_equal(found, want, &mut ctx),
                    },
                    None => false,
                },
                // Judged by the caller, against the whole chain's latency.
                CheckRule::Duration(_) => continue,
            };
            tally.checks.push((c.id, passed));
        }
    }
    verdict
}

/// The origin of the target, in the form `Url::origin` gives.
fn origin_of(target: &Target) -> url::Origin {
    Url::parse(&format!("{}://{}/", target.scheme, target.authority))
        .map(|u| u.origin())
        .unwrap_or_else(|_| url::Origin::new_opaque())
}

/// The target a hop to `url` is sent to (no base path: a `Location` is a full path).
fn target_of(url: &Url) -> Target {
    let host = url
        .host_str()
        .unwrap_or("")
        .trim_matches(['[', ']'])
        .to_string();
    let port = url.port_or_known_default().unwrap_or(80);
    let authority = match url.port() {
        Some(p) => format!("{}:{p}", url.host_str().unwrap_or("")),
        None => url.host_str().unwrap_or("").to_string(),
    };
    Target {
        scheme: url.scheme().to_string(),
        host,
        port,
        authority,
        base_path: String::new(),
    }
}

/// The request of a hop: `current` sent to `url`, as a GET without body when the
/// redirect says so; headers describing a body go with it, and credentials (the
/// secret headers, `Host`) do not cross to another origin, as curl does not send
/// them. Everything is rendered now, so the hop is sent as it is (its path is the
/// `Location`'s, never under the target's base path).
fn hop_request(
    current: &RequestTemplate,
    url: &Url,
    to_get: bool,
    same_origin: bool,
    secrets: &headroom_plan::Secrets,
    ctx: &mut RenderContext<'_>,
) -> RequestTemplate {
    let mut path = url.path().to_string();
    if let Some(q) = url.query() {
        path.push('?');
        path.push_str(q);
    }
    let mut next = current.clone();
    next.path = Template::literal(&path, Escape::None);
    next.headers.retain(|(name, _)| {
        let body_header = name.eq_ignore_ascii_case("content-type")
            || name.eq_ignore_ascii_case("content-length");
        let credential = secrets.is_header(name) || name.eq_ignore_ascii_case("host");
        !(to_get && body_header) && (same_origin || !credential)
    });
    for (_, value) in next.headers.iter_mut() {
        if value.as_static().is_none() {
            let mut out = Vec::new();
            value.render(ctx, &mut out);
            *value = Template::literal(&String::from_utf8_lossy(&out), Escape::None);
        }
    }
    if to_get {
        if next.method != "HEAD" {
            next.method = "GET".into();
        }
        next.body = None;
        next.multipart = None;
    } else {
        // 307 and 308 send the same body again: rendered once more, kept as bytes.
        let mut out = Vec::new();
        let varies = match (&next.body, &next.multipart) {
            (_, Some(m)) if m.as_static().is_none() => {
                m.render(ctx, &mut out);
                true
            }
            (Some(b), None) if b.as_static().is_none() => {
                b.render(ctx, &mut out);
                true
            }
            _ => false,
        };
        if varies {
            next.body = None;
            next.multipart = Some(std::sync::Arc::new(Multipart {
                boundary: String::new(),
                pieces: vec![Piece::Bytes(out.into())],
            }));
        }
    }
    next
}

/// The thread's client for another origin, made on first use: plain TCP or TLS with
/// the run's settings for other origins, a new connection per hop.
async fn origin_client(state: &Rc<ThreadState>, url: &Url) -> Result<Rc<Client>, Failure> {
    let key = url.origin().ascii_serialization();
    if let Some((_, c)) = state.origins.borrow().iter().find(|(k, _)| *k == key) {
        return Ok(c.clone());
    }
    let target = target_of(url);
    let endpoint = crate::stream::url::Endpoint {
        tls: target.scheme == "https",
        host: target.host.clone(),
        port: target.port,
        authority: target.authority.clone(),
        path: "/".into(),
        same_origin: false,
    };
    let connector = state
        .streams
        .http1(&state.plan, &endpoint)
        .await
        .map_err(|f| Failure {
            kind: f.kind,
            note: None,
        })?;
    let settings = ClientPlan {
        protocol: headroom_client::Protocol::Http1,
        connection: headroom_client::ConnectionModel::PerRequest,
        ..state.plan.client.clone()
    };
    let client = Rc::new(Client::new(connector, target, &settings, None));
    let mut origins = state.origins.borrow_mut();
    // A thread keeps a few origins; past that the oldest is let go.
    if origins.len() >= 16 {
        origins.remove(0);
    }
    origins.push((key, client.clone()));
    Ok(client)
}

//! Captures from a flow step's response: a JSONPath query on the JSON body, a header,
//! a cookie the response set, a regular expression or a CSS selector on the body, or
//! the status; the first match, a random one, or all of them; a `default` when
//! nothing matched (without one, no match fails the step with `check`).
//!
//! Bounded by what it reads: the body is the kept body (at most the client's kept-body
//! limit), the headers the kept head; an `all` capture holds at most [`MAX_MATCHES`]
//! values.

use rand::Rng;
use serde_json::Value;

use headroom_client::session::Reply;
use headroom_metrics::ErrorKind;
use headroom_plan::journey::{CaptureFrom, CapturePick, ResponseCapture};
use headroom_template::{RenderContext, Vars};

/// Most matches one capture collects (`pick: all`, `random`): a page of ten thousand
/// links is a list, not a value to carry from step to step.
pub(crate) const MAX_MATCHES: usize = 10_000;

/// Captured values to store: (variable, text, whether the text is JSON of a
/// non-string value).
pub(crate) type Captured = Vec<(String, String, bool)>;

/// Where the kept headers of a request's response are, by what reads them: indexes
/// into its `keep_headers`.
#[derive(Debug, Default, Clone)]
pub(crate) struct Heads {
    /// `set-cookie`, kept for the user's jar.
    pub(crate) set_cookie: Option<usize>,
    /// `location`, kept to follow a redirect.
    pub(crate) location: Option<usize>,
    /// The names kept, lower case, in order (the request's `keep_headers`).
    pub(crate) names: Vec<String>,
}

impl Heads {
    /// The index of a kept header.
    pub(crate) fn index(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }
}

/// Stores captured values into `vars`.
pub(crate) fn store(captured: Captured, vars: &mut Vars) {
    for (var, value, json) in captured {
        if json {
            vars.set_json(&var, value);
        } else {
            vars.set(&var, value);
        }
    }
}

/// A match: text, or a JSON value.
enum Found {
    Text(String),
    Json(Value),
}

/// Takes every capture from `reply`; `json` is its body parsed, when a JSONPath
/// capture or expectation needed it (a body that is not JSON: `None`).
pub(crate) fn take(
    captures: &[ResponseCapture],
    reply: &Reply<'_>,
    heads: &Heads,
    json: Option<&Value>,
    ctx: &mut RenderContext<'_>,
) -> Result<Captured, ErrorKind> {
    let mut out = Vec::with_capacity(captures.len());
    let mut html: Option<scraper::Html> = None;
    for capture in captures {
        let found = matches(capture, reply, heads, json, &mut html);
        let value = match (pick(capture.pick, found, ctx), &capture.default) {
            (Some(v), _) => v,
            (None, Some(default)) => Found::Text(default.clone()),
            (None, None) => return Err(ErrorKind::Check),
        };
        out.push(match value {
            Found::Text(s) => (capture.var.clone(), s, false),
            Found::Json(Value::String(s)) => (capture.var.clone(), s, false),
            Found::Json(v) => (capture.var.clone(), v.to_string(), true),
        });
    }
    Ok(out)
}

/// Chooses the kept match: the first, a random one, or all as a JSON array.
fn pick(how: CapturePick, mut found: Vec<Found>, ctx: &mut RenderContext<'_>) -> Option<Found> {
    if found.is_empty() {
        return None;
    }
    match how {
        CapturePick::First => Some(found.swap_remove(0)),
        CapturePick::Random => {
            let i = ctx.rng.random_range(0..found.len());
            Some(found.swap_remove(i))
        }
        CapturePick::All => Some(Found::Json(Value::Array(
            found
                .into_iter()
                .map(|f| match f {
                    Found::Text(s) => Value::String(s),
                    Found::Json(v) => v,
                })
                .collect(),
        ))),
    }
}

/// Every match of one capture, in order, at most [`MAX_MATCHES`] (one is enough for
/// `first`).
fn matches(
    capture: &ResponseCapture,
    reply: &Reply<'_>,
    heads: &Heads,
    json: Option<&Value>,
    html: &mut Option<scraper::Html>,
) -> Vec<Found> {
    let limit = if capture.pick == CapturePick::First {
        1
    } else {
        MAX_MATCHES
    };
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    match &capture.from {
        CaptureFrom::Status => vec![Found::Json(Value::from(reply.status))],
        CaptureFrom::Json(path) => match json {
            Some(json) => {
                let nodes = path.query(json).all();
                // JSONPath `$.items` matching one array: `random` and `all` read its
                // elements, as a list of ids is most often written.
                if capture.pick != CapturePick::First && nodes.len() == 1 {
                    if let Value::Array(items) = nodes[0] {
                        return items.iter().take(limit).cloned().map(Found::Json).collect();
                    }
                }
                nodes
                    .into_iter()
                    .take(limit)
                    .cloned()
                    .map(Found::Json)
                    .collect()
            }
            None => Vec::new(),
        },
        CaptureFrom::Header(name) => match heads.index(name) {
            Some(i) => reply
                .header(i)
                .take(limit)
                .map(|v| Found::Text(text(v)))
                .collect(),
            None => Vec::new(),
        },
        CaptureFrom::Cookie(name) => match heads.set_cookie {
            Some(i) => reply
                .header(i)
                .filter_map(|v| {
                    let v = std::str::from_utf8(v).ok()?;
                    let pair = v.split(';').next()?;
                    let (n, value) = pair.split_once('=')?;
                    (n.trim() == name).then(|| Found::Text(value.trim().to_string()))
                })
                .take(limit)
                .collect(),
            None => Vec::new(),
        },
        CaptureFrom::Regex(re) => {
            let body = String::from_utf8_lossy(reply.body);
            re.captures_iter(&body)
                .take(limit)
                .filter_map(|c| c.get(1).or_else(|| c.get(0)))
                .map(|m| Found::Text(m.as_str().to_string()))
                .collect()
        }
        CaptureFrom::Css { selector, attr } => {
            let doc = html.get_or_insert_with(|| {
                scraper::Html::parse_document(&String::from_utf8_lossy(reply.body))
            });
            doc.select(selector)
                .filter_map(|el| match attr {
                    Some(a) => el.value().attr(a).map(str::to_string),
                    None => Some(el.text().collect::<String>().trim().to_string()),
                })
                .take(limit)
                .map(Found::Text)
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    fn cap(
        var: &str,
        from: CaptureFrom,
        pick: CapturePick,
        default: Option<&str>,
    ) -> ResponseCapture {
        ResponseCapture {
            var: var.into(),
            from,
            pick,
            default: default.map(str::to_string),
            source: String::new(),
        }
    }

    fn css(s: &str, attr: Option<&str>) -> CaptureFrom {
        CaptureFrom::Css {
            selector: Box::new(scraper::Selector::parse(s).unwrap()),
            attr: attr.map(str::to_string),
        }
    }

    fn take_all(
        caps: &[ResponseCapture],
        status: u16,
        headers: &[(usize, Vec<u8>)],
        heads: &Heads,
        body: &str,
    ) -> Result<Vars, ErrorKind> {
        let reply = Reply {
            status,
            headers,
            body: body.as_bytes(),
        };
        let json: Option<Value> = serde_json::from_str(body).ok();
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let empty = Vars::default();
        let mut ctx = RenderContext {
            rng: &mut rng,
            vars: &empty,
            user: 1,
            iteration: 0,
        };
        let captured = take(caps, &reply, heads, json.as_ref(), &mut ctx)?;
        let mut vars = Vars::default();
        store(captured, &mut vars);
        Ok(vars)
    }

    const PAGE: &str = r#"<html><body><form action="/login/" method="post">
        <input type="hidden" name="csrfmiddlewaretoken" value="tok-123">
        <h1 id="greeting"> Hello, alice </h1>
        <a href="/a">A</a><a href="/b">B</a><a href="/c">C</a>
        </form></body></html>"#;

    #[test]
    fn html_fields_text_and_attributes() {
        let caps = [
            cap(
                "csrf",
                css("input[name=csrfmiddlewaretoken]", Some("value")),
                CapturePick::First,
                None,
            ),
            cap("hello", css("#greeting", None), CapturePick::First, None),
            cap("links", css("a", Some("href")), CapturePick::All, None),
            cap("one", css("a", Some("href")), CapturePick::Random, None),
            cap(
                "token",
                CaptureFrom::Regex(regex::Regex::new(r#"value="([^"]+)""#).unwrap()),
                CapturePick::First,
                None,
            ),
            cap("code", CaptureFrom::Status, CapturePick::First, None),
        ];
        let vars = take_all(&caps, 200, &[], &Heads::default(), PAGE).unwrap();
        assert_eq!(vars.get("csrf"), Some("tok-123"));
        assert_eq!(vars.get("hello"), Some("Hello, alice"));
        assert_eq!(vars.get("links"), Some(r#"["/a","/b","/c"]"#));
        assert!(["/a", "/b", "/c"].contains(&vars.get("one").unwrap()));
        assert_eq!(vars.get("token"), Some("tok-123"));
        assert_eq!(vars.get("code"), Some("200"));
    }

    #[test]
    fn headers_cookies_defaults_and_misses() {
        let heads = Heads {
            set_cookie: Some(0),
            location: Some(1),
            names: vec!["set-cookie".into(), "location".into(), "x-id".into()],
        };
        let headers = vec![
            (0, b"csrftoken=abc; Path=/; SameSite=Lax".to_vec()),
            (0, b"sessionid=s1; HttpOnly".to_vec()),
            (1, b"/home/".to_vec()),
        ];
        let caps = [
            cap(
                "to",
                CaptureFrom::Header("location".into()),
                CapturePick::First,
                None,
            ),
            cap(
                "csrf",
                CaptureFrom::Cookie("csrftoken".into()),
                CapturePick::First,
                None,
            ),
            cap(
                "sid",
                CaptureFrom::Cookie("sessionid".into()),
                CapturePick::First,
                None,
            ),
            cap(
                "missing",
                CaptureFrom::Header("x-id".into()),
                CapturePick::First,
                Some("none"),
            ),
        ];
        let vars = take_all(&caps, 302, &headers, &heads, "").unwrap();
        assert_eq!(vars.get("to"), Some("/home/"));
        assert_eq!(vars.get("csrf"), Some("abc"));
        assert_eq!(vars.get("sid"), Some("s1"));
        assert_eq!(vars.get("missing"), Some("none"));
        // Without a default, no match fails the step and stores nothing.
        let strict = [cap(
            "x",
            CaptureFrom::Header("x-id".into()),
            CapturePick::First,
            None,
        )];
        assert_eq!(
            take_all(&strict, 200, &headers, &heads, "").unwrap_err(),
            ErrorKind::Check
        );
    }

    #[test]
    fn json_random_and_all_read_an_array_elements() {
        let body = r#"{"ids":[4,5,6],"name":"x"}"#;
        let all = [cap(
            "ids",
            CaptureFrom::Json(serde_json_path::JsonPath::parse("$.ids").unwrap()),
            CapturePick::All,
            None,
        )];
        assert_eq!(
            take_all(&all, 200, &[], &Heads::default(), body)
                .unwrap()
                .get("ids"),
            Some("[4,5,6]")
        );
        let one = [cap(
            "id",
            CaptureFrom::Json(serde_json_path::JsonPath::parse("$.ids").unwrap()),
            CapturePick::Random,
            None,
        )];
        let v = take_all(&one, 200, &[], &Heads::default(), body).unwrap();
        assert!(["4", "5", "6"].contains(&v.get("id").unwrap()));
        let first = [cap(
            "ids",
            CaptureFrom::Json(serde_json_path::JsonPath::parse("$.ids").unwrap()),
            CapturePick::First,
            None,
        )];
        assert_eq!(
            take_all(&first, 200, &[], &Heads::default(), body)
                .unwrap()
                .get("ids"),
            Some("[4,5,6]")
        );
    }

    #[test]
    fn hostile_bodies_stay_bounded() {
        // Fifty thousand links: `all` keeps at most MAX_MATCHES.
        let page = "<a href=\"/x\">x</a>".repeat(50_000);
        let caps = [cap("links", css("a", Some("href")), CapturePick::All, None)];
        let vars = take_all(&caps, 200, &[], &Heads::default(), &page).unwrap();
        let n: Vec<Value> = serde_json::from_str(vars.get("links").unwrap()).unwrap();
        assert_eq!(n.len(), MAX_MATCHES);
        // Deeply nested unclosed tags and bytes that are not text still parse. (25,000
        // levels: html5ever's tree builder takes time quadratic in the depth of unclosed
        // elements, 28 s of this suite at 100,000.)
        let deep = "<div>".repeat(25_000) + "\u{0}\u{fffd}<p id=x>ok";
        let caps = [cap("p", css("#x", None), CapturePick::First, None)];
        assert_eq!(
            take_all(&caps, 200, &[], &Heads::default(), &deep)
                .unwrap()
                .get("p"),
            Some("ok")
        );
    }
}

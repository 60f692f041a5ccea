//! A HAR file (HTTP Archive 1.2, as browsers' developer tools and Chromium's
//! `--log-net-log` tooling export it) to [`Exchange`]s, in the order recorded. Only
//! `log.entries[].request` is read (method, URL, headers and `postData.text`), and
//! of the response its status when it was an error, which the replay then expects.
//! Entries that are not http(s) (`data:`, extensions) are skipped; a binary body
//! (`postData` without text) is an error naming the entry.

use serde::Deserialize;

use super::{kept, ConvertError, Exchange, HarError, MAX_REQUESTS};

#[derive(Deserialize)]
struct Har {
    log: Log,
}

#[derive(Deserialize)]
struct Log {
    entries: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    request: Request,
    response: Option<Response>,
}

#[derive(Deserialize)]
struct Response {
    /// 0 (or absent) when the browser got no answer.
    status: Option<i64>,
}

#[derive(Deserialize)]
struct Request {
    method: String,
    url: String,
    #[serde(default)]
    headers: Vec<Header>,
    #[serde(rename = "postData")]
    post_data: Option<PostData>,
}

#[derive(Deserialize)]
struct Header {
    name: String,
    value: String,
}

#[derive(Deserialize)]
struct PostData {
    text: Option<String>,
}

/// Parses HAR `text` (already within [`super::MAX_INPUT`]). serde_json's nesting limit
/// bounds how deep a hostile file can make the parser go.
pub fn parse(text: &str) -> Result<Vec<Exchange>, ConvertError> {
    let har: Har = serde_json::from_str(text).map_err(HarError::NotHar)?;
    let mut out = Vec::new();
    for (i, entry) in har.log.entries.into_iter().enumerate() {
        let r = entry.request;
        let status = entry.response.and_then(|r| r.status);
        let recorded_error = status.filter(|s| (400..=599).contains(s)).map(|s| s as u16);
        if !(r.url.starts_with("http://") || r.url.starts_with("https://")) {
            continue;
        }
        if out.len() == MAX_REQUESTS {
            return Err(HarError::TooMany.into());
        }
        let body = match r.post_data {
            None => None,
            Some(PostData { text: Some(text) }) => Some(text),
            Some(PostData { text: None }) => {
                return Err(HarError::BinaryBody { entry: i + 1 }.into())
            }
        };
        // HTTP/2 recordings name headers in lower case and may repeat one (cookies);
        // repeats are kept, in order.
        let headers = r
            .headers
            .into_iter()
            .filter(|h| kept(&h.name))
            .map(|h| (h.name, h.value))
            .collect();
        out.push(Exchange {
            method: r.method.to_ascii_uppercase(),
            url: r.url,
            headers,
            body: body.filter(|b| !b.is_empty()),
            recorded_error,
        });
    }
    if out.is_empty() {
        return Err(HarError::NoRequest.into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_become_exchanges_in_order_without_hop_headers() {
        let har = r#"{"log": {"version": "1.2", "creator": {"name": "x", "version": "1"},
          "entries": [
            {"request": {"method": "GET", "url": "data:text/plain,hi", "headers": []}},
            {"request": {"method": "post", "url": "http://127.0.0.1:1/tasks",
              "headers": [{"name": ":authority", "value": "x"}, {"name": "Host", "value": "x"},
                          {"name": "Content-Type", "value": "application/json"}],
              "postData": {"mimeType": "application/json", "text": "{\"a\":1}"}},
             "response": {"status": 201}},
            {"request": {"method": "GET", "url": "http://127.0.0.1:1/tasks/1", "headers": []}},
            {"request": {"method": "GET", "url": "http://127.0.0.1:1/favicon.ico"},
             "response": {"status": 404}}
          ]}}"#;
        let got = parse(har).unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].recorded_error, None, "a success expects no status");
        assert_eq!(got[2].recorded_error, Some(404));
        let yaml = super::super::scenario("r", &got, true).unwrap();
        assert!(
            yaml.contains("name: \"GET /favicon.ico\"\n          method: GET\n          path: \"/favicon.ico\"\n          expect: {status: 404}\n"),
            "{yaml}"
        );
        assert_eq!(got[0].method, "POST");
        assert_eq!(
            got[0].headers,
            [("Content-Type".into(), "application/json".into())]
        );
        assert_eq!(got[0].body.as_deref(), Some("{\"a\":1}"));
        assert_eq!(got[1].url, "http://127.0.0.1:1/tasks/1");
    }

    #[test]
    fn hostile_recordings_are_refused_cleanly() {
        // Nesting far past serde_json's recursion limit: an error, not a stack overflow.
        let deep = format!(
            "{{\"log\": {}{}}}",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert!(parse(&deep).unwrap_err().to_string().contains("not a HAR"));
        assert!(parse("{\"log\": {\"entries\": []}}").is_err());
        assert!(parse("\u{0}\u{1}garbage").is_err());
        let many: Vec<String> = (0..=MAX_REQUESTS)
            .map(|_| r#"{"request": {"method": "GET", "url": "http://h/"}}"#.to_string())
            .collect();
        let big = format!("{{\"log\": {{\"entries\": [{}]}}}}", many.join(","));
        assert!(parse(&big).unwrap_err().to_string().contains("more than"));
        let binary = r#"{"log": {"entries": [{"request": {"method": "POST", "url": "http://h/",
            "postData": {"mimeType": "application/octet-stream"}}}]}}"#;
        assert!(parse(binary).unwrap_err().to_string().contains("entry 1"));
        use std::io::Read;
        let input = std::io::repeat(b'x').take(super::super::MAX_INPUT + 10);
        let oversized = super::super::read_limited(input);
        assert!(matches!(oversized, Err(ConvertError::TooLarge)));
    }
}

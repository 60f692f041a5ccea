//! A curl command line (as a browser's "Copy as cURL" or a README gives it) to an
//! [`Exchange`]. The line is split as a POSIX shell would (`shlex`); the options that
//! shape the request are read (`-X`, `-H`, `-d` and its kin, `--json`, `-A`, `-e`,
//! `-b`, `-G`, `-I`, `--url`), options that only change how curl itself behaves are
//! skipped, and any other option is an error naming it rather than a request that
//! silently differs from the command.

use super::{kept, ConvertError, CurlError, Exchange};

/// Options that take no value and do not change the request sent.
const IGNORED_FLAGS: &[&str] = &[
    "-s",
    "--silent",
    "-S",
    "--show-error",
    "-k",
    "--insecure",
    "-L",
    "--location",
    "-v",
    "--verbose",
    "-i",
    "--include",
    "--compressed",
    "-f",
    "--fail",
    "--http1.1",
    "--http2",
    "--http2-prior-knowledge",
    "-N",
    "--no-buffer",
    "-g",
    "--globoff",
    "-#",
    "--progress-bar",
];

/// Options that take a value and do not change the request sent.
const IGNORED_WITH_VALUE: &[&str] = &[
    "-o",
    "--output",
    "-m",
    "--max-time",
    "--connect-timeout",
    "-w",
    "--write-out",
    "--retry",
    "--cacert",
];

/// Options whose value is the body.
const DATA: &[&str] = &[
    "-d",
    "--data",
    "--data-raw",
    "--data-binary",
    "--data-ascii",
];

/// Parses `command` (`curl ...`; the leading `curl` may be left out).
pub fn parse(command: &str) -> Result<Exchange, ConvertError> {
    // Line continuations as shells write them in copied commands.
    let joined = command.replace("\\\r\n", " ").replace("\\\n", " ");
    let words = shlex::split(&joined).ok_or(CurlError::Quotes)?;
    let mut words = words.into_iter().peekable();
    if words.peek().is_some_and(|w| w == "curl") {
        words.next();
    }
    let mut method = None;
    let mut headers: Vec<(String, String)> = Vec::new();
    let mut data: Vec<String> = Vec::new();
    let mut json = false;
    let mut get = false;
    let mut url = None;
    while let Some(word) = words.next() {
        if !word.starts_with('-') || word == "-" {
            if url.replace(word).is_some() {
                return Err(CurlError::ManyUrls.into());
            }
            continue;
        }
        // `--opt=value`, `-Xvalue` and `-H'...'` carry their value in the same word.
        let (opt, attached) = match word.split_once('=') {
            Some((o, v)) if o.starts_with("--") => (o.to_string(), Some(v.to_string())),
            _ if !word.starts_with("--") && word.len() > 2 => {
                (word[..2].to_string(), Some(word[2..].to_string()))
            }
            _ => (word.clone(), None),
        };
        let mut value = |opt: &str| {
            attached
                .clone()
                .or_else(|| words.next())
                .ok_or_else(|| CurlError::NoValue {
                    option: opt.to_string(),
                })
        };
        match opt.as_str() {
            "-X" | "--request" => method = Some(value(&opt)?.to_ascii_uppercase()),
            "-H" | "--header" => {
                let h = value(&opt)?;
                let (n, v) = h
                    .split_once(':')
                    .ok_or_else(|| CurlError::Header { header: h.clone() })?;
                headers.push((n.trim().to_string(), v.trim().to_string()));
            }
            o if DATA.contains(&o) => {
                let d = value(&opt)?;
                if o != "--data-raw" && d.starts_with('@') {
                    return Err(CurlError::BodyFile {
                        option: opt.clone(),
                        value: d,
                    }
                    .into());
                }
                data.push(d);
            }
            "--json" => {
                data.push(value(&opt)?);
                json = true;
            }
            "-A" | "--user-agent" => headers.push(("user-agent".into(), value(&opt)?)),
            "-e" | "--referer" => headers.push(("referer".into(), value(&opt)?)),
            "-b" | "--cookie" => headers.push(("cookie".into(), value(&opt)?)),
            "--url" => {
                if url.replace(value(&opt)?).is_some() {
                    return Err(CurlError::ManyUrls.into());
                }
            }
            "-G" | "--get" => get = true,
            "-I" | "--head" => method = Some("HEAD".into()),
            o if IGNORED_WITH_VALUE.contains(&o) => {
                value(&opt)?;
            }
            o if IGNORED_FLAGS.contains(&o) && attached.is_none() => {}
            // Bundled short flags such as `-sSL`.
            o if !o.starts_with("--")
                && word[1..]
                    .chars()
                    .all(|c| IGNORED_FLAGS.contains(&format!("-{c}").as_str())) => {}
            _ => {
                return Err(CurlError::Option {
                    option: word.clone(),
                }
                .into())
            }
        }
    }
    let mut url = url.ok_or(CurlError::NoUrl)?;
    if !url.contains("://") {
        // curl's default scheme.
        url = format!("http://{url}");
    }
    let mut body = (!data.is_empty()).then(|| data.join("&"));
    if get {
        if let Some(query) = body.take() {
            let sep = if url.contains('?') { '&' } else { '?' };
            url = format!("{url}{sep}{query}");
        }
    }
    if json {
        for name in ["content-type", "accept"] {
            if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
                headers.push((name.into(), "application/json".into()));
            }
        }
    } else if body.is_some()
        && !headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
    {
        // What curl sends with -d.
        headers.push((
            "content-type".into(),
            "application/x-www-form-urlencoded".into(),
        ));
    }
    let method = method.unwrap_or_else(|| if body.is_some() { "POST" } else { "GET" }.into());
    headers.retain(|(n, _)| kept(n));
    Ok(Exchange {
        method,
        url,
        headers,
        body,
        recorded_error: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copied_command_keeps_method_headers_and_body() {
        let e = parse(
            "curl 'http://127.0.0.1:8080/tasks' -X PUT \\\n  -H 'Content-Type: application/json' \
             -H \"X-Token: a b:c\" --data-raw '{\"n\":1}' --compressed -sS",
        )
        .unwrap();
        assert_eq!(e.method, "PUT");
        assert_eq!(e.url, "http://127.0.0.1:8080/tasks");
        assert_eq!(
            e.headers,
            [
                ("Content-Type".into(), "application/json".into()),
                ("X-Token".into(), "a b:c".into())
            ]
        );
        assert_eq!(e.body.as_deref(), Some("{\"n\":1}"));
    }

    #[test]
    fn data_means_post_and_get_moves_it_to_the_query() {
        let post = parse("curl -d a=1 -d b=2 localhost:8080/x").unwrap();
        assert_eq!(post.method, "POST");
        assert_eq!(post.url, "http://localhost:8080/x");
        assert_eq!(post.body.as_deref(), Some("a=1&b=2"));
        let get = parse("curl -G -d a=1 http://h/x?z=0").unwrap();
        assert_eq!(
            (get.method.as_str(), get.url.as_str()),
            ("GET", "http://h/x?z=0&a=1")
        );
        let json = parse("curl --json '{}' -XPATCH http://h/").unwrap();
        assert_eq!(json.method, "PATCH");
        assert!(json
            .headers
            .contains(&("accept".into(), "application/json".into())));
    }

    #[test]
    fn what_cannot_be_converted_is_named() {
        for (command, said) in [
            ("curl 'http://h/", "unbalanced quotes"),
            ("curl http://a/ http://b/", "more than one URL"),
            ("curl -F f=@x http://h/", "option -F"),
            ("curl -d @body.json http://h/", "read from a file"),
            ("curl -H 'no colon' http://h/", "Name: value"),
            ("curl -X", "-X needs a value"),
            ("curl -s", "no URL"),
        ] {
            let e = parse(command).unwrap_err().to_string();
            assert!(e.contains(said), "{command}: {e}");
        }
    }
}

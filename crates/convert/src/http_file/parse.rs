//! The `.http` text split into file variables and requests: `###` separators,
//! `# @name` and other tags, the request line, query continuation lines, headers, the
//! body (with `< file` includes) and `> {% … %}` response handlers.

/// One request as written.
#[derive(Debug, Default, Clone)]
pub(super) struct Raw {
    /// Byte offset of the request line.
    pub(super) at: usize,
    /// `# @name` (or the text after `###`).
    pub(super) name: Option<String>,
    /// The method, upper case.
    pub(super) method: String,
    /// The URL with its continuation lines joined.
    pub(super) url: String,
    /// Headers in order.
    pub(super) headers: Vec<(String, String)>,
    /// Body lines as written (includes still `< path`), trailing blank lines trimmed.
    pub(super) body: Vec<(usize, String)>,
    /// `> {% … %}` handler scripts, with their offsets.
    pub(super) handlers: Vec<(usize, String)>,
    /// `> ./file.js` handler files and other lines left out: offset, text, why.
    pub(super) other: Vec<(usize, String, String)>,
    /// `# @no-redirect`.
    pub(super) no_redirect: bool,
    /// `# @no-cookie-jar` (offset).
    pub(super) no_cookie_jar: Option<usize>,
}

/// What the file holds, in order.
#[derive(Debug, Default)]
pub(super) struct Parsed {
    /// `@name = value` variables: offset, name, value.
    pub(super) variables: Vec<(usize, String, String)>,
    /// The requests.
    pub(super) requests: Vec<Raw>,
}

const METHODS: &[&str] = &[
    "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE", "CONNECT",
];

/// Where a block is in its reading.
#[derive(PartialEq, Eq, Clone, Copy)]
enum State {
    Before,
    Url,
    Headers,
    Body,
}

/// Splits `text` into variables and requests; `limit`: the most requests kept (the
/// caller refuses more, at the offset returned).
pub(super) fn parse(text: &str, limit: usize) -> Result<Parsed, usize> {
    let mut parsed = Parsed::default();
    let mut current = Raw::default();
    let mut state = State::Before;
    let mut pending_name: Option<String> = None;
    let mut pending_tags = (false, None::<usize>);
    let mut offset = 0;
    let mut lines = text.split_inclusive('\n').peekable();
    while let Some(full) = lines.next() {
        let at = offset;
        offset += full.len();
        let line = full.trim_end_matches(['\n', '\r']);
        let trimmed = line.trim();
        if trimmed.starts_with("###") {
            finish(&mut parsed, &mut current, state, limit)?;
            state = State::Before;
            let title = trimmed.trim_start_matches('#').trim();
            pending_name = (!title.is_empty()).then(|| title.to_string());
            pending_tags = (false, None);
            continue;
        }
        if state == State::Body {
            if let Some(rest) = trimmed.strip_prefix('>') {
                let rest = rest.trim();
                if let Some(script) = rest.strip_prefix("{%") {
                    // The handler runs to its `%}`, over lines.
                    let mut body = script.to_string();
                    let mut closed = body.contains("%}");
                    while !closed {
                        let Some(next) = lines.next() else { break };
                        offset += next.len();
                        body.push('\n');
                        body.push_str(next.trim_end_matches(['\n', '\r']));
                        closed = body.contains("%}");
                    }
                    let script = body.split("%}").next().unwrap_or_default().to_string();
                    current
                        .handlers
                        .push((at + line.find("{%").map_or(0, |i| i + 2), script));
                } else {
                    current.other.push((
                        at,
                        trimmed.to_string(),
                        "a response handler file: not read".into(),
                    ));
                }
                continue;
            }
            if trimmed.starts_with("<>") {
                current.other.push((
                    at,
                    trimmed.to_string(),
                    "a response reference: headroom keeps no previous responses".into(),
                ));
                continue;
            }
            current.body.push((at, line.to_string()));
            continue;
        }
        let comment = trimmed
            .strip_prefix('#')
            .or_else(|| trimmed.strip_prefix("//"));
        if let Some(comment) = comment {
            let comment = comment.trim();
            if let Some(tag) = comment.strip_prefix('@') {
                let (key, value) = tag.split_once([' ', '=']).unwrap_or((tag, ""));
                match key.trim() {
                    "name" => {
                        pending_name = Some(value.trim().trim_start_matches('=').trim().to_string())
                    }
                    "no-redirect" => pending_tags.0 = true,
                    "no-cookie-jar" => pending_tags.1 = Some(at),
                    _ => {}
                }
            }
            continue;
        }
        match state {
            State::Before => {
                if trimmed.is_empty() {
                    continue;
                }
                if let Some(var) = trimmed.strip_prefix('@') {
                    if let Some((name, value)) = var.split_once('=') {
                        parsed.variables.push((
                            at,
                            name.trim().to_string(),
                            value.trim().to_string(),
                        ));
                        continue;
                    }
                }
                let mut words = trimmed.split_whitespace();
                let first = words.next().unwrap_or_default();
                let (method, url) = if METHODS.contains(&first.to_ascii_uppercase().as_str()) {
                    (
                        first.to_ascii_uppercase(),
                        words.next().unwrap_or_default().to_string(),
                    )
                } else {
                    ("GET".to_string(), first.to_string())
                };
                current = Raw {
                    at,
                    name: pending_name.take(),
                    method,
                    url,
                    no_redirect: pending_tags.0,
                    no_cookie_jar: pending_tags.1,
                    ..Raw::default()
                };
                pending_tags = (false, None);
                state = State::Url;
            }
            State::Url | State::Headers => {
                if trimmed.is_empty() {
                    state = State::Body;
                } else if state == State::Url
                    && (trimmed.starts_with('?') || trimmed.starts_with('&'))
                {
                    current.url.push_str(trimmed);
                } else if let Some((name, value)) = trimmed.split_once(':') {
                    current
                        .headers
                        .push((name.trim().to_string(), value.trim().to_string()));
                    state = State::Headers;
                } else {
                    // Not a header: the body starts without its blank line.
                    state = State::Body;
                    current.body.push((at, line.to_string()));
                }
            }
            State::Body => {}
        }
    }
    finish(&mut parsed, &mut current, state, limit)?;
    Ok(parsed)
}

/// Closes the current request, if one was started.
fn finish(parsed: &mut Parsed, current: &mut Raw, state: State, limit: usize) -> Result<(), usize> {
    if state == State::Before {
        return Ok(());
    }
    let mut raw = std::mem::take(current);
    while raw.body.last().is_some_and(|(_, l)| l.trim().is_empty()) {
        raw.body.pop();
    }
    if parsed.requests.len() >= limit {
        return Err(raw.at);
    }
    parsed.requests.push(raw);
    Ok(())
}

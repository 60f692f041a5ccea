//! The collection walked into flows: one per top-level folder (its nested folders'
//! requests in order) and one, named after the collection, for the top-level
//! requests; each request with the auth and the event scripts it inherits from its
//! folders and the collection. Bounds folder depth ([`MAX_DEPTH`]) and requests
//! ([`MAX_ITEMS`]).

use serde_json::{Map, Value};

use super::effects::Listen;
use super::spans::{Owner, Spans};
use crate::{ConvertError, Outcome, Source, MAX_DEPTH, MAX_ITEMS};

/// The longest request name kept, characters.
const MAX_NAME: usize = 200;

/// One event script in force for a request.
#[derive(Debug, Clone)]
pub(super) struct ScriptRef {
    /// Whose `event` list it is in.
    pub(super) owner: Owner,
    /// Its index in that list.
    pub(super) event: usize,
    /// When it runs.
    pub(super) listen: Listen,
    /// The `exec` lines joined with `\n`.
    pub(super) text: String,
    /// The lines of `text`.
    pub(super) lines: Vec<String>,
}

/// A request met, with what it inherits.
pub(super) struct Req<'v> {
    /// Its pre-order ordinal among the collection's items.
    pub(super) ordinal: usize,
    /// Its name, cut to [`MAX_NAME`] characters.
    pub(super) name: String,
    /// The request object (or bare URL string).
    pub(super) request: &'v Value,
    /// The auth in force (its own, else inherited).
    pub(super) auth: Option<&'v Value>,
    /// The scripts in force: the collection's, its folders', its own.
    pub(super) scripts: Vec<ScriptRef>,
}

/// A flow: its name and requests.
pub(super) struct Flow<'v> {
    /// The folder's name, or the collection's for top-level requests.
    pub(super) name: String,
    /// Its requests, in order.
    pub(super) requests: Vec<Req<'v>>,
}

/// What the walk carries down the folders.
#[derive(Clone)]
struct Inherited<'v> {
    auth: Option<&'v Value>,
    scripts: Vec<ScriptRef>,
}

/// An item left out by the walk: its offset, what it is, and why.
pub(super) type LeftOut = (usize, String, Outcome);

/// Walks the collection's top-level `items` (of the object `top`, named `name`) into
/// its flows, with the items left out for the report.
pub(super) fn flows<'v>(
    source: &Source<'_>,
    spans: &Spans,
    top: &'v Map<String, Value>,
    items: &'v [Value],
    name: &str,
) -> Result<(Vec<Flow<'v>>, Vec<LeftOut>), ConvertError> {
    let mut walker = Walker {
        source,
        spans,
        ordinal: 0,
        count: 0,
        report_items: Vec::new(),
    };
    let inherited = Inherited {
        auth: top.get("auth").filter(|a| !a.is_null()),
        scripts: scripts_of(top.get("event"), Owner::Collection),
    };
    let mut flows: Vec<Flow<'_>> = Vec::new();
    let mut top_flow: Option<usize> = None;
    for item in items {
        if item.get("item").is_some() {
            let folder = item.get("name").and_then(Value::as_str).unwrap_or("folder");
            let mut flow = Flow {
                name: folder.to_string(),
                requests: Vec::new(),
            };
            walker.folder(item, &inherited, &mut flow.requests, 1)?;
            if !flow.requests.is_empty() {
                flows.push(flow);
            }
        } else {
            let mut found = Vec::new();
            walker.item(item, &inherited, &mut found, 1)?;
            let index = *top_flow.get_or_insert_with(|| {
                flows.push(Flow {
                    name: name.to_string(),
                    requests: Vec::new(),
                });
                flows.len() - 1
            });
            flows[index].requests.extend(found);
        }
    }
    Ok((flows, walker.report_items))
}

struct Walker<'s> {
    source: &'s Source<'s>,
    spans: &'s Spans,
    ordinal: usize,
    count: usize,
    report_items: Vec<LeftOut>,
}

/// The enabled scripts of an `event` list.
fn scripts_of(events: Option<&Value>, owner: Owner) -> Vec<ScriptRef> {
    let mut out = Vec::new();
    for (event, e) in events
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if e.get("disabled").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        let listen = match e.get("listen").and_then(Value::as_str) {
            Some("test") => Listen::Test,
            Some("prerequest") => Listen::PreRequest,
            _ => continue,
        };
        let lines: Vec<String> = match e.get("script").and_then(|s| s.get("exec")) {
            Some(Value::Array(lines)) => lines
                .iter()
                .map(|l| l.as_str().unwrap_or_default().to_string())
                .collect(),
            Some(Value::String(text)) => vec![text.clone()],
            _ => continue,
        };
        let text = lines.join("\n");
        // A single `exec` string holds many lines: split so positions resolve.
        let lines = text.split('\n').map(String::from).collect();
        out.push(ScriptRef {
            owner,
            event,
            listen,
            text,
            lines,
        });
    }
    out
}

impl Walker<'_> {
    /// The next item's ordinal (items are numbered in the order met, as the spans
    /// were) and its offset in the collection; an error past [`MAX_DEPTH`].
    fn enter(&mut self, depth: usize) -> Result<(usize, usize), ConvertError> {
        let ordinal = self.ordinal;
        self.ordinal += 1;
        let at = self.spans.items.get(ordinal).copied().unwrap_or(0);
        if depth > MAX_DEPTH {
            return Err(self
                .source
                .limit(at, "folders nested deeper than", MAX_DEPTH));
        }
        Ok((ordinal, at))
    }

    /// A folder's items, flattened in order.
    fn folder<'v>(
        &mut self,
        folder: &'v Value,
        inherited: &Inherited<'v>,
        out: &mut Vec<Req<'v>>,
        depth: usize,
    ) -> Result<(), ConvertError> {
        let (ordinal, _) = self.enter(depth)?;
        let mut inner = inherited.clone();
        if let Some(auth) = folder.get("auth").filter(|a| !a.is_null()) {
            if auth.get("type").and_then(Value::as_str) != Some("inherit") {
                inner.auth = Some(auth);
            }
        }
        inner
            .scripts
            .extend(scripts_of(folder.get("event"), Owner::Item(ordinal)));
        for item in folder
            .get("item")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if item.get("item").is_some() {
                self.folder(item, &inner, out, depth + 1)?;
            } else {
                self.item(item, &inner, out, depth + 1)?;
            }
        }
        Ok(())
    }

    /// One request item.
    fn item<'v>(
        &mut self,
        item: &'v Value,
        inherited: &Inherited<'v>,
        out: &mut Vec<Req<'v>>,
        depth: usize,
    ) -> Result<(), ConvertError> {
        let (ordinal, at) = self.enter(depth)?;
        let name = item
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("request");
        // A request's name labels its statistics: a huge one is cut, not carried.
        let name: String = name.chars().take(MAX_NAME).collect();
        let Some(request) = item
            .get("request")
            .filter(|r| r.is_object() || r.is_string())
        else {
            self.report_items.push((
                at,
                name,
                Outcome::LeftOut("an item with neither a request nor items".into()),
            ));
            return Ok(());
        };
        self.count += 1;
        if self.count > MAX_ITEMS {
            return Err(self.source.limit(at, "more requests than", MAX_ITEMS));
        }
        let mut scripts = inherited.scripts.clone();
        scripts.extend(scripts_of(item.get("event"), Owner::Item(ordinal)));
        let auth = match request.get("auth").filter(|a| !a.is_null()) {
            Some(a) if a.get("type").and_then(Value::as_str) == Some("inherit") => inherited.auth,
            Some(a) => Some(a),
            None => inherited.auth,
        };
        out.push(Req {
            ordinal,
            name,
            request,
            auth,
            scripts,
        });
        Ok(())
    }
}

//! The document as a tree that remembers where every value and key starts (a byte
//! offset into the text), read from YAML with serde_saphyr's [`Spanned`] or from JSON
//! with serde_json (which checks it) and a small scanner (which locates it).
//!
//! Both readers are bounded: nesting at [`MAX_DEPTH`], at most [`MAX_NODES`] values,
//! and for YAML serde_saphyr's budget, which refuses an alias bomb while it replays
//! it, long before the expansion would fit in memory.

use std::collections::HashMap;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::budget::BudgetBreach;
use serde_saphyr::{Location, Spanned};

use crate::{ConvertError, Source, MAX_DEPTH};

/// The most values (scalars, sequences, mappings) a document may hold. A 32 MiB input
/// could otherwise hold 16 million `[1,1,…]` elements, over a gigabyte as a tree; at
/// this bound the tree stays under about 200 MB, and the largest public API
/// descriptions (around a million values) still read.
pub(crate) const MAX_NODES: usize = 2_000_000;

/// The most YAML events anchors keep for their aliases: an alias bomb stops here.
const MAX_ANCHOR_EVENTS: usize = 100_000;

/// One value of the document and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    /// Byte offset of its first character in the text.
    pub(crate) at: usize,
    /// The value.
    pub(crate) value: Value,
}

/// A value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Map),
}

/// A mapping's entries in document order, with an index by key when it is large (a
/// schema of thousands of keys must not make every lookup a scan).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Map {
    entries: Vec<Entry>,
    /// Key → position of its first entry, for mappings above [`INDEXED`] entries.
    index: Option<HashMap<String, usize>>,
}

/// Mappings larger than this are indexed.
const INDEXED: usize = 16;

impl Map {
    /// A mapping of `entries`, indexed when large.
    pub(crate) fn new(entries: Vec<Entry>) -> Map {
        let index = (entries.len() > INDEXED).then(|| {
            let mut index = HashMap::with_capacity(entries.len());
            for (i, e) in entries.iter().enumerate() {
                index.entry(e.key.clone()).or_insert(i);
            }
            index
        });
        Map { entries, index }
    }

    fn get(&self, key: &str) -> Option<&Entry> {
        match &self.index {
            Some(index) => index.get(key).and_then(|&i| self.entries.get(i)),
            None => self.entries.iter().find(|e| e.key == key),
        }
    }
}

/// One key of a mapping, where the key starts, and its value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub(crate) key: String,
    pub(crate) at: usize,
    pub(crate) value: Node,
}

impl Node {
    /// The value of `key` in a mapping.
    pub(crate) fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|e| &e.value)
    }

    /// The entry of `key` in a mapping.
    pub(crate) fn entry(&self, key: &str) -> Option<&Entry> {
        match &self.value {
            Value::Map(map) => map.get(key),
            _ => None,
        }
    }

    /// A mapping's entries (none for another value).
    pub(crate) fn entries(&self) -> &[Entry] {
        match &self.value {
            Value::Map(map) => &map.entries,
            _ => &[],
        }
    }

    /// A sequence's items (none for another value).
    pub(crate) fn items(&self) -> &[Node] {
        match &self.value {
            Value::Seq(items) => items,
            _ => &[],
        }
    }

    /// Whether it is a mapping.
    pub(crate) fn is_map(&self) -> bool {
        matches!(self.value, Value::Map(_))
    }

    /// A string value.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The string value of `key`.
    pub(crate) fn str_of(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Node::as_str)
    }

    /// Whether `key` is `true`.
    pub(crate) fn flag(&self, key: &str) -> bool {
        matches!(self.get(key).map(|n| &n.value), Some(Value::Bool(true)))
    }

    /// A number value.
    pub(crate) fn as_f64(&self) -> Option<f64> {
        match self.value {
            Value::Int(i) => Some(i as f64),
            Value::Float(f) => Some(f),
            _ => None,
        }
    }
}

/// A location from serde_saphyr as a byte offset into the text.
fn offset(source: &Source<'_>, location: &Location) -> usize {
    if let Some(b) = location.span().byte_offset() {
        return usize::try_from(b).unwrap_or(usize::MAX);
    }
    // Lines and columns are 1-based and count characters.
    let line = usize::try_from(location.line()).unwrap_or(1).max(1);
    let column = usize::try_from(location.column()).unwrap_or(1).max(1);
    let start = source
        .text
        .split_inclusive('\n')
        .take(line - 1)
        .map(str::len)
        .sum::<usize>();
    let rest = source.text.get(start..).unwrap_or("");
    start
        + rest
            .char_indices()
            .nth(column - 1)
            .map_or(rest.len(), |(i, _)| i)
}

pub(crate) fn yaml(source: &Source<'_>) -> Result<Node, ConvertError> {
    let mut budget = serde_saphyr::budget::Budget::default();
    budget.max_depth = MAX_DEPTH;
    budget.max_nodes = MAX_NODES;
    // Alias replays count as events: a few hundred aliases that expand a billion
    // times stop here, after a million events of work at most.
    budget.max_events = 4 * MAX_NODES;
    // What anchors keep for replay is held in memory as events (a few hundred bytes
    // each): a document's real anchors (shared parameters, responses) need far less.
    budget.max_recorded_anchor_events = MAX_ANCHOR_EVENTS;
    budget.max_recorded_anchor_bytes = 8 << 20;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options.alias_limits.max_total_replayed_events = MAX_NODES;
    options.with_snippet = false;
    // YAML 1.2, as OpenAPI documents are written: `enum: [yes, no, NO]` (Norway) stays
    // text, where YAML 1.1 would read booleans.
    options.strict_booleans = true;
    let spanned: Spanned<Raw> = serde_saphyr::from_str_with_options(source.text, options)
        .map_err(|e| yaml_error(source, &e))?;
    Ok(node(source, spanned))
}

fn yaml_error(source: &Source<'_>, e: &serde_saphyr::Error) -> ConvertError {
    let at = e.location().map_or(0, |l| offset(source, &l));
    let message = e.to_string();
    let limit = match e {
        serde_saphyr::Error::Budget { breach, .. } => Some(match breach {
            BudgetBreach::Depth { .. } => ("nesting deeper than", MAX_DEPTH),
            BudgetBreach::Nodes { .. } => ("more YAML values than", MAX_NODES),
            BudgetBreach::Events { .. } => ("more YAML events than", 4 * MAX_NODES),
            _ => (
                "YAML aliases expanding to more events than",
                MAX_ANCHOR_EVENTS,
            ),
        }),
        // The parser's own stack guard, and alias replays that wrap their budget
        // breach in another error: limits all the same, not syntax.
        _ if message.contains("recursion limit") => Some(("nesting deeper than", MAX_DEPTH)),
        _ if message.contains("budget breached")
            || message.contains("alias") && message.contains("limit") =>
        {
            Some((
                "YAML aliases expanding to more events than",
                MAX_ANCHOR_EVENTS,
            ))
        }
        _ => None,
    };
    match limit {
        Some((what, limit)) => source.limit(at, what, limit),
        None => source.syntax(at, format!("not valid YAML: {}", first_line(&message))),
    }
}

/// The first line of a message (serde_saphyr may add context lines).
fn first_line(message: &str) -> &str {
    message.lines().next().unwrap_or(message)
}

/// A spanned YAML value as a [`Node`].
fn node(source: &Source<'_>, spanned: Spanned<Raw>) -> Node {
    let at = offset(source, &spanned.referenced);
    let value = match spanned.value {
        Raw::Null => Value::Null,
        Raw::Bool(b) => Value::Bool(b),
        Raw::Int(i) => Value::Int(i),
        Raw::Float(f) => Value::Float(f),
        Raw::Str(s) => Value::Str(s),
        Raw::Seq(items) => Value::Seq(items.into_iter().map(|i| node(source, i)).collect()),
        Raw::Map(entries) => Value::Map(Map::new(
            entries
                .into_iter()
                .map(|(k, v)| Entry {
                    at: offset(source, &k.referenced),
                    key: k.value.0,
                    value: node(source, v),
                })
                .collect(),
        )),
    };
    Node { at, value }
}

/// A YAML value as serde_saphyr gives it, every child with its location.
enum Raw {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Spanned<Raw>>),
    Map(Vec<(Spanned<Key>, Spanned<Raw>)>),
}

/// A mapping key: OpenAPI keys are strings, but YAML reads `200:` as a number.
struct Key(String);

impl<'de> Deserialize<'de> for Raw {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Raw, D::Error> {
        d.deserialize_any(RawVisitor)
    }
}

struct RawVisitor;

impl<'de> Visitor<'de> for RawVisitor {
    type Value = Raw;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a YAML value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Raw, E> {
        Ok(Raw::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Raw, E> {
        Ok(Raw::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Raw, E> {
        Ok(i64::try_from(v).map_or(Raw::Float(v as f64), Raw::Int))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Raw, E> {
        Ok(i64::try_from(v).map_or(Raw::Float(v as f64), Raw::Int))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Raw, E> {
        Ok(i64::try_from(v).map_or(Raw::Float(v as f64), Raw::Int))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Raw, E> {
        Ok(Raw::Float(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Raw, E> {
        Ok(Raw::Str(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Raw, E> {
        Ok(Raw::Str(v))
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Raw, E> {
        Ok(Raw::Str(String::from_utf8_lossy(v).into_owned()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Raw, E> {
        Ok(Raw::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Raw, E> {
        Ok(Raw::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Raw, D::Error> {
        Raw::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Raw, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Raw::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Raw, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key()? {
            entries.push((key, map.next_value()?));
        }
        Ok(Raw::Map(entries))
    }
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        // Any scalar key becomes its text; a collection as a key is not OpenAPI.
        match Raw::deserialize(d)? {
            Raw::Str(s) => Ok(Key(s)),
            Raw::Int(i) => Ok(Key(i.to_string())),
            Raw::Float(f) => Ok(Key(f.to_string())),
            Raw::Bool(b) => Ok(Key(b.to_string())),
            Raw::Null => Ok(Key("null".into())),
            Raw::Seq(_) | Raw::Map(_) => Err(de::Error::custom("a mapping key must be a scalar")),
        }
    }
}

//! `$ref` resolution inside the document: JSON Pointers (`#/components/schemas/Pet`,
//! with `~0`/`~1` and percent-escapes undone), refs to refs (at most [`MAX_DEPTH`]
//! links, a loop refused naming its links), and remote refs (another file, a URL)
//! reported, never fetched.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use super::node::{Node, Value};
use crate::locate::Lines as Locator;
use crate::{Source, MAX_DEPTH};

/// Why something of an operation cannot be converted: what, and where in the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    /// Byte offset of the construct at fault.
    pub(crate) at: usize,
    /// What is wrong, for a report line or an error.
    pub(crate) message: String,
    /// Whether it was a `$ref` to another document (reported, not fatal to a value
    /// that is optional).
    pub(crate) remote: bool,
}

impl Problem {
    /// A problem at `at`.
    pub(crate) fn new(at: usize, message: impl Into<String>) -> Problem {
        Problem {
            at,
            message: message.into(),
            remote: false,
        }
    }

    /// The message with the line and column it is about.
    pub(crate) fn located(&self, lines: &Locator<'_>) -> String {
        let (line, column) = lines.line_column(self.at);
        format!("{} (at {line}:{column})", self.message)
    }
}

/// The most schema steps one conversion takes over all its values: each value has
/// its own bound, and this one keeps thousands of operations of costly schemas from
/// adding up to minutes.
pub(crate) const MAX_WORK: usize = 20_000_000;

/// The document being converted.
pub(crate) struct Doc<'a> {
    /// Its root.
    pub(crate) root: &'a Node,
    /// Its text and name.
    pub(crate) source: Source<'a>,
    /// Each `$ref` text already followed one link, and where it led.
    cache: RefCell<HashMap<&'a str, Result<&'a Node, Problem>>>,
    /// Schema steps taken so far (see [`MAX_WORK`]).
    work: Cell<usize>,
}

/// A node reached through `$ref`s, with the last reference followed (the name
/// recursion is tracked by).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resolved<'a> {
    /// The node with no `$ref` of its own.
    pub(crate) node: &'a Node,
    /// The last `$ref` followed to reach it, if any.
    pub(crate) via: Option<&'a str>,
}

impl<'a> Doc<'a> {
    /// The document `root` read from `source`.
    pub(crate) fn new(root: &'a Node, source: Source<'a>) -> Doc<'a> {
        Doc {
            root,
            source,
            cache: RefCell::new(HashMap::new()),
            work: Cell::new(0),
        }
    }

    /// Counts one schema step; false past [`MAX_WORK`].
    pub(crate) fn work(&self) -> bool {
        self.work.set(self.work.get() + 1);
        self.work.get() <= MAX_WORK
    }

    /// Follows `node`'s `$ref` (and the target's, and so on) to a node without one.
    pub(crate) fn resolve(&self, node: &'a Node) -> Result<Resolved<'a>, Problem> {
        let mut current = node;
        let mut via = None;
        let mut chain: Vec<&'a str> = Vec::new();
        while let Some(reference) = current.get("$ref") {
            let Some(text) = reference.as_str() else {
                return Err(Problem::new(reference.at, "`$ref` is not a string"));
            };
            if chain.contains(&text) {
                chain.push(text);
                return Err(Problem::new(
                    reference.at,
                    format!("`$ref` cycle with no schema in it: {}", chain.join(" → ")),
                ));
            }
            if chain.len() >= MAX_DEPTH {
                return Err(Problem::new(
                    reference.at,
                    format!("a chain of more than {MAX_DEPTH} `$ref`s"),
                ));
            }
            chain.push(text);
            current = self.cached(text, reference.at)?;
            via = Some(text);
        }
        Ok(Resolved { node: current, via })
    }

    /// [`Doc::pointer`], remembered by `$ref` text.
    fn cached(&self, reference: &'a str, at: usize) -> Result<&'a Node, Problem> {
        if let Some(known) = self.cache.borrow().get(reference) {
            return known.clone().map_err(|p| Problem { at, ..p });
        }
        let found = self.pointer(reference, at);
        self.cache.borrow_mut().insert(reference, found.clone());
        found
    }

    /// The node a `$ref` text names.
    fn pointer(&self, reference: &str, at: usize) -> Result<&'a Node, Problem> {
        let Some(fragment) = reference.strip_prefix('#') else {
            return Err(Problem {
                at,
                message: format!(
                    "`$ref: {reference}` points into another document, which is not fetched"
                ),
                remote: true,
            });
        };
        let fragment = percent_decode(fragment);
        if !fragment.is_empty() && !fragment.starts_with('/') {
            return Err(Problem::new(
                at,
                format!("`$ref: {reference}` is not a JSON Pointer (`#/components/...`)"),
            ));
        }
        let mut node = self.root;
        for raw in fragment.split('/').skip(1) {
            let segment = raw.replace("~1", "/").replace("~0", "~");
            let next = match &node.value {
                Value::Map(_) => node.get(&segment),
                Value::Seq(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
                _ => None,
            };
            node = next.ok_or_else(|| {
                Problem::new(
                    at,
                    format!("`$ref: {reference}` names nothing in the document (no `{segment}`)"),
                )
            })?;
        }
        Ok(node)
    }
}

/// `%XX` escapes of a URI fragment undone (invalid ones kept as written).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                let value = hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0);
                out.push(value as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openapi::read::parse;

    fn doc_of(text: &str, f: impl FnOnce(&Doc<'_>)) {
        let source = Source {
            file: "t.yaml",
            text,
        };
        let root = parse(&source).unwrap();
        f(&Doc::new(&root, source));
    }

    #[test]
    fn pointers_unescape_and_chains_resolve() {
        let text = "a: {$ref: '#/b'}\nb: {$ref: '#/c~1d~0e/x%20y'}\nc/d~e:\n  x y: [1, {k: v}]\nz: {$ref: '#/c~1d~0e/x y/1'}\n";
        doc_of(text, |doc| {
            let r = doc.resolve(doc.root.get("a").unwrap()).unwrap();
            assert_eq!(r.via, Some("#/c~1d~0e/x%20y"));
            assert_eq!(r.node.items().len(), 2);
            let r = doc.resolve(doc.root.get("z").unwrap()).unwrap();
            assert_eq!(r.node.str_of("k"), Some("v"));
        });
    }

    #[test]
    fn cycles_missing_and_remote_refs_are_problems() {
        let text = "a: {$ref: '#/b'}\nb: {$ref: '#/a'}\nm: {$ref: '#/nope/x'}\nr: {$ref: 'other.yaml#/X'}\n";
        doc_of(text, |doc| {
            let e = doc.resolve(doc.root.get("a").unwrap()).unwrap_err();
            assert!(
                e.message.contains("cycle") && e.message.contains("#/b → #/a → #/b"),
                "{e:?}"
            );
            let e = doc.resolve(doc.root.get("m").unwrap()).unwrap_err();
            assert!(e.message.contains("no `nope`"), "{e:?}");
            assert_eq!(
                e.located(&Locator::new(doc.source.text)),
                format!("{} (at 3:11)", e.message)
            );
            let e = doc.resolve(doc.root.get("r").unwrap()).unwrap_err();
            assert!(e.remote && e.message.contains("not fetched"), "{e:?}");
        });
    }

    #[test]
    fn a_long_chain_stops_at_the_depth_limit() {
        let mut text = String::new();
        for i in 0..200 {
            text.push_str(&format!("s{i}: {{$ref: '#/s{}'}}\n", i + 1));
        }
        text.push_str("s200: {type: string}\n");
        doc_of(&text, |doc| {
            let e = doc.resolve(doc.root.get("s0").unwrap()).unwrap_err();
            assert!(e.message.contains("chain of more than 64"), "{e:?}");
            assert!(doc.resolve(doc.root.get("s150").unwrap()).is_ok());
        });
    }
}

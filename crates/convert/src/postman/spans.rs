//! Where things are in the collection's text. `serde_json` gives values without
//! positions, so this walks the (already validated) JSON text once and records the
//! byte offsets a report needs: every element of an `item` array, in document
//! pre-order (the order the converter visits items in), and every line of every
//! `event[].script.exec`, by its owner (an item's ordinal, or the collection).
//!
//! It runs only after `serde_json` accepted the text, so nesting is within serde's
//! recursion limit (128) and the walk's own recursion is bounded by it too.

use std::collections::HashMap;

/// Who an event belongs to: the collection itself, or the item of this pre-order
/// ordinal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Owner {
    /// The collection's own `event`.
    Collection,
    /// An item's (request or folder).
    Item(usize),
}

/// Byte offsets of items and script lines.
#[derive(Debug, Default)]
pub(super) struct Spans {
    /// The offset of each item, by pre-order ordinal.
    pub(super) items: Vec<usize>,
    /// The offset of `exec` line `line` of event `event` of `owner` (the opening
    /// quote of its JSON string).
    pub(super) exec: HashMap<(Owner, usize, usize), usize>,
}

/// What the value being walked is, as far as positions go.
#[derive(Clone, Copy)]
enum At {
    Root,
    Items,
    Item(usize),
    Events(Owner),
    Event(Owner, usize),
    Script(Owner, usize),
    Exec(Owner, usize),
    Other,
}

/// Records the offsets in `text` (JSON that `serde_json` accepted).
pub(super) fn locate(text: &str) -> Spans {
    let mut walker = Walker {
        bytes: text.as_bytes(),
        at: 0,
        spans: Spans::default(),
    };
    walker.ws();
    walker.value(At::Root, 0);
    walker.spans
}

struct Walker<'t> {
    bytes: &'t [u8],
    at: usize,
    spans: Spans,
}

/// Deeper than `serde_json` accepts: the walk stops (it cannot happen on text serde
/// accepted; a guard all the same).
const DEPTH: usize = 200;

impl Walker<'_> {
    fn ws(&mut self) {
        while self
            .bytes
            .get(self.at)
            .is_some_and(|b| b.is_ascii_whitespace())
        {
            self.at += 1;
        }
    }

    fn value(&mut self, at: At, depth: usize) {
        if depth > DEPTH {
            self.at = self.bytes.len();
            return;
        }
        match self.bytes.get(self.at) {
            Some(b'{') => self.object(at, depth),
            Some(b'[') => self.array(at, depth),
            Some(b'"') => {
                // `exec` as one string: its lines start where it does.
                if let At::Exec(o, e) = at {
                    self.spans.exec.insert((o, e, 0), self.at);
                }
                self.string();
            }
            Some(_) => {
                while self
                    .bytes
                    .get(self.at)
                    .is_some_and(|b| !matches!(b, b',' | b']' | b'}') && !b.is_ascii_whitespace())
                {
                    self.at += 1;
                }
            }
            None => {}
        }
    }

    /// Skips a string; returns its raw content (escapes as written).
    fn string(&mut self) -> &[u8] {
        let start = self.at + 1;
        self.at += 1;
        while let Some(&b) = self.bytes.get(self.at) {
            match b {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    return self.bytes.get(start..self.at - 1).unwrap_or_default();
                }
                _ => self.at += 1,
            }
        }
        self.at = self.bytes.len();
        &[]
    }

    fn object(&mut self, at: At, depth: usize) {
        self.at += 1;
        loop {
            self.ws();
            match self.bytes.get(self.at) {
                Some(b'"') => {}
                Some(b'}') => {
                    self.at += 1;
                    return;
                }
                Some(b',') => {
                    self.at += 1;
                    continue;
                }
                _ => {
                    self.at = self.bytes.len();
                    return;
                }
            }
            let key = self.string().to_vec();
            self.ws();
            if self.bytes.get(self.at) == Some(&b':') {
                self.at += 1;
            }
            self.ws();
            let inner = match (at, key.as_slice()) {
                (At::Root | At::Item(_), b"item") => At::Items,
                (At::Root, b"event") => At::Events(Owner::Collection),
                (At::Item(o), b"event") => At::Events(Owner::Item(o)),
                (At::Event(o, e), b"script") => At::Script(o, e),
                (At::Script(o, e), b"exec") => At::Exec(o, e),
                _ => At::Other,
            };
            self.value(inner, depth + 1);
        }
    }

    fn array(&mut self, at: At, depth: usize) {
        self.at += 1;
        let mut index = 0;
        loop {
            self.ws();
            match self.bytes.get(self.at) {
                Some(b']') => {
                    self.at += 1;
                    return;
                }
                Some(b',') => {
                    self.at += 1;
                    index += 1;
                    continue;
                }
                None => return,
                Some(_) => {}
            }
            let inner = match at {
                At::Items => {
                    let ordinal = self.spans.items.len();
                    self.spans.items.push(self.at);
                    At::Item(ordinal)
                }
                At::Events(o) => At::Event(o, index),
                At::Exec(o, e) => {
                    self.spans.exec.insert((o, e, index), self.at);
                    At::Other
                }
                _ => At::Other,
            };
            self.value(inner, depth + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_and_script_lines_are_found_in_pre_order() {
        let text = r#"{"info": {"name": "x"}, "item": [
  {"name": "folder", "item": [ {"name": "a"} ]},
  {"name": "b", "event": [{"listen": "test", "script": {"exec": ["l0", "l\"1"]}}]}
], "event": [{"script": {"exec": "one"}}]}"#;
        let spans = locate(text);
        let at = |o: usize| &text[o..];
        assert_eq!(spans.items.len(), 3);
        assert!(
            at(spans.items[0]).starts_with(r#"{"name": "folder""#),
            "{}",
            at(spans.items[0])
        );
        assert!(at(spans.items[1]).starts_with(r#"{"name": "a"}"#));
        assert!(at(spans.items[2]).starts_with(r#"{"name": "b""#));
        let l1 = spans.exec[&(Owner::Item(2), 0, 1)];
        assert!(text[l1..].starts_with(r#""l\"1""#));
        let one = spans.exec[&(Owner::Collection, 0, 0)];
        assert!(text[one..].starts_with(r#""one""#));
    }
}

//! A JSON document as a located [`Node`] tree: serde_json checks the text and names
//! the line and column of an error; a small scanner then builds the tree from text
//! known to be valid, recording where each value and key starts, with the same
//! bounds as YAML (nesting at [`MAX_DEPTH`], at most [`MAX_NODES`] values).

use serde::de::IgnoredAny;

use super::node::{Entry, Map, Node, Value, MAX_NODES};
use crate::{ConvertError, Source, MAX_DEPTH};

/// Reads a JSON document.
pub(crate) fn read(source: &Source<'_>) -> Result<Node, ConvertError> {
    // serde_json skips an ignored value without recursing, so a 100,000-deep document
    // costs no stack here; the scanner stops it at the depth limit.
    if let Err(e) = serde_json::from_str::<IgnoredAny>(source.text) {
        let (line, column) = (e.line().max(1), e.column().max(1));
        let message = e.to_string();
        let message = message
            .rsplit_once(" at line ")
            .map_or(message.as_str(), |(m, _)| m);
        let at = line_start(source.text, line) + column.saturating_sub(1);
        if message.starts_with("recursion limit exceeded") {
            return Err(source.limit(at, "nesting deeper than", MAX_DEPTH));
        }
        return Err(source.syntax(at, format!("not valid JSON: {message}")));
    }
    let mut scan = Scan {
        source,
        bytes: source.text.as_bytes(),
        pos: 0,
        nodes: 0,
    };
    scan.value(0)
}

/// The byte offset where 1-based `line` starts.
fn line_start(text: &str, line: usize) -> usize {
    text.split_inclusive('\n')
        .take(line - 1)
        .map(str::len)
        .sum()
}

/// Builds the tree of a JSON text serde_json has accepted.
struct Scan<'a> {
    source: &'a Source<'a>,
    bytes: &'a [u8],
    pos: usize,
    nodes: usize,
}

impl Scan<'_> {
    fn peek(&self) -> u8 {
        self.bytes.get(self.pos).copied().unwrap_or(0)
    }

    fn ws(&mut self) {
        while matches!(self.peek(), b' ' | b'\t' | b'\r' | b'\n') {
            self.pos += 1;
        }
        // A byte-order mark before the document.
        if self.pos == 0 && self.bytes.starts_with("\u{feff}".as_bytes()) {
            self.pos = 3;
            self.ws();
        }
    }

    /// Anything the scanner does not expect: serde_json accepted the text, so only a
    /// disagreement between the two readers could bring it here.
    fn odd(&self) -> ConvertError {
        self.source.syntax(self.pos, "not valid JSON")
    }

    fn value(&mut self, depth: usize) -> Result<Node, ConvertError> {
        self.ws();
        let at = self.pos;
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(self.source.limit(at, "more JSON values than", MAX_NODES));
        }
        let value = match self.peek() {
            b'{' | b'[' if depth >= MAX_DEPTH => {
                return Err(self.source.limit(at, "nesting deeper than", MAX_DEPTH));
            }
            b'{' => {
                self.pos += 1;
                let mut entries = Vec::new();
                loop {
                    self.ws();
                    match self.peek() {
                        b'}' => {
                            self.pos += 1;
                            break;
                        }
                        b',' => self.pos += 1,
                        b'"' => {
                            let key_at = self.pos;
                            let key = self.string()?;
                            self.ws();
                            if self.peek() != b':' {
                                return Err(self.odd());
                            }
                            self.pos += 1;
                            let value = self.value(depth + 1)?;
                            entries.push(Entry {
                                key,
                                at: key_at,
                                value,
                            });
                        }
                        _ => return Err(self.odd()),
                    }
                }
                Value::Map(Map::new(entries))
            }
            b'[' => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    self.ws();
                    match self.peek() {
                        b']' => {
                            self.pos += 1;
                            break;
                        }
                        b',' => self.pos += 1,
                        0 => return Err(self.odd()),
                        _ => items.push(self.value(depth + 1)?),
                    }
                }
                Value::Seq(items)
            }
            b'"' => Value::Str(self.string()?),
            b't' => self.word("true", Value::Bool(true))?,
            b'f' => self.word("false", Value::Bool(false))?,
            b'n' => self.word("null", Value::Null)?,
            _ => self.number()?,
        };
        Ok(Node { at, value })
    }

    fn word(&mut self, word: &str, value: Value) -> Result<Value, ConvertError> {
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        if !rest.starts_with(word.as_bytes()) {
            return Err(self.odd());
        }
        self.pos += word.len();
        Ok(value)
    }

    fn number(&mut self) -> Result<Value, ConvertError> {
        let start = self.pos;
        while matches!(self.peek(), b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
            self.pos += 1;
        }
        let text = self.source.text.get(start..self.pos).unwrap_or("");
        if let Ok(i) = text.parse::<i64>() {
            return Ok(Value::Int(i));
        }
        text.parse::<f64>()
            .map(Value::Float)
            .map_err(|_| self.odd())
    }

    /// A string token, decoded by serde_json.
    fn string(&mut self) -> Result<String, ConvertError> {
        let start = self.pos;
        self.pos += 1;
        loop {
            match self.peek() {
                b'\\' => self.pos += 2,
                b'"' => {
                    self.pos += 1;
                    break;
                }
                0 if self.pos >= self.bytes.len() => return Err(self.odd()),
                _ => self.pos += 1,
            }
        }
        let token = self
            .source
            .text
            .get(start..self.pos)
            .ok_or_else(|| self.odd())?;
        serde_json::from_str(token).map_err(|_| self.odd())
    }
}

//! JSON (an array of objects) and JSON Lines (one object per line) files, parsed by
//! serde_json straight into the table: each object's values are visited one by one and
//! appended to the text buffer, so no `serde_json::Value` is built for a row (only for
//! a value that is itself an array or an object, to write it back as compact JSON).

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, Deserialize, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use super::{check_column, end_offset, io_problem, DataError, DataLimits, Parts, Problem};

/// Bytes read from the file at a time.
const READ_CHUNK: usize = 256 * 1024;

/// Reads a JSON file (`lines`: JSON Lines) from `input`.
pub(super) fn load(
    file: &Path,
    input: impl Read,
    lines: bool,
    limits: &DataLimits,
) -> Result<Parts, DataError> {
    let mut rows = Rows {
        limits,
        columns: Vec::new(),
        index: HashMap::new(),
        text: String::new(),
        offsets: vec![0],
        widths: Vec::new(),
        rows: 0,
        slots: Vec::new(),
        scratch: String::new(),
        failure: None,
    };
    let mut reader = BufReader::with_capacity(
        READ_CHUNK,
        Counted {
            inner: input,
            bytes: 0,
        },
    );
    let fail = |line, problem| DataError::new(file, line, problem);
    let head = reader
        .fill_buf()
        .map_err(|e| fail(None, io_problem(e, limits)))?;
    if head.starts_with(b"\xef\xbb\xbf") {
        reader.consume(3);
    }
    if lines {
        let mut line = Vec::new();
        let mut number = 0;
        loop {
            line.clear();
            let n = reader
                .read_until(b'\n', &mut line)
                .map_err(|e| fail(None, io_problem(e, limits)))?;
            if n == 0 {
                break;
            }
            number += 1;
            let object = line.trim_ascii();
            if object.is_empty() {
                continue;
            }
            let mut de = serde_json::Deserializer::from_slice(object);
            let read = Row(&mut rows).deserialize(&mut de).and_then(|()| de.end());
            read.map_err(|e| json_error(file, e, &mut rows, Some(number)))?;
        }
        if rows.rows == 0 {
            return Err(fail(None, Problem::Empty));
        }
    } else {
        if reader.get_ref().bytes == 0 || reader.fill_buf().is_ok_and(<[u8]>::is_empty) {
            return Err(fail(None, Problem::Empty));
        }
        let mut de = serde_json::Deserializer::from_reader(&mut reader);
        let read = Array(&mut rows)
            .deserialize(&mut de)
            .and_then(|()| de.end());
        read.map_err(|e| json_error(file, e, &mut rows, None))?;
    }
    let bytes = reader.get_ref().bytes;
    rows.finish(bytes).map_err(|e| fail(None, e))
}

/// A serde_json error as a [`DataError`]: the [`Problem`] a visitor stashed, or the
/// parser's own, at its line (JSON Lines: `line`, the line of the file) and column.
fn json_error(file: &Path, e: serde_json::Error, rows: &mut Rows, line: Option<u64>) -> DataError {
    let (at, column) = (e.line() as u64, e.column() as u64);
    let problem = if let Some(stashed) = rows.failure.take() {
        stashed
    } else if e.is_io() {
        return DataError::new(file, None, io_problem(io::Error::from(e), rows.limits));
    } else {
        // serde_json's message ends with the position, which the error gives apart.
        let message = e.to_string();
        let message = match message.rfind(" at line ") {
            Some(i) if at > 0 => message[..i].to_string(),
            _ => message,
        };
        Problem::Json(message)
    };
    DataError {
        file: file.to_path_buf(),
        line: line.or(Some(at)).filter(|&l| l > 0),
        column: Some(column).filter(|&c| c > 0),
        problem,
    }
}

/// A reader that counts the bytes read through it.
struct Counted<R> {
    inner: R,
    bytes: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
}

/// The table being built, object after object.
struct Rows<'l> {
    limits: &'l DataLimits,
    /// Every key seen, in the order first seen.
    columns: Vec<String>,
    index: HashMap<String, usize>,
    text: String,
    offsets: Vec<u32>,
    /// Runs of rows of one width, `(first row, width)`: a row has a cell for each
    /// column known when it ended (the later ones are filled in by `finish`). Widths
    /// only grow, so there are at most as many runs as columns.
    widths: Vec<(usize, usize)>,
    rows: usize,
    /// The object being read: where each column's value is in `scratch`.
    slots: Vec<Option<(usize, usize)>>,
    scratch: String,
    /// The problem a visitor found, for [`json_error`] (serde carries only a message).
    failure: Option<Problem>,
}

impl Rows<'_> {
    /// Stashes `problem` and returns the serde error that stops the parser.
    fn fail<E: de::Error>(&mut self, problem: Problem) -> E {
        self.failure = Some(problem);
        E::custom("see the stashed problem")
    }

    /// The column of key `key`, added if new.
    fn column(&mut self, key: &str) -> Result<usize, Problem> {
        if let Some(&i) = self.index.get(key) {
            return Ok(i);
        }
        let i = self.columns.len();
        if i >= self.limits.max_columns {
            return Err(Problem::TooManyColumns {
                limit: self.limits.max_columns,
            });
        }
        check_column(&self.columns, i, key)?;
        self.columns.push(key.to_string());
        self.index.insert(key.to_string(), i);
        self.slots.push(None);
        Ok(i)
    }

    /// Records that column `col`'s value is `scratch[start..]` (a key given twice in
    /// one object: the last value).
    fn value(&mut self, col: usize, start: usize) -> Result<(), Problem> {
        let end = self.scratch.len();
        if end - start > self.limits.max_cell_bytes {
            return Err(self.too_long(col));
        }
        self.slots[col] = Some((start, end));
        Ok(())
    }

    fn too_long(&self, col: usize) -> Problem {
        Problem::CellTooLong {
            column: self.columns[col].clone(),
            limit: self.limits.max_cell_bytes,
        }
    }

    /// Ends the object being read: its values, in column order, become a row.
    fn end_row(&mut self) -> Result<(), Problem> {
        let width = self.columns.len();
        for slot in &mut self.slots {
            if let Some((start, end)) = slot.take() {
                self.text.push_str(&self.scratch[start..end]);
            }
            self.offsets.push(end_offset(self.text.len())?);
        }
        self.scratch.clear();
        if self.widths.last().map(|&(_, w)| w) != Some(width) {
            self.widths.push((self.rows, width));
        }
        self.rows += 1;
        Ok(())
    }

    /// The finished table of a file of `bytes` bytes: rows that ended before a column
    /// was first seen get an empty cell in it.
    fn finish(mut self, bytes: u64) -> Result<Parts, Problem> {
        let (rows, width) = (self.rows, self.columns.len());
        if rows == 0 {
            return Err(Problem::NoRows);
        }
        if width == 0 {
            return Err(Problem::NoColumns);
        }
        if self.widths.len() > 1 {
            let cells = rows.saturating_mul(width);
            if cells as u64 > bytes.max(1) {
                return Err(Problem::TooManyCells {
                    rows,
                    columns: width,
                });
            }
            let mut offsets = Vec::with_capacity(cells + 1);
            offsets.push(0);
            let mut at = 1;
            for (k, &(first, w)) in self.widths.iter().enumerate() {
                let next = self.widths.get(k + 1).map_or(rows, |&(f, _)| f);
                for _ in first..next {
                    offsets.extend_from_slice(&self.offsets[at..at + w]);
                    let end = offsets[offsets.len() - 1];
                    offsets.resize(offsets.len() + width - w, end);
                    at += w;
                }
            }
            self.offsets = offsets;
        }
        Ok(Parts {
            columns: self.columns,
            text: self.text,
            offsets: self.offsets,
        })
    }
}

/// The file's top-level array.
struct Array<'a, 'l>(&'a mut Rows<'l>);

impl<'de> DeserializeSeed<'de> for Array<'_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Array<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON array of objects")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Row(&mut *self.0))?.is_some() {}
        Ok(())
    }
}

/// One object: one row.
struct Row<'a, 'l>(&'a mut Rows<'l>);

impl<'de> DeserializeSeed<'de> for Row<'_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Row<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object (one row)")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let rows = self.0;
        while let Some(col) = map.next_key_seed(Key(&mut *rows))? {
            let start = rows.scratch.len();
            map.next_value_seed(Cell(&mut *rows, col))?;
            if let Err(problem) = rows.value(col, start) {
                return Err(rows.fail(problem));
            }
        }
        rows.end_row().map_err(|problem| rows.fail(problem))
    }
}

/// A key: the index of its column.
struct Key<'a, 'l>(&'a mut Rows<'l>);

impl<'de> DeserializeSeed<'de> for Key<'_, '_> {
    type Value = usize;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_, '_> {
    type Value = usize;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: de::Error>(self, key: &str) -> Result<usize, E> {
        self.0.column(key).map_err(|problem| self.0.fail(problem))
    }
}

/// A value of column `.1`, appended to the row's scratch text: a string as it is,
/// anything else as its compact JSON text (`null` too).
struct Cell<'a, 'l>(&'a mut Rows<'l>, usize);

impl Cell<'_, '_> {
    fn write(self, value: impl fmt::Display) {
        // Writing to a `String` cannot fail.
        let _ = write!(self.0.scratch, "{value}");
    }
}

impl<'de> DeserializeSeed<'de> for Cell<'_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Cell<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        if v.len() > self.0.limits.max_cell_bytes {
            // Refused before it is copied.
            let problem = self.0.too_long(self.1);
            return Err(self.0.fail(problem));
        }
        self.0.scratch.push_str(v);
        Ok(())
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.write(v);
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.write(v);
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.write(v);
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        match serde_json::Number::from_f64(v) {
            Some(n) => self.write(n),
            None => self.write("null"),
        }
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.write("null");
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        let value = serde_json::Value::deserialize(SeqAccessDeserializer::new(seq))?;
        self.write(value);
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        let value = serde_json::Value::deserialize(MapAccessDeserializer::new(map))?;
        self.write(value);
        Ok(())
    }
}

//! CSV files, read with [`csv_core`] (the parser of the `csv` crate, without its
//! record buffer): records are parsed straight into the table's text buffer, so a
//! field is never held twice and an over-long one is refused as soon as it passes the
//! limit, not after the whole record has been buffered.

use std::io::Read;
use std::path::Path;

use csv_core::{ReadRecordResult, Reader};

use super::{check_column, end_offset, io_problem, DataError, DataLimits, Parts, Problem};

/// Bytes read from the file at a time.
const READ_CHUNK: usize = 256 * 1024;
/// Bytes the text buffer's initialised part grows by when the parser fills it.
const GROW: usize = 1 << 20;

/// Reads a CSV file whose size is `size_hint` bytes from `input`.
pub(super) fn load(
    file: &Path,
    mut input: impl Read,
    size_hint: usize,
    limits: &DataLimits,
) -> Result<Parts, DataError> {
    let mut p = Parser {
        core: Reader::new(),
        // Grown as the parser fills it (a large buffer's reallocation moves pages, not
        // bytes), so what it holds follows what was read, not what the file claims.
        text: Vec::new(),
        used: 0,
        ends: vec![0; limits.max_columns + 1],
        limits,
    };
    let mut buf = vec![0; READ_CHUNK];
    let (mut lo, mut hi) = (0, 0);
    // 0: reading the file; 1: at its end, a line break to feed the parser once; 2: done.
    let mut eof = 0;
    let mut columns: Option<Vec<String>> = None;
    let mut offsets = vec![0u32];
    let fail = |line, problem| DataError::new(file, line, problem);
    loop {
        // One record.
        let start = p.used;
        let mut nends = 0;
        let ended = loop {
            if lo == hi && eof == 0 {
                lo = 0;
                hi = input
                    .read(&mut buf)
                    .map_err(|e| fail(None, io_problem(e, limits)))?;
                if hi == 0 {
                    eof = 1;
                }
            }
            // At the end of the file the parser is fed one line break: it ends a
            // record left open, except inside a quoted field, which it joins (a quote
            // never closed); then nothing, to end the input.
            let chunk: &[u8] = match eof {
                0 => &buf[lo..hi],
                1 => b"\n",
                _ => b"",
            };
            if p.used == p.text.len() {
                let grow = GROW.min(size_hint.saturating_sub(p.used)).max(READ_CHUNK);
                p.text.resize(p.used + grow, 0);
            }
            let (res, nin, nout, nend) =
                p.core
                    .read_record(chunk, &mut p.text[p.used..], &mut p.ends[nends..]);
            let last = chunk.get(nin.wrapping_sub(1)).copied();
            match eof {
                0 => lo += nin,
                _ if nin > 0 => eof = 2,
                _ => {}
            }
            p.used += nout;
            nends += nend;
            match res {
                ReadRecordResult::InputEmpty if eof == 2 && p.used > start => {
                    return Err(fail(Some(p.line(start, false)), Problem::UnclosedQuote));
                }
                ReadRecordResult::InputEmpty => {}
                ReadRecordResult::OutputFull => {
                    // The field being read is longer than the limit already?
                    let field_start = if nends == 0 { 0 } else { p.ends[nends - 1] };
                    if p.used - start - field_start > limits.max_cell_bytes {
                        let column = p.column_name(columns.as_deref(), nends);
                        let problem = Problem::CellTooLong {
                            column,
                            limit: limits.max_cell_bytes,
                        };
                        return Err(fail(Some(p.line(start, false)), problem));
                    }
                }
                ReadRecordResult::OutputEndsFull => {
                    let problem = Problem::TooManyColumns {
                        limit: limits.max_columns,
                    };
                    return Err(fail(Some(p.line(start, false)), problem));
                }
                ReadRecordResult::Record => break Some(last == Some(b'\n')),
                ReadRecordResult::End => break None,
            }
        };
        let Some(lf) = ended else { break };
        let line = || Some(p.line(start, lf));
        match &columns {
            None => {
                if nends > limits.max_columns {
                    let problem = Problem::TooManyColumns {
                        limit: limits.max_columns,
                    };
                    return Err(fail(line(), problem));
                }
                let names = p.header(start, nends).map_err(|e| fail(line(), e))?;
                columns = Some(names);
                p.used = start;
            }
            Some(names) => {
                if nends != names.len() {
                    let problem = Problem::FieldCount {
                        expected: names.len(),
                        found: nends,
                    };
                    return Err(fail(line(), problem));
                }
                p.row(start, names, &mut offsets)
                    .map_err(|e| fail(line(), e))?;
            }
        }
    }
    let columns = columns.ok_or_else(|| fail(None, Problem::Empty))?;
    if offsets.len() == 1 {
        return Err(fail(None, Problem::NoRows));
    }
    p.text.truncate(p.used);
    // Every cell was checked to be UTF-8, so the whole is; checked again, not assumed.
    let text = String::from_utf8(p.text).map_err(|_| {
        fail(
            None,
            Problem::InvalidUtf8 {
                column: String::new(),
            },
        )
    })?;
    Ok(Parts {
        columns,
        text,
        offsets,
    })
}

/// The parser and the buffers it writes.
struct Parser<'a> {
    core: Reader,
    /// The cells' text; `text[..used]` is written, the rest zeroes ready for the parser.
    text: Vec<u8>,
    used: usize,
    /// The record's field ends, relative to its start (room for one field beyond the
    /// limit of columns, so a record with too many is known).
    ends: Vec<usize>,
    limits: &'a DataLimits,
}

impl Parser<'_> {
    /// The line the record starting at `start` in the text began on: the parser's line
    /// less the line breaks inside the record's fields and, if `lf`, the one that ended
    /// it (a CRLF record ends at its CR; its LF counts as the next record's).
    fn line(&self, start: usize, lf: bool) -> u64 {
        let inside = self.text[start..self.used]
            .iter()
            .filter(|&&b| b == b'\n')
            .count() as u64;
        self.core.line() - inside - u64::from(lf)
    }

    /// The name of column `index` for messages.
    fn column_name(&self, columns: Option<&[String]>, index: usize) -> String {
        match columns.and_then(|c| c.get(index)) {
            Some(name) => name.clone(),
            None if columns.is_none() => format!("{} of the header", index + 1),
            None => format!("{}", index + 1),
        }
    }

    /// The fields of the record at `start`, as bytes.
    fn fields(&self, start: usize, n: usize) -> impl Iterator<Item = &[u8]> {
        let rec = &self.text[start..self.used];
        (0..n).map(move |i| {
            let from = if i == 0 { 0 } else { self.ends[i - 1] };
            &rec[from..self.ends[i]]
        })
    }

    /// The header record's column names.
    fn header(&self, start: usize, n: usize) -> Result<Vec<String>, Problem> {
        let mut names: Vec<String> = Vec::with_capacity(n);
        for (i, field) in self.fields(start, n).enumerate() {
            if field.len() > self.limits.max_cell_bytes {
                return Err(Problem::CellTooLong {
                    column: self.column_name(None, i),
                    limit: self.limits.max_cell_bytes,
                });
            }
            let name = std::str::from_utf8(field).map_err(|_| Problem::InvalidUtf8 {
                column: self.column_name(None, i),
            })?;
            check_column(&names, i, name)?;
            names.push(name.to_string());
        }
        Ok(names)
    }

    /// Checks a row's cells (length, UTF-8) and appends their ends to `offsets`.
    fn row(&self, start: usize, names: &[String], offsets: &mut Vec<u32>) -> Result<(), Problem> {
        let mut from = start;
        for (i, &end) in self.ends[..names.len()].iter().enumerate() {
            let to = start + end;
            let cell = &self.text[from..to];
            if cell.len() > self.limits.max_cell_bytes {
                return Err(Problem::CellTooLong {
                    column: names[i].clone(),
                    limit: self.limits.max_cell_bytes,
                });
            }
            // Each field on its own: bytes that are UTF-8 only once joined to the next
            // field's are refused too.
            if std::str::from_utf8(cell).is_err() {
                return Err(Problem::InvalidUtf8 {
                    column: names[i].clone(),
                });
            }
            offsets.push(end_offset(to)?);
            from = to;
        }
        Ok(())
    }
}

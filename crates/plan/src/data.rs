//! Per-user data files (a scenario's `data:` block): tables of test data such as
//! accounts or search terms, read once at load time and shared read-only by every
//! engine thread, as k6's `SharedArray`, Gatling's feeders and JMeter's CSV Data Set.
//!
//! A [`DataSet`] is one file: its column names and its rows, stored compactly (all the
//! cells' text in one buffer and one `u32` offset per cell, no allocation per row or
//! cell), so a 1,000,000-row CSV costs about 1.2 times its size in memory. The format
//! comes from the file's extension:
//!
//! - `.csv`: the first record is the header (the column names); quoted fields (`""`
//!   for a quote), embedded line breaks, CRLF and a UTF-8 byte order mark are read as
//!   RFC 4180 has them, by the `csv` crate's own parser ([`csv_core`]); blank lines
//!   are skipped. A quote never closed is an error, not the rest of the file.
//! - `.json`: an array of objects, one row each.
//! - `.jsonl`, `.ndjson`: one object per line (blank lines skipped).
//!
//! For JSON the columns are the union of the objects' keys in the order they are first
//! seen; a key an object lacks reads as empty text, and a value that is not a string
//! (number, boolean, `null`, array, object) as its compact JSON text.
//!
//! Every file keeps within [`DataLimits`]; a file that does not is refused with a
//! [`DataError`] naming the file, the line and what is wrong. How rows are handed out
//! (`pick: unique | sequential | random`) is [`DataSource`]'s, the per-run set of them
//! [`DataPlan`]'s.

mod csv;
mod error;
mod json;
mod pick;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_hostile;
#[cfg(test)]
mod tests_pick;

pub use error::{DataError, Problem};
pub use pick::{BadPick, DataPlan, DataSource, Pick};

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::Slice;

/// The bounds a data file must keep within, checked as it is read, so a hostile or
/// mistaken file (a binary, a quote never closed, a header of a million columns) is
/// refused with a clear error instead of exhausting memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataLimits {
    /// Largest file read, in bytes.
    pub max_file_bytes: u64,
    /// Most columns (CSV header fields, distinct JSON keys).
    pub max_columns: usize,
    /// Longest value of one cell, in bytes.
    pub max_cell_bytes: usize,
}

impl DataLimits {
    /// 1 GiB files, 1,024 columns, 1 MiB cells.
    pub const DEFAULT: DataLimits = DataLimits {
        max_file_bytes: 1 << 30,
        max_columns: 1024,
        max_cell_bytes: 1 << 20,
    };
}

impl Default for DataLimits {
    fn default() -> Self {
        DataLimits::DEFAULT
    }
}

/// The formats a data file can be in, chosen by its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `.csv`: a header row, then one row per record.
    Csv,
    /// `.json`: an array of objects.
    Json,
    /// `.jsonl` or `.ndjson`: one object per line.
    JsonLines,
}

impl Format {
    /// The format of `path` by its extension (any case), or `None` for another one.
    pub fn of(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "csv" => Some(Format::Csv),
            "json" => Some(Format::Json),
            "jsonl" | "ndjson" => Some(Format::JsonLines),
            _ => None,
        }
    }
}

/// What a loader hands back: the columns and the cells, row after row.
struct Parts {
    /// Column names, distinct and not empty.
    columns: Vec<String>,
    /// Every cell's text, one after the other in row-major order.
    text: String,
    /// `offsets[i]..offsets[i + 1]` is cell `i`'s text (row `i / columns`); starts at 0.
    offsets: Vec<u32>,
}

/// One loaded file, shared by every [`DataSet`] that views it.
struct Table {
    name: String,
    file: PathBuf,
    columns: Vec<String>,
    text: String,
    offsets: Vec<u32>,
}

/// A table of data: a name, column names and rows of text cells. Cloning one is cheap
/// (the cells are behind an [`Arc`], shared read-only by every engine thread), and a
/// [`DataSet::slice`] is a view of some of the rows of the same shared cells.
#[derive(Clone)]
pub struct DataSet {
    table: Arc<Table>,
    /// The table's row this set's row 0 is.
    first: usize,
    /// Rows in this set.
    len: usize,
}

impl fmt::Debug for DataSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DataSet")
            .field("name", &self.table.name)
            .field("file", &self.table.file)
            .field("columns", &self.table.columns)
            .field("rows", &(self.first..self.first + self.len))
            .finish()
    }
}

impl DataSet {
    /// Reads the data set `name` from `path`, in the format of its extension
    /// ([`Format::of`]), within `limits`. Refused, with the file and the line named:
    /// an unknown extension, a file larger than the limit, an empty file, a file with
    /// no rows, too many columns, a cell too long, a CSV row whose number of fields
    /// differs from the header's, duplicate or empty column names, text that is not
    /// UTF-8, a quote never closed, JSON that is not an array of objects (one object
    /// per line for JSON Lines).
    pub fn load(name: &str, path: &Path, limits: &DataLimits) -> Result<DataSet, DataError> {
        let fail = |problem| DataError::new(path, None, problem);
        let format = Format::of(path).ok_or_else(|| fail(Problem::UnknownFormat))?;
        let file = File::open(path).map_err(|e| fail(Problem::Io(e)))?;
        let size = file.metadata().map_err(|e| fail(Problem::Io(e)))?.len();
        if size > limits.max_file_bytes {
            return Err(fail(Problem::TooLarge {
                limit: limits.max_file_bytes,
            }));
        }
        // The size is only a hint (a pipe says 0, a file may grow): the reader enforces
        // the limit on what it actually reads.
        let input = Limited {
            inner: file,
            left: limits.max_file_bytes,
        };
        let hint = usize::try_from(size).unwrap_or(usize::MAX);
        let parts = match format {
            Format::Csv => csv::load(path, input, hint, limits)?,
            Format::Json => json::load(path, input, false, limits)?,
            Format::JsonLines => json::load(path, input, true, limits)?,
        };
        Ok(DataSet::from_parts(name, path, parts))
    }

    /// A data set built in code from its columns and rows (for tests, and for data that
    /// does not come from a file). Panics if a row's width differs from the columns'
    /// or if the cells' text passes 4 GiB.
    pub fn from_rows<R, C, S>(name: &str, columns: &[&str], rows: R) -> DataSet
    where
        R: IntoIterator<Item = C>,
        C: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut text = String::new();
        let mut offsets = vec![0];
        for row in rows {
            let before = offsets.len();
            for cell in row {
                text.push_str(cell.as_ref());
                offsets.push(u32::try_from(text.len()).expect("cells within 4 GiB"));
            }
            assert_eq!(offsets.len() - before, columns.len(), "row width");
        }
        let columns = columns.iter().map(|c| c.to_string()).collect();
        DataSet::from_parts(
            name,
            Path::new(""),
            Parts {
                columns,
                text,
                offsets,
            },
        )
    }

    fn from_parts(name: &str, file: &Path, mut parts: Parts) -> DataSet {
        parts.text.shrink_to_fit();
        parts.offsets.shrink_to_fit();
        let cells = parts.offsets.len() - 1;
        let rows = cells.checked_div(parts.columns.len()).unwrap_or(0);
        let table = Table {
            name: name.to_string(),
            file: file.to_path_buf(),
            columns: parts.columns,
            text: parts.text,
            offsets: parts.offsets,
        };
        DataSet {
            table: Arc::new(table),
            first: 0,
            len: rows,
        }
    }

    /// The data set's name (its key under `data:`).
    pub fn name(&self) -> &str {
        &self.table.name
    }

    /// The file it was read from (empty for [`DataSet::from_rows`]).
    pub fn file(&self) -> &Path {
        &self.table.file
    }

    /// Its number of rows (of this view, for a slice).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no rows (only a slice can: a loaded file has at least one).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The column names, in order.
    pub fn columns(&self) -> &[String] {
        &self.table.columns
    }

    /// The index of column `name`, if the data set has it.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.table.columns.iter().position(|c| c == name)
    }

    /// The text of row `row`'s cell in column `col`. Panics if `row >= len()` or
    /// `col >= columns().len()`.
    pub fn cell(&self, row: usize, col: usize) -> &str {
        assert!(row < self.len, "row {row} of {} rows", self.len);
        let width = self.table.columns.len();
        assert!(col < width, "column {col} of {width} columns");
        let i = (self.first + row) * width + col;
        let (start, end) = (self.table.offsets[i], self.table.offsets[i + 1]);
        &self.table.text[start as usize..end as usize]
    }

    /// The index in the file of this set's row 0 (0 unless it is a slice).
    pub fn offset(&self) -> usize {
        self.first
    }

    /// Part `part.index()` of `part.count()` disjoint, contiguous parts of the rows:
    /// rows `index·len/count .. (index+1)·len/count`, so the parts together are every
    /// row exactly once. A view of the same shared cells: nothing is copied.
    pub fn slice(&self, part: Slice) -> DataSet {
        let len = self.len as u128;
        let at = |i: u64| (len * u128::from(i) / u128::from(part.count())) as usize;
        let (start, end) = (at(part.index()), at(part.index() + 1));
        DataSet {
            table: Arc::clone(&self.table),
            first: self.first + start,
            len: end - start,
        }
    }

    /// Bytes of memory the shared table holds (cell text, offsets and column names),
    /// whichever part of it this set views.
    pub fn heap_bytes(&self) -> usize {
        let t = &self.table;
        let names: usize = t.columns.iter().map(|c| c.capacity()).sum();
        t.text.capacity()
            + t.offsets.capacity() * size_of::<u32>()
            + t.columns.capacity() * size_of::<String>()
            + names
            + t.name.capacity()
            + t.file.as_os_str().len()
    }

    /// An error unless this set has at least `needed` rows: the load-time check of
    /// `pick: unique`, which gives each of `needed` `what` (such as "users" or
    /// "arrivals") a row of its own.
    pub fn require_rows(&self, needed: u64, what: &str) -> Result<(), DataError> {
        if (self.len as u64) < needed {
            return Err(DataError::new(
                self.file(),
                None,
                Problem::TooFewRows {
                    name: self.name().to_string(),
                    rows: self.len,
                    needed,
                    what: what.to_string(),
                },
            ));
        }
        Ok(())
    }
}

/// A reader that fails with [`OverLimit`] once it has read `left` bytes and finds more.
struct Limited<R> {
    inner: R,
    left: u64,
}

/// The cause of a [`Limited`] reader's error: the file is larger than the limit.
#[derive(Debug)]
struct OverLimit;

impl fmt::Display for OverLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the file is larger than the limit")
    }
}

impl std::error::Error for OverLimit {}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        // One byte beyond the limit is asked for, so a file of exactly the limit is read.
        let room = usize::try_from(self.left.saturating_add(1)).unwrap_or(usize::MAX);
        let take = buf.len().min(room);
        let n = self.inner.read(&mut buf[..take])?;
        if n as u64 > self.left {
            return Err(io::Error::other(OverLimit));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

/// The [`Problem`] of an I/O error while reading: [`Problem::TooLarge`] when it came from
/// the [`Limited`] reader.
fn io_problem(e: io::Error, limits: &DataLimits) -> Problem {
    if e.get_ref().is_some_and(|inner| inner.is::<OverLimit>()) {
        Problem::TooLarge {
            limit: limits.max_file_bytes,
        }
    } else {
        Problem::Io(e)
    }
}

/// The offset of the end of `text`, or the error of text past 4 GiB.
fn end_offset(len: usize) -> Result<u32, Problem> {
    u32::try_from(len).map_err(|_| Problem::TooLarge {
        limit: u64::from(u32::MAX),
    })
}

/// An error unless `name` can be column `index` (0-based) after `columns`.
fn check_column(columns: &[String], index: usize, name: &str) -> Result<(), Problem> {
    if name.is_empty() {
        return Err(Problem::UnnamedColumn(index + 1));
    }
    if columns.iter().any(|c| c == name) {
        return Err(Problem::DuplicateColumn(name.to_string()));
    }
    Ok(())
}

//! Why a data file was refused, and where.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// A data file that cannot be used: the file, where in it (line, and for JSON the
/// column, when known) and what is wrong. Displays as `FILE:LINE:COLUMN: problem`.
#[derive(Debug)]
pub struct DataError {
    /// The data file.
    pub file: PathBuf,
    /// The line (1-based) the problem is on: for a CSV row, the line its record starts
    /// on; `None` for the file as a whole.
    pub line: Option<u64>,
    /// The column (1-based, in bytes) on that line, when the JSON parser gave one.
    pub column: Option<u64>,
    /// What is wrong.
    pub problem: Problem,
}

impl DataError {
    /// A problem with `file` (at `line`, when known).
    pub fn new(file: &Path, line: Option<u64>, problem: Problem) -> DataError {
        DataError {
            file: file.to_path_buf(),
            line,
            column: None,
            problem,
        }
    }
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        write!(f, ": {}", self.problem)
    }
}

impl std::error::Error for DataError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.problem {
            Problem::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// What is wrong with a data file.
#[derive(Debug, thiserror::Error)]
pub enum Problem {
    /// It could not be opened or read.
    #[error("cannot read it: {0}")]
    Io(io::Error),
    /// Its extension is not one of a data file.
    #[error("not a data file headroom reads: its name must end in .csv, .json, .jsonl or .ndjson")]
    UnknownFormat,
    /// It is larger than [`super::DataLimits::max_file_bytes`].
    #[error("larger than the limit of {limit} bytes")]
    TooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
    /// It holds nothing (or only blank lines).
    #[error("the file is empty")]
    Empty,
    /// It has a header (CSV) or an empty array (JSON) but no rows.
    #[error("no rows: the file has no data")]
    NoRows,
    /// Every JSON object is empty.
    #[error("no columns: every object is empty")]
    NoColumns,
    /// More columns than [`super::DataLimits::max_columns`].
    #[error("more than {limit} columns")]
    TooManyColumns {
        /// The limit.
        limit: usize,
    },
    /// A cell longer than [`super::DataLimits::max_cell_bytes`].
    #[error("the value of column `{column}` is longer than the limit of {limit} bytes")]
    CellTooLong {
        /// The cell's column.
        column: String,
        /// The limit, in bytes.
        limit: usize,
    },
    /// A CSV row with another number of fields than the header.
    #[error("{found} fields where the header has {expected}")]
    FieldCount {
        /// The header's fields.
        expected: usize,
        /// This row's.
        found: usize,
    },
    /// Two columns with one name.
    #[error("column `{0}` appears twice")]
    DuplicateColumn(String),
    /// A column with an empty name (1-based position in the header).
    #[error("column {0} of the header has no name")]
    UnnamedColumn(usize),
    /// Text that is not UTF-8 (a binary file, or text in another encoding).
    #[error("not UTF-8 text (in column `{column}`): is it a binary file, or another encoding?")]
    InvalidUtf8 {
        /// The column of the first such cell (or `header`).
        column: String,
    },
    /// A CSV quoted field opened on the line and never closed.
    #[error("a quoted field starts in this row and is never closed")]
    UnclosedQuote,
    /// JSON that cannot be read as the format's objects (the parser's message).
    #[error("{0}")]
    Json(String),
    /// JSON objects with so few keys in common that the table of rows × columns would
    /// hold more cells than the file has bytes.
    #[error(
        "{rows} rows × {columns} columns would be more cells than the file has bytes: \
         the objects have too few keys in common"
    )]
    TooManyCells {
        /// Rows.
        rows: usize,
        /// Columns (every key of every object).
        columns: usize,
    },
    /// Fewer rows than `pick: unique` hands out.
    #[error("data `{name}` has {rows} rows for {needed} {what}: `pick: unique` gives each a row of its own")]
    TooFewRows {
        /// The data set's name.
        name: String,
        /// Its rows.
        rows: usize,
        /// The rows needed.
        needed: u64,
        /// What each needs one: "users", "arrivals".
        what: String,
    },
}

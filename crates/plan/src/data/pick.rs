//! How a data set's rows are handed out during a run (`pick:`), and the run's set of
//! data sources.
//!
//! Every engine thread reads the same [`DataSource`]s (clones share their cursor), so
//! `unique` and `sequential` hand out rows across the whole process, not per thread:
//!
//! - `unique`: each virtual user (closed model) or arrival (open model) takes a row no
//!   other took, in file order, with [`DataSource::take_unique`]; none is left when the
//!   rows run out (the engine counts those). Shards take disjoint parts of the rows
//!   ([`DataPlan::slice`]), so no row is used twice across the run either.
//! - `sequential`: each iteration takes the next row, wrapping to the first after the
//!   last, from one cursor shared by every user (Gatling's `circular` feeder, k6's
//!   shared `SharedArray` index): [`DataSource::sequential`]. Every shard walks the
//!   whole set from its first row.
//! - `random`: each iteration takes a uniformly random row ([`DataSource::random`]).

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use rand::Rng;

use super::DataSet;
use crate::Slice;

/// How a data set's rows are handed out (`pick:` of an entry of `data:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pick {
    /// One row of its own per virtual user or arrival; never reused.
    Unique,
    /// The next row each iteration, from one shared cursor, wrapping.
    Sequential,
    /// A uniformly random row each iteration.
    Random,
}

impl Pick {
    /// Every pick, in the order of the scenario format's documentation.
    pub const ALL: [Pick; 3] = [Pick::Unique, Pick::Sequential, Pick::Random];

    /// Its name in a scenario: `unique`, `sequential` or `random`.
    pub fn as_str(self) -> &'static str {
        match self {
            Pick::Unique => "unique",
            Pick::Sequential => "sequential",
            Pick::Random => "random",
        }
    }
}

impl fmt::Display for Pick {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `pick:` that is none of `unique`, `sequential`, `random`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a pick: expected unique, sequential or random")]
pub struct BadPick(pub String);

impl FromStr for Pick {
    type Err = BadPick;
    fn from_str(s: &str) -> Result<Pick, BadPick> {
        Pick::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| BadPick(s.to_string()))
    }
}

/// One data set of a run and how its rows are handed out. Clones share the cursor
/// (every engine thread holds a clone); [`DataSource::restart`] makes one with its own.
#[derive(Debug, Clone)]
pub struct DataSource {
    set: DataSet,
    pick: Pick,
    /// `unique`: rows handed out so far (it passes `len` only by failed takes);
    /// `sequential`: iterations so far, the row being this modulo `len`.
    cursor: Arc<AtomicUsize>,
}

impl DataSource {
    /// `set`'s rows handed out by `pick`, from the first.
    pub fn new(set: DataSet, pick: Pick) -> DataSource {
        DataSource {
            set,
            pick,
            cursor: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// The data set (a slice of the file's rows for a `unique` shard).
    pub fn set(&self) -> &DataSet {
        &self.set
    }

    /// The data set's name.
    pub fn name(&self) -> &str {
        self.set.name()
    }

    /// How its rows are handed out.
    pub fn pick(&self) -> Pick {
        self.pick
    }

    /// `unique`: a row no one took before (of this source and its clones), or `None`
    /// when every row has been taken.
    pub fn take_unique(&self) -> Option<usize> {
        let len = self.set.len();
        // Once the rows ran out, every later call fails here without a write to the
        // shared cursor, so it never grows without bound.
        if self.cursor.load(Ordering::Relaxed) >= len {
            return None;
        }
        let row = self.cursor.fetch_add(1, Ordering::Relaxed);
        (row < len).then_some(row)
    }

    /// Rows `take_unique` has handed out so far.
    pub fn taken(&self) -> usize {
        self.cursor.load(Ordering::Relaxed).min(self.set.len())
    }

    /// `sequential`: the next row of the one cursor every user shares, wrapping to the
    /// first after the last. Panics on a set with no rows.
    pub fn sequential(&self) -> usize {
        self.cursor.fetch_add(1, Ordering::Relaxed) % self.set.len()
    }

    /// `random`: a uniformly random row. Panics on a set with no rows.
    pub fn random(&self, rng: &mut impl Rng) -> usize {
        rng.random_range(0..self.set.len())
    }

    /// The row by this source's pick: [`DataSource::take_unique`] (call it once per
    /// user, or per arrival in the open model), [`DataSource::sequential`] or
    /// [`DataSource::random`] (once per iteration). `None` when a `unique` set ran out,
    /// or the set has no rows.
    pub fn next_row(&self, rng: &mut impl Rng) -> Option<usize> {
        match self.pick {
            Pick::Unique => self.take_unique(),
            _ if self.set.is_empty() => None,
            Pick::Sequential => Some(self.sequential()),
            Pick::Random => Some(self.random(rng)),
        }
    }

    /// This source for part `part` of a sharded run, with its own cursor: `unique` takes
    /// the part's disjoint slice of the rows ([`DataSet::slice`]); `sequential` and
    /// `random` keep every row.
    pub fn slice(&self, part: Slice) -> DataSource {
        let set = match self.pick {
            Pick::Unique => self.set.slice(part),
            Pick::Sequential | Pick::Random => self.set.clone(),
        };
        DataSource::new(set, self.pick)
    }

    /// The same rows with a cursor of its own, from the first row: for another run
    /// (a step of a search) of the data already loaded.
    pub fn restart(&self) -> DataSource {
        DataSource::new(self.set.clone(), self.pick)
    }
}

/// The data sources of a run (its scenario's `data:`), in the scenario's order.
#[derive(Debug, Clone, Default)]
pub struct DataPlan {
    /// One source per entry of `data:`.
    pub sets: Vec<DataSource>,
}

impl DataPlan {
    /// Whether the scenario has no data.
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// The index in `sets` of the source named `name`.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.sets.iter().position(|s| s.name() == name)
    }

    /// The source named `name`.
    pub fn get(&self, name: &str) -> Option<&DataSource> {
        self.sets.iter().find(|s| s.name() == name)
    }

    /// The plan of part `part` of a sharded run: each source's [`DataSource::slice`].
    pub fn slice(&self, part: Slice) -> DataPlan {
        DataPlan {
            sets: self.sets.iter().map(|s| s.slice(part)).collect(),
        }
    }

    /// The same data with fresh cursors ([`DataSource::restart`]).
    pub fn restart(&self) -> DataPlan {
        DataPlan {
            sets: self.sets.iter().map(DataSource::restart).collect(),
        }
    }
}

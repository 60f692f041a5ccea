//! The translation report: every construct a converter met, where it was, and what
//! became of it, with the closing count a user reads first.

use std::fmt;

/// What became of one construct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It means the same in the scenario.
    Translated,
    /// It is in the scenario, with a different meaning in some case; the text says
    /// which (`sleep(Math.random() * 3)` becomes a uniform think time of 0–3 s).
    Approximated(String),
    /// It is not in the scenario; the text says why and, where there is one, what to
    /// write instead.
    LeftOut(String),
}

/// One construct met in the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// 1-based line in the input.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What it is, as the input spells it (`http.post`, `check`, `options.stages`,
    /// `GET /users/{id}`).
    pub construct: String,
    /// What became of it.
    pub outcome: Outcome,
}

/// Every construct met, in the order met, and what the count calls them (`calls`,
/// `operations`, `requests`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The input as given.
    pub file: String,
    /// What an item is called in the closing line, plural (`calls`).
    pub noun: &'static str,
    /// The constructs, in the order met.
    pub items: Vec<Item>,
}

/// How many constructs ended each way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    /// Translated as they are.
    pub translated: usize,
    /// Approximated.
    pub approximated: usize,
    /// Left out.
    pub left_out: usize,
}

impl Counts {
    /// Every construct met.
    pub fn total(&self) -> usize {
        self.translated + self.approximated + self.left_out
    }
}

impl Report {
    /// An empty report of `file`, counting `noun`.
    pub fn new(file: &str, noun: &'static str) -> Report {
        Report {
            file: file.to_string(),
            noun,
            items: Vec::new(),
        }
    }

    /// Adds one construct.
    pub fn push(
        &mut self,
        line: usize,
        column: usize,
        construct: impl Into<String>,
        outcome: Outcome,
    ) {
        self.items.push(Item {
            line,
            column,
            construct: construct.into(),
            outcome,
        });
    }

    /// How many constructs ended each way.
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for item in &self.items {
            match item.outcome {
                Outcome::Translated => c.translated += 1,
                Outcome::Approximated(_) => c.approximated += 1,
                Outcome::LeftOut(_) => c.left_out += 1,
            }
        }
        c
    }

    /// The closing line: `translated 37 of 41 calls; 2 approximations; 2 left out`.
    pub fn summary(&self) -> String {
        let c = self.counts();
        format!(
            "translated {} of {} {}; {} approximation{}; {} left out",
            c.translated,
            c.total(),
            self.noun,
            c.approximated,
            if c.approximated == 1 { "" } else { "s" },
            c.left_out
        )
    }
}

impl fmt::Display for Report {
    /// One line per construct (`12:5  left out      handleSummary: headroom writes
    /// its own reports`), then the closing line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for item in &self.items {
            let (word, note) = match &item.outcome {
                Outcome::Translated => ("translated", ""),
                Outcome::Approximated(n) => ("approximated", n.as_str()),
                Outcome::LeftOut(n) => ("left out", n.as_str()),
            };
            let at = format!("{}:{}:{}", self.file, item.line, item.column);
            if note.is_empty() {
                writeln!(f, "{at}  {word:<12}  {}", item.construct)?;
            } else {
                writeln!(f, "{at}  {word:<12}  {}: {note}", item.construct)?;
            }
        }
        writeln!(f, "{}", self.summary())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closing_line_counts_every_outcome() {
        let mut r = Report::new("t.js", "calls");
        r.push(1, 1, "http.get", Outcome::Translated);
        r.push(
            2,
            3,
            "sleep",
            Outcome::Approximated("random think time".into()),
        );
        r.push(
            4,
            1,
            "handleSummary",
            Outcome::LeftOut("headroom writes its own reports".into()),
        );
        assert_eq!(
            r.summary(),
            "translated 1 of 3 calls; 1 approximation; 1 left out"
        );
        let text = r.to_string();
        assert!(
            text.contains("t.js:4:1  left out      handleSummary: headroom writes"),
            "{text}"
        );
        assert!(text.ends_with("translated 1 of 3 calls; 1 approximation; 1 left out\n"));
        assert_eq!(
            Report::new("x", "requests").summary(),
            "translated 0 of 0 requests; 0 approximations; 0 left out"
        );
    }
}

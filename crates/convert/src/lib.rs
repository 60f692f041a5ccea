//! Front ends for tests written for other tools: a k6 script ([`k6`]), an OpenAPI
//! document ([`openapi`]), a Postman collection ([`postman`]) and a `.http` file
//! ([`http_file`]) each become scenario YAML, the very text a user would write, so
//! every later stage (the scenario compiler, the engine, the reports) stays one path.
//!
//! A converter never stops at the first construct it does not know: it translates what
//! it can, and its [`Report`] lists every construct it met with where it was and what
//! became of it ([`Outcome`]: translated, approximated, left out), closing with a
//! count (`translated 37 of 41 calls; 2 approximations; 2 left out`). The caller
//! decides whether a left-out construct is fatal (`--strict`).
//!
//! Every input is untrusted: it is refused above [`MAX_INPUT`] bytes, nesting deeper
//! than [`MAX_DEPTH`] and more than [`MAX_ITEMS`] requests; errors name the file, line
//! and column ([`ConvertError`]).

pub mod http_file;
mod js;
pub mod k6;
mod locate;
pub mod openapi;
pub mod postman;
pub mod report;
mod tpl;
pub mod yaml;

pub use report::{Item, Outcome, Report};
pub use yaml::Yaml;

/// The largest input a converter reads, bytes.
pub const MAX_INPUT: usize = 32 << 20;
/// The deepest nesting a converter follows (JSON/YAML values, JavaScript expressions,
/// `$ref` chains, folders).
pub const MAX_DEPTH: usize = 64;
/// The most requests (or operations, calls) one conversion produces.
pub const MAX_ITEMS: usize = 5_000;

/// The input of a conversion: its name as the user gave it (for messages and reports)
/// and its text.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// The file as given on the command line.
    pub file: &'a str,
    /// Its content.
    pub text: &'a str,
}

/// What a conversion produced: the scenario and what became of every construct.
#[derive(Debug, Clone)]
pub struct Converted {
    /// The scenario, as YAML text (loads with the scenario compiler as it is).
    pub yaml: String,
    /// Every construct met, and the closing count.
    pub report: Report,
}

/// Why a conversion could not produce a scenario at all. A construct the converter
/// does not know is not an error: it is reported ([`Outcome::LeftOut`]).
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    /// The input is not valid in its own format (JavaScript, JSON, YAML, `.http`).
    #[error("{file}:{line}:{column}: {message}")]
    Syntax {
        /// The file as given.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column (characters).
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// The input is valid but cannot become a scenario (no request at all, no target
    /// URL anywhere), located where the problem is.
    #[error("{file}:{line}:{column}: {message}")]
    Unusable {
        /// The file as given.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is missing or wrong.
        message: String,
    },
    /// The input is larger than [`MAX_INPUT`].
    #[error("{file}: larger than {limit} bytes, refused", limit = MAX_INPUT)]
    TooLarge {
        /// The file as given.
        file: String,
    },
    /// A limit on nesting or on the number of items was passed.
    #[error("{file}:{line}:{column}: {what} (limit {limit}), refused")]
    Limit {
        /// The file as given.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// Which limit (`nesting deeper than`, `more requests than`).
        what: &'static str,
        /// The limit.
        limit: usize,
    },
    /// `--strict`: something was left out.
    #[error("{file}: {count} construct(s) left out, and --strict refuses that (first: line {line}:{column}, {what})")]
    Strict {
        /// The file as given.
        file: String,
        /// How many were left out.
        count: usize,
        /// The first one's line.
        line: usize,
        /// Its column.
        column: usize,
        /// What it was.
        what: String,
    },
}

impl Source<'_> {
    /// Refuses an input larger than [`MAX_INPUT`].
    pub fn check_size(&self) -> Result<(), ConvertError> {
        if self.text.len() > MAX_INPUT {
            return Err(ConvertError::TooLarge {
                file: self.file.to_string(),
            });
        }
        Ok(())
    }

    /// The 1-based line and column (in characters) of byte `offset` of the text.
    ///
    /// It scans the text up to `offset`: for one error. A converter that locates
    /// many items builds one `locate::Lines` index instead, which counts the same.
    pub fn line_column(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let before = &self.text[..floor_char_boundary(self.text, offset)];
        let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
        let start = before.rfind('\n').map_or(0, |i| i + 1);
        (line, before[start..].chars().count() + 1)
    }

    /// A syntax error at byte `offset`.
    pub fn syntax(&self, offset: usize, message: impl Into<String>) -> ConvertError {
        let (line, column) = self.line_column(offset);
        ConvertError::Syntax {
            file: self.file.to_string(),
            line,
            column,
            message: message.into(),
        }
    }

    /// An unusable-input error at byte `offset`.
    pub fn unusable(&self, offset: usize, message: impl Into<String>) -> ConvertError {
        let (line, column) = self.line_column(offset);
        ConvertError::Unusable {
            file: self.file.to_string(),
            line,
            column,
            message: message.into(),
        }
    }

    /// A limit error at byte `offset`.
    pub fn limit(&self, offset: usize, what: &'static str, limit: usize) -> ConvertError {
        let (line, column) = self.line_column(offset);
        ConvertError::Limit {
            file: self.file.to_string(),
            line,
            column,
            what,
            limit,
        }
    }
}

/// The largest char boundary at or below `index`.
fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    while index > 0 && !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

impl Converted {
    /// `--strict`: an error when anything was left out.
    pub fn strict(&self, file: &str) -> Result<(), ConvertError> {
        let mut left = self
            .report
            .items
            .iter()
            .filter(|i| matches!(i.outcome, Outcome::LeftOut(_)));
        match left.next() {
            None => Ok(()),
            Some(first) => Err(ConvertError::Strict {
                file: file.to_string(),
                count: 1 + left.count(),
                line: first.line,
                column: first.column,
                what: first.construct.clone(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns_count_characters_from_one() {
        let s = Source {
            file: "a.js",
            text: "ab\néé x\n",
        };
        assert_eq!(s.line_column(0), (1, 1));
        assert_eq!(s.line_column(3), (2, 1));
        // 'x' is after two 2-byte characters and a space.
        assert_eq!(s.line_column(8), (2, 4));
        // Inside a character, and past the end, stay in range.
        assert_eq!(s.line_column(4), (2, 1));
        assert_eq!(s.line_column(999), (3, 1));
        let e = s.syntax(8, "unexpected token").to_string();
        assert_eq!(e, "a.js:2:4: unexpected token");
    }

    #[test]
    fn the_index_agrees_with_the_source_at_every_offset() {
        // Multi-byte characters of 2, 3 and 4 bytes, CRLF and LF lines, empty lines,
        // long enough for the index's checkpoints to fall inside characters and lines.
        let mut text = String::from("ab\r\n\n\r\n");
        for i in 0..1_500 {
            text.push_str(match i % 5 {
                0 => "é€\r\n",
                1 => "x𝄞y\n",
                2 => "\n",
                3 => "plain ascii, ",
                _ => "€é𝄞\r\n\r\n",
            });
        }
        text.push('é');
        let s = Source {
            file: "t",
            text: &text,
        };
        let lines = locate::Lines::new(&text);
        for offset in 0..text.len() + 4 {
            assert_eq!(lines.line_column(offset), s.line_column(offset), "{offset}");
        }
    }
}

/// What the converters' unit tests check of every scenario they produce.
#[cfg(test)]
pub(crate) mod testing {
    /// Compiles `yaml` as `headroom run` would (the scenario compiler's own errors on
    /// failure, with the text) and checks it against `headroom schema`'s JSON Schema.
    #[track_caller]
    pub(crate) fn assert_loads(yaml: &str) -> headroom_plan::Plan {
        let plan = headroom_scenario::load_text("converted.yaml", yaml, &Default::default())
            .unwrap_or_else(|e| panic!("{e}\n{yaml}"));
        let schema = headroom_scenario::scenario_schema();
        let validator = jsonschema::validator_for(&schema).expect("a valid JSON Schema");
        let value: serde_json::Value =
            serde_saphyr::from_str(yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
        if let Err(e) = validator.validate(&value) {
            panic!("the schema refuses the scenario: {e}\n{yaml}");
        }
        plan
    }
}

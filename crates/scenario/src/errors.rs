//! [`ScenarioError`]: what is wrong with a scenario, where (`file:line:column`), and
//! which field (`requests[1].expect.status`), plus helpers that build one from a YAML
//! error or from a spanned value that failed a later check.

use serde_json::Value;
use serde_saphyr::{Location, Spanned};

/// A scenario that could not be loaded: where, and what was expected.
#[derive(Debug, thiserror::Error)]
#[error("{location}: {message}")]
pub struct ScenarioError {
    /// `file:line:column` (or `command line`).
    pub location: String,
    /// What is wrong and what was expected, naming the field.
    pub message: String,
}

impl ScenarioError {
    /// An error about command-line values (`--rate`, `--url`...).
    pub(crate) fn command_line(message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            location: "command line".into(),
            message: message.into(),
        }
    }
}

/// The file being loaded, for locations.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Source<'a> {
    /// File name as given on the command line.
    pub(crate) file: &'a str,
    /// Position of the document's root, for errors about missing sections.
    pub(crate) root: Location,
}

impl Source<'_> {
    /// An error at `location` about the field at `path`.
    pub(crate) fn at(
        &self,
        location: Location,
        path: &str,
        message: impl std::fmt::Display,
    ) -> ScenarioError {
        let location = if location.line() == 0 {
            self.file.to_string()
        } else {
            format!("{}:{}:{}", self.file, location.line(), location.column())
        };
        let message = if path.is_empty() {
            message.to_string()
        } else {
            format!("{path}: {message}")
        };
        ScenarioError { location, message }
    }

    /// An error about a spanned value.
    pub(crate) fn of<T>(
        &self,
        node: &Spanned<T>,
        path: &str,
        message: impl std::fmt::Display,
    ) -> ScenarioError {
        self.at(node.referenced, path, message)
    }

    /// Converts a YAML error; `path` is where deserialization stopped (from
    /// `serde_path_to_error`), with the `value` steps of [`Spanned`] wrappers removed.
    pub(crate) fn yaml(
        &self,
        error: &serde_saphyr::Error,
        path: Option<&serde_path_to_error::Path>,
    ) -> ScenarioError {
        let location = error.location().unwrap_or(Location::UNKNOWN);
        let mut text = error.without_snippet().to_string();
        // The location is reported in front; drop the library's own suffix.
        if let Some(at) = text.rfind(" at line ") {
            text.truncate(at);
        }
        let path = path.map(field_path).unwrap_or_default();
        if path.is_empty() && text.starts_with("expected mapping") {
            text.push_str(": a scenario is a mapping of name, target, defaults, load, thresholds, requests, flows");
        }
        self.at(location, &path, text)
    }
}

/// Renders a deserialization path as `requests[1].expect.status`.
fn field_path(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            // `Spanned<T>` deserializes as a struct whose field `value` holds T; no
            // scenario field is named `value`, so the step is dropped.
            Segment::Map { key } if key == "value" => {}
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Unknown => {}
        }
    }
    out
}

/// Describes a value for "found ..." in messages: numbers and booleans as written,
/// strings quoted, collections by kind.
pub(crate) fn found(value: &Value) -> String {
    match value {
        Value::Null => "nothing (null)".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("{s:?}"),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a mapping".into(),
    }
}

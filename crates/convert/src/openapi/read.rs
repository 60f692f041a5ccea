//! A document's text as a positioned tree: JSON ([`super::json`]) or YAML
//! ([`super::node`]), whichever it is.

use super::json;
use super::node::{self, Node};
use crate::{ConvertError, Source};

/// Reads `source` as JSON when it looks like JSON (its first character opens an
/// object), else as YAML. YAML's flow style also opens with `{`: such a text that is
/// not JSON is read as YAML, unless the file is named `.json`.
pub(crate) fn parse(source: &Source<'_>) -> Result<Node, ConvertError> {
    let first = source
        .text
        .trim_start_matches(['\u{feff}', ' ', '\t', '\r', '\n']);
    if !first.starts_with('{') {
        return node::yaml(source);
    }
    match json::read(source) {
        Err(json @ ConvertError::Syntax { .. })
            if !source.file.to_ascii_lowercase().ends_with(".json") =>
        {
            node::yaml(source).map_err(|_| json)
        }
        other => other,
    }
}

//! A Postman collection (v2.1, and v2.0, which reads the same) as a scenario.
//!
//! Folders become flows (one per top-level folder, its nested folders' requests in
//! order; top-level requests form one flow named after the collection); each request
//! becomes a flow step named as in Postman, with its URL, headers, auth (inherited
//! from its folders and the collection) and body. Collection and environment variables
//! with a value are written in place; one defined nowhere is read from the process
//! environment (`{{ env.NAME }}`). Test scripts (parsed with oxc) become `check:` and
//! `capture:`; a variable captured in one flow and used in another is captured by a
//! copy of its request in `setup:` and read as `{{ setup.NAME }}`.
//!
//! The report has one item per request, one per script statement (translated or not),
//! and one per other construct that is not translated as it is (an auth type, a file
//! field, a variable defined nowhere, an approximate dynamic variable): the closing
//! count covers everything met.
//!
//! Bounds: the input size ([`crate::MAX_INPUT`], the collection and the environment
//! file), `serde_json`'s nesting limit (128, reported as a limit), folder depth
//! ([`crate::MAX_DEPTH`]), requests ([`crate::MAX_ITEMS`]), script length and bracket
//! nesting (`script.rs`), and variable expansion (`vars.rs`).

mod assertions;
mod auth;
mod body;
mod build;
mod captures;
mod effects;
mod expr;
mod request;
mod scenario;
mod script;
mod spans;
mod step;
mod url;
mod vars;
mod walk;

#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod tests_hostile;

use serde_json::Value;

use crate::{ConvertError, Converted, Source};

/// What the caller passes besides the collection.
#[derive(Debug, Clone, Default)]
pub struct Options<'a> {
    /// `--environment FILE`: a Postman environment export (its `values`).
    pub environment: Option<Source<'a>>,
}

/// The stack the conversion runs on: oxc's parser recurses on nesting, and scripts
/// are bounded in length ([`script::MAX_SCRIPT`]) and bracket depth, not in every
/// construct that nests (`!!!!x`), so they are parsed with room to spare.
pub(crate) const STACK: usize = 512 << 20;

/// Converts the collection `source`.
pub fn convert(source: Source<'_>, options: &Options<'_>) -> Result<Converted, ConvertError> {
    source.check_size()?;
    if let Some(env) = &options.environment {
        env.check_size()?;
    }
    on_big_stack(source, || build::convert(source, options))
}

/// Runs `f` on a thread with [`STACK`] bytes of stack.
pub(crate) fn on_big_stack<T: Send>(
    source: Source<'_>,
    f: impl FnOnce() -> Result<T, ConvertError> + Send,
) -> Result<T, ConvertError> {
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("convert".into())
            .stack_size(STACK)
            .spawn_scoped(scope, f)
            .map_err(|e| source.unusable(0, format!("cannot start the converter's thread: {e}")))?;
        handle
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// Parses JSON text, with errors as `file:line:column` ([`ConvertError::Syntax`]) and
/// nesting past `serde_json`'s recursion limit as [`ConvertError::Limit`].
pub(crate) fn parse_json(source: &Source<'_>) -> Result<Value, ConvertError> {
    serde_json::from_str(source.text).map_err(|e| {
        let offset = offset_of(source.text, e.line(), e.column());
        let message = e.to_string();
        let message = message
            .rfind(" at line ")
            .map_or(message.as_str(), |i| &message[..i]);
        if message.contains("recursion limit") {
            source.limit(offset, "JSON nested deeper than", 128)
        } else {
            source.syntax(offset, format!("not valid JSON: {message}"))
        }
    })
}

/// The byte offset of `serde_json`'s 1-based line and (byte) column.
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let start = match line {
        0 | 1 => 0,
        n => text
            .match_indices('\n')
            .nth(n - 2)
            .map_or(text.len(), |(i, _)| i + 1),
    };
    start
        .saturating_add(column.saturating_sub(1))
        .min(text.len())
}

//! Request templates: `{{ expr }}` placeholders in paths, headers and bodies, compiled
//! once when the scenario loads and rendered per request.
//!
//! [`Template::compile`] (in `parse`) turns the source into a list of parts: literal
//! text and expressions. `env.NAME` and `rand_choice` arguments are resolved and
//! escaped at compile time, so [`Template::render`] (in `render`) only appends bytes:
//! no parsing, no allocation, digits written straight into the output buffer.
//!
//! Expressions: `rand_int(a, b)` (inclusive), `rand_choice("a", "b", ...)`, `uuid()`
//! (version 4, from the rendering thread's rng), `seq()` (process-wide counter from 0),
//! `now_unix()`, `now_iso(offset_s)` (RFC 3339 UTC), `env.NAME`, and bare identifiers,
//! which name variables captured earlier in a flow ([`Vars`]).

mod parse;
mod render;

use rand::rngs::SmallRng;

/// How rendered placeholder values are escaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escape {
    /// Inserted as is (paths, headers, raw bodies).
    None,
    /// Escaped for the inside of a JSON string (JSON bodies).
    Json,
}

/// Variables captured during a flow, by name.
#[derive(Debug, Clone, Default)]
pub struct Vars {
    entries: Vec<(String, String)>,
}

impl Vars {
    /// The value of `name`, if captured.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Sets `name` to `value`, replacing an earlier value.
    pub fn set(&mut self, name: &str, value: String) {
        match self.entries.iter_mut().find(|(k, _)| k == name) {
            Some(entry) => entry.1 = value,
            None => self.entries.push((name.to_string(), value)),
        }
    }

    /// Forgets every variable (a new flow execution starts empty).
    pub fn clear(&mut self) {
        self.entries.clear();
    }
}

/// What rendering needs besides the template.
pub struct RenderContext<'a> {
    /// Random source of the rendering thread.
    pub rng: &'a mut SmallRng,
    /// Captured variables of the current flow execution.
    pub vars: &'a Vars,
}

/// A compiled template: immutable, cheap to share between threads behind an `Arc`.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    parts: Vec<Part>,
    escape: Escape,
}

/// One piece of a compiled template.
#[derive(Debug, Clone, PartialEq)]
enum Part {
    /// Text copied as is (already escaped when it came from a compile-time value).
    Literal(String),
    /// `rand_int(lo, hi)`, inclusive, `lo <= hi`.
    RandInt(i64, i64),
    /// `rand_choice(...)`: one of these (already escaped), never empty.
    RandChoice(Vec<String>),
    /// `uuid()`.
    Uuid,
    /// `seq()`.
    Seq,
    /// `now_unix()`.
    NowUnix,
    /// `now_iso(offset_s)`.
    NowIso(i64),
    /// A captured variable, escaped at render time.
    Var(String),
}

impl Template {
    /// Compiles `source`. Errors name the placeholder and say what was expected
    /// (unknown function, wrong arguments, unset environment variable, unclosed `{{`).
    pub fn compile(source: &str, escape: Escape) -> Result<Template, String> {
        let parts = parse::parse(source, escape)?;
        Ok(Template { parts, escape })
    }

    /// The text when the template has no placeholder that varies per render.
    pub fn as_static(&self) -> Option<&str> {
        match self.parts.as_slice() {
            [] => Some(""),
            [Part::Literal(text)] => Some(text),
            _ => None,
        }
    }

    /// Names of the captured variables the template reads, in order of appearance
    /// (a name used twice appears twice).
    pub fn variables(&self) -> Vec<&str> {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Var(name) => Some(name.as_str()),
                _ => None,
            })
            .collect()
    }

    /// Appends the rendered text to `out`. A variable that is not set renders as
    /// nothing (validation makes sure flows capture before they use).
    pub fn render(&self, ctx: &mut RenderContext<'_>, out: &mut Vec<u8>) {
        for part in &self.parts {
            render::part(part, self.escape, ctx, out);
        }
    }
}

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;

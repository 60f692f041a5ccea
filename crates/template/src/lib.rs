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
//!
//! Typed JSON values: in a JSON body ([`json_source`]), a string that is exactly one
//! placeholder (`"{{ rand_int(0, 9) }}"`) becomes the expression's own JSON value:
//! `rand_int`, `seq`, `now_unix` render numbers; `uuid`, `now_iso`, `rand_choice`, `env.NAME`
//! quoted strings; a captured variable the JSON value it was captured as (a number stays
//! a number, an object an object, a string a string). Text around a placeholder keeps the
//! value a string. This is decided at compile time: rendering stays byte appends.

mod error;
mod parse;
mod render;

pub use error::{Problem, TemplateError};

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
    /// (name, text, whether the text is JSON of a non-string value).
    entries: Vec<(String, String, bool)>,
}

impl Vars {
    /// The value of `name`, if captured: a string without quotes, anything else as
    /// compact JSON text.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.entry(name).map(|(v, _)| v)
    }

    /// The value of `name` and whether it is the JSON text of a non-string value.
    fn entry(&self, name: &str) -> Option<(&str, bool)> {
        self.entries
            .iter()
            .find(|(k, _, _)| k == name)
            .map(|(_, v, json)| (v.as_str(), *json))
    }

    /// Sets `name` to the string `value`, replacing an earlier value.
    pub fn set(&mut self, name: &str, value: String) {
        self.put(name, value, false);
    }

    /// Sets `name` to a non-string JSON value (number, boolean, null, object, array)
    /// given as its compact JSON text; a typed placeholder inserts it as is.
    pub fn set_json(&mut self, name: &str, json: String) {
        self.put(name, json, true);
    }

    fn put(&mut self, name: &str, value: String, json: bool) {
        match self.entries.iter_mut().find(|(k, _, _)| k == name) {
            Some(entry) => {
                entry.1 = value;
                entry.2 = json;
            }
            None => self.entries.push((name.to_string(), value, json)),
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
    /// A JSON value that is exactly one placeholder: the part rendered as a JSON value
    /// (numbers bare, strings quoted, captured JSON as captured). Never a literal
    /// (a typed compile-time value becomes a quoted `Literal`).
    Typed(Box<Part>),
}

impl Template {
    /// Compiles `source`. Errors name the placeholder and say what was expected
    /// (unknown function, wrong arguments, unset environment variable, unclosed `{{`).
    pub fn compile(source: &str, escape: Escape) -> Result<Template, TemplateError> {
        let parts = parse::parse(source, escape)?;
        Ok(Template { parts, escape })
    }

    /// A template that renders `text` unchanged: no placeholder is looked for in it.
    pub fn literal(text: &str, escape: Escape) -> Template {
        let parts = if text.is_empty() {
            Vec::new()
        } else {
            vec![Part::Literal(text.to_string())]
        };
        Template { parts, escape }
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
                Part::Typed(inner) => match inner.as_ref() {
                    Part::Var(name) => Some(name.as_str()),
                    _ => None,
                },
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

/// The template in its source syntax, for people (`headroom check`): literal text as
/// is and each placeholder in its canonical form, `{{ rand_int(1, 100) }}`,
/// `{{ id }}`. What was resolved at compile time shows as its value: an `env.NAME`
/// placeholder as the variable's value, since the compiled template no longer holds
/// the name.
impl std::fmt::Display for Template {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for part in &self.parts {
            show(part, f)?;
        }
        Ok(())
    }
}

/// Writes one part as [`Template`]'s `Display` does.
fn show(part: &Part, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    match part {
        Part::Literal(text) => f.write_str(text),
        Part::RandInt(lo, hi) => write!(f, "{{{{ rand_int({lo}, {hi}) }}}}"),
        Part::RandChoice(options) => {
            let quoted: Vec<String> = options.iter().map(|o| format!("{o:?}")).collect();
            write!(f, "{{{{ rand_choice({}) }}}}", quoted.join(", "))
        }
        Part::Uuid => f.write_str("{{ uuid() }}"),
        Part::Seq => f.write_str("{{ seq() }}"),
        Part::NowUnix => f.write_str("{{ now_unix() }}"),
        Part::NowIso(offset) => write!(f, "{{{{ now_iso({offset}) }}}}"),
        Part::Var(name) => write!(f, "{{{{ {name} }}}}"),
        Part::Typed(inner) => show(inner, f),
    }
}

/// The source of a JSON-escaping template for `value` (compile it with [`Escape::Json`]):
/// its compact JSON text, in which a string that is exactly one placeholder becomes a
/// typed placeholder (see the module docs).
pub fn json_source(value: &serde_json::Value) -> String {
    let mut out = String::new();
    parse::json_source(value, &mut out);
    out
}

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_typed;

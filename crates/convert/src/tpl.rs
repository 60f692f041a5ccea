//! Writing scenario template text (`{{ expr }}`) from pieces: literal text, escaped so
//! that no `{{` of the input is read as a placeholder, and expressions. Shared by the
//! Postman and `.http` converters, whose inputs both spell variables `{{name}}`.

/// Template text under construction: literal runs and `{{ expr }}` placeholders.
#[derive(Debug, Default, Clone)]
pub(crate) struct Tpl {
    out: String,
    literal: String,
}

impl Tpl {
    /// An empty template.
    pub(crate) fn new() -> Tpl {
        Tpl::default()
    }

    /// Appends literal text (sent as it is).
    pub(crate) fn lit(&mut self, text: &str) {
        self.literal.push_str(text);
    }

    /// Appends a placeholder for `expr` (a template expression such as `uuid()`).
    pub(crate) fn expr(&mut self, expr: &str) {
        self.flush(true);
        self.out.push_str("{{ ");
        self.out.push_str(expr);
        self.out.push_str(" }}");
    }

    /// The bytes written so far (a bound on expansion is checked against it).
    pub(crate) fn len(&self) -> usize {
        self.out.len() + self.literal.len()
    }

    /// The template text.
    pub(crate) fn finish(mut self) -> String {
        self.flush(false);
        self.out
    }

    /// Writes the pending literal, escaped. Before a placeholder (or raw template text,
    /// which may start with one) a trailing `{` is escaped too: `a{` then `{{ x }}`
    /// would otherwise read as `a` then `{{{ x }}`, a broken placeholder.
    fn flush(&mut self, before_expr: bool) {
        if self.literal.is_empty() {
            return;
        }
        let text = std::mem::take(&mut self.literal);
        escape_into(&text, before_expr, &mut self.out);
    }
}

/// The placeholder that renders one `{`.
// Single-quoted: a placeholder inside a `json:` string is read from the JSON text,
// where a double quote would arrive escaped.
const BRACE: &str = "{{ '{' }}";

/// Literal text as template text: a `{` followed by another `{` becomes the
/// placeholder of a quoted string (`{{ "{" }}`), the template language's only way to
/// write it, so no `{{` of the input opens a placeholder.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    escape_into(text, false, &mut out);
    out
}

/// [`escape`] into `out`; `brace_at_end`: a final `{` is escaped too (a placeholder
/// follows).
fn escape_into(text: &str, brace_at_end: bool, out: &mut String) {
    if !text.contains('{') {
        out.push_str(text);
        return;
    }
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let escape = c == '{'
            && match chars.peek() {
                Some(&next) => next == '{',
                None => brace_at_end,
            };
        if escape {
            out.push_str(BRACE);
        } else {
            out.push(c);
        }
    }
}

/// A name as a template identifier (a letter or `_`, then letters, digits and `_`):
/// other characters become `_`, and a leading digit gets a `_` before it.
pub(crate) fn identifier(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// A string as a template string literal, single-quoted (`'a \'b\''`): usable inside
/// a `json:` string too, where double quotes arrive escaped.
pub(crate) fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    for c in text.chars() {
        if matches!(c, '\'' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('\'');
    out
}

/// The names referenced in a text as `{{name}}` (trimmed), in order; at most `limit`.
pub(crate) fn references(text: &str, limit: usize) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else { break };
        if names.len() >= limit {
            break;
        }
        names.push(after[..close].trim());
        rest = &after[close + 2..];
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_braces_never_open_a_placeholder() {
        assert_eq!(escape("a {{b}} c"), "a {{ '{' }}{b}} c");
        let mut t = Tpl::new();
        t.lit("x{{");
        t.expr("uuid()");
        t.lit("}{{{");
        let text = t.finish();
        assert_eq!(text, "x{{ '{' }}{{ '{' }}{{ uuid() }}}{{ '{' }}{{ '{' }}{");
        // Every `{{` in the output opens one of our placeholders.
        for (i, _) in text.match_indices("{{") {
            let next = &text[i + 2..];
            assert!(next.starts_with(' '), "{text}");
        }
        assert_eq!(identifier("auth-token"), "auth_token");
        assert_eq!(identifier("1x"), "_1x");
        assert_eq!(quoted("a'b\\"), "'a\\'b\\\\'");
        assert_eq!(references("{{a}}/{{ b }}/{{c", 10), ["a", "b"]);
    }
}

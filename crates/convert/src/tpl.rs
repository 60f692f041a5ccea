//! Writing scenario template text (`{{ expr }}`) from pieces: literal text, escaped so
//! that no `{{` of the input is read as a placeholder, and expressions; and [`pieces`],
//! the one scanner of `{{name}}` in an input. Shared by the Postman and `.http`
//! converters, whose inputs both spell variables `{{name}}`.

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

/// A piece of a text that spells variables `{{name}}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Piece<'t> {
    /// Text between placeholders (an unclosed `{{` and what follows it included).
    Lit(&'t str),
    /// A placeholder: its name, trimmed, and the whole `{{ name }}` as written.
    Var {
        /// The name, trimmed.
        name: &'t str,
        /// The placeholder as written.
        whole: &'t str,
    },
}

/// The pieces of `text`, in order: the one scanner of `{{name}}` the Postman and
/// `.http` converters share.
pub(crate) fn pieces(text: &str) -> Pieces<'_> {
    Pieces {
        rest: text,
        pending: None,
    }
}

/// The iterator of [`pieces`].
pub(crate) struct Pieces<'t> {
    rest: &'t str,
    /// A placeholder found after the literal just yielded.
    pending: Option<Piece<'t>>,
}

impl<'t> Iterator for Pieces<'t> {
    type Item = Piece<'t>;

    fn next(&mut self) -> Option<Piece<'t>> {
        if let Some(var) = self.pending.take() {
            return Some(var);
        }
        if self.rest.is_empty() {
            return None;
        }
        let rest = self.rest;
        let found = rest.find("{{").and_then(|open| {
            let after = &rest[open + 2..];
            after.find("}}").map(|close| (open, close))
        });
        let Some((open, close)) = found else {
            self.rest = "";
            return Some(Piece::Lit(rest));
        };
        let end = open + 2 + close + 2;
        let var = Piece::Var {
            name: rest[open + 2..open + 2 + close].trim(),
            whole: &rest[open..end],
        };
        self.rest = &rest[end..];
        if open == 0 {
            return Some(var);
        }
        self.pending = Some(var);
        Some(Piece::Lit(&rest[..open]))
    }
}

/// The names referenced in a text as `{{name}}` (trimmed), in order; at most `limit`.
pub(crate) fn references(text: &str, limit: usize) -> Vec<&str> {
    pieces(text)
        .filter_map(|p| match p {
            Piece::Var { name, .. } => Some(name),
            Piece::Lit(_) => None,
        })
        .take(limit)
        .collect()
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

    #[test]
    fn pieces_split_literals_and_placeholders_and_keep_an_unclosed_one_literal() {
        let all: Vec<Piece> = pieces("a{{ x }}{{y}}b{{c").collect();
        assert_eq!(
            all,
            [
                Piece::Lit("a"),
                Piece::Var {
                    name: "x",
                    whole: "{{ x }}"
                },
                Piece::Var {
                    name: "y",
                    whole: "{{y}}"
                },
                Piece::Lit("b{{c"),
            ]
        );
        assert_eq!(pieces("").count(), 0);
        assert_eq!(references("{{a}}{{b}}{{c}}", 2), ["a", "b"]);
    }
}

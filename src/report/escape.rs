//! Escaping for each output format, in a leaf module every renderer imports: text
//! from users and targets (request names, error messages, URLs) is never trusted to be
//! markup.

/// Text made safe for a Markdown table cell: HTML special characters as entities,
/// `|`, `` ` ``, `*` and `\` escaped (so a masked secret, `***`, shows as written
/// rather than as emphasis), line breaks as spaces.
pub fn markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '|' => out.push_str("\\|"),
            '`' => out.push_str("\\`"),
            '*' => out.push_str("\\*"),
            '\\' => out.push_str("\\\\"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Text made safe for HTML and XML content and attribute values; control characters
/// that XML forbids are dropped.
pub fn html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_markdown_cell_shows_stars_backslashes_and_pipes_as_written() {
        assert_eq!(
            super::markdown("refused *** for a|b \\ `x`"),
            "refused \\*\\*\\* for a\\|b \\\\ \\`x\\`"
        );
    }
}

//! Report sections written once and rendered twice: as terminal text and as Markdown
//! (which the HTML report converts). A section is a list of [`Block`]s — headings,
//! paragraphs and [`Grid`]s of cells — and [`text`] / [`markdown`] lay them out.
//! Cells hold plain text; [`markdown`] escapes them, so a statement from the target
//! cannot break a table.

use super::escape::markdown as escape;
use super::table::Table;

/// A table: a header row, then rows; the first column is a label, the rest numbers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Grid {
    /// Column titles.
    pub header: Vec<String>,
    /// Rows of cells, as many as the header (missing cells are blank).
    pub rows: Vec<Vec<String>>,
}

impl Grid {
    /// A grid with these column titles and no rows yet.
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Grid {
        Grid {
            header: header.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row.
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }
}

/// One part of a section.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A heading: level 3 is a section, level 4 a part of one.
    Heading(u8, String),
    /// A paragraph of plain text.
    Para(String),
    /// A table.
    Grid(Grid),
}

/// The blocks as terminal text: headings on their own line, paragraphs and grids
/// indented by two spaces under level-4 headings, a blank line between sections.
pub fn text(blocks: &[Block]) -> String {
    let mut out = String::new();
    for block in blocks {
        match block {
            Block::Heading(3, h) => {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(h);
                out.push('\n');
            }
            Block::Heading(_, h) => {
                out.push_str("\n  ");
                out.push_str(h);
                out.push('\n');
            }
            Block::Para(p) => {
                out.push_str("  ");
                out.push_str(p);
                out.push('\n');
            }
            Block::Grid(g) => {
                let mut t = Table::labelled(g.header.len().saturating_sub(1));
                t.row(g.header.iter().cloned());
                for r in &g.rows {
                    t.row(r.iter().cloned());
                }
                out.push_str(&t.render(4));
            }
        }
    }
    out
}

/// The blocks as Markdown, every cell and paragraph escaped, ending in a blank line.
pub fn markdown(blocks: &[Block]) -> String {
    let mut out = String::new();
    for block in blocks {
        match block {
            Block::Heading(level, h) => {
                out.push_str(&"#".repeat(usize::from(*level)));
                out.push(' ');
                out.push_str(&escape(h));
                out.push_str("\n\n");
            }
            Block::Para(p) => {
                out.push_str(&escape(p));
                out.push_str("\n\n");
            }
            Block::Grid(g) => {
                let cells = |r: &[String]| {
                    let cells: Vec<String> = (0..g.header.len())
                        .map(|i| escape(r.get(i).map_or("", String::as_str)))
                        .collect();
                    format!("| {} |\n", cells.join(" | "))
                };
                out.push_str(&cells(&g.header));
                let align: Vec<&str> = (0..g.header.len())
                    .map(|i| if i == 0 { "---" } else { "---:" })
                    .collect();
                out.push_str(&format!("|{}|\n", align.join("|")));
                for r in &g.rows {
                    out.push_str(&cells(r));
                }
                out.push('\n');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_section_renders_as_text_and_escaped_markdown() {
        let mut g = Grid::new(["statement", "calls"]);
        g.row(["SELECT a | b FROM <t>", "12"]);
        let blocks = vec![
            Block::Heading(3, "What limited".into()),
            Block::Heading(4, "step 2".into()),
            Block::Para("limit 100".into()),
            Block::Grid(g),
        ];
        let t = text(&blocks);
        assert_eq!(
            t,
            "What limited\n\n  step 2\n  limit 100\n    statement              calls\n    SELECT a | b FROM <t>     12\n"
        );
        let md = markdown(&blocks);
        assert!(
            md.starts_with("### What limited\n\n#### step 2\n\nlimit 100\n\n"),
            "{md}"
        );
        assert!(
            md.contains(
                "| statement | calls |\n|---|---:|\n| SELECT a \\| b FROM &lt;t&gt; | 12 |\n"
            ),
            "{md}"
        );
    }
}

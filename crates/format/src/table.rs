//! Plain aligned columns for text output: no borders, two spaces between columns,
//! labels left-aligned and numbers right-aligned. A [`Table`] is filled row by row and
//! rendered once; widths count characters, so `µs` lines up.
//!
//! Written here rather than taken from a table crate: the whole need is padding cells
//! to a column width, and the crates' border and style machinery would only be turned
//! off again.

/// How a column's cells are padded to its width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Text: padded on the right.
    Left,
    /// Numbers: padded on the left so that digits line up.
    Right,
}

/// Rows of cells laid out in aligned columns.
#[derive(Debug, Clone, Default)]
pub struct Table {
    aligns: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table whose columns are aligned as given; cells beyond the last alignment
    /// are left-aligned.
    pub fn new(aligns: &[Align]) -> Table {
        Table {
            aligns: aligns.to_vec(),
            rows: Vec::new(),
        }
    }

    /// A table with a left-aligned label column followed by `numbers` right-aligned ones.
    pub fn labelled(numbers: usize) -> Table {
        let mut aligns = vec![Align::Left];
        aligns.resize(numbers + 1, Align::Right);
        Table::new(&aligns)
    }

    /// Appends a row. Rows may have different lengths; missing cells are blank.
    pub fn row<I, S>(&mut self, cells: I) -> &mut Table
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.rows.push(cells.into_iter().map(Into::into).collect());
        self
    }

    /// True when no row was added.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Renders every row on its own line, each prefixed by `indent` spaces and ending in
    /// a newline, with no trailing spaces.
    pub fn render(&self, indent: usize) -> String {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                let cell_width = |row: &Vec<String>| row.get(c).map_or(0, |s| s.chars().count());
                self.rows.iter().map(cell_width).max().unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        for row in &self.rows {
            let mut line = " ".repeat(indent);
            for (c, width) in widths.iter().enumerate() {
                let cell = row.get(c).map_or("", String::as_str);
                if c > 0 {
                    line.push_str("  ");
                }
                let pad = " ".repeat(width - cell.chars().count());
                match self.aligns.get(c).copied().unwrap_or(Align::Left) {
                    Align::Left => {
                        line.push_str(cell);
                        line.push_str(&pad);
                    }
                    Align::Right => {
                        line.push_str(&pad);
                        line.push_str(cell);
                    }
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_labels_left_and_numbers_right() {
        let mut t = Table::labelled(2);
        t.row(["name", "requests", "p95"]);
        t.row(["create_task", "7000", "900µs"]);
        t.row(["get", "30", "12.3ms"]);
        let want = concat!(
            "  name         requests     p95\n",
            "  create_task      7000   900µs\n",
            "  get                30  12.3ms\n",
        );
        assert_eq!(t.render(2), want);
    }

    #[test]
    fn short_rows_and_extra_cells_render_without_trailing_spaces() {
        let mut t = Table::new(&[Align::Right]);
        t.row(["1", "a"]).row(["100"]).row(["10", "bb", "x"]);
        assert_eq!(t.render(0), "  1  a\n100\n 10  bb  x\n");
        assert!(!t.is_empty());
        assert_eq!(Table::labelled(1).render(4), "");
    }
}

//! Lines and columns of many offsets in one text, each found in time bounded by
//! [`STRIDE`] rather than by the text's length: a 32 MiB input with thousands of
//! report items (all on line 1 when it is minified JSON) would otherwise be scanned
//! from its start once per item, as [`crate::Source::line_column`] does. A converter
//! builds one [`Lines`] per conversion and locates every report item with it; the
//! simple [`crate::Source::line_column`] stays for one-off errors.

/// Bytes between two checkpoints.
const STRIDE: usize = 4 << 10;

/// An index of a text: every [`STRIDE`] bytes (at a character boundary), the line
/// and column there.
#[derive(Debug, Clone)]
pub(crate) struct Lines<'a> {
    text: &'a str,
    /// (byte offset, 1-based line, 1-based column in characters).
    marks: Vec<(usize, usize, usize)>,
}

impl<'a> Lines<'a> {
    /// Indexes `text` in one pass.
    pub(crate) fn new(text: &'a str) -> Lines<'a> {
        Lines::with_stride(text, STRIDE)
    }

    /// Indexes `text` with a checkpoint every `stride` bytes.
    fn with_stride(text: &'a str, stride: usize) -> Lines<'a> {
        let stride = stride.max(1);
        let mut marks = vec![(0, 1, 1)];
        let (mut line, mut column) = (1, 1);
        let mut next = stride;
        for (i, c) in text.char_indices() {
            if i >= next {
                marks.push((i, line, column));
                next = i + stride;
            }
            if c == '\n' {
                line += 1;
                column = 1;
            } else {
                column += 1;
            }
        }
        Lines { text, marks }
    }

    /// The 1-based line and column (characters) of byte `offset`, as
    /// [`crate::Source::line_column`] counts them: an offset inside a character is
    /// that character's, one past the end is the end's.
    pub(crate) fn line_column(&self, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(self.text.len());
        while offset > 0 && !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let at = self
            .marks
            .partition_point(|m| m.0 <= offset)
            .saturating_sub(1);
        let (start, mut line, mut column) = self.marks.get(at).copied().unwrap_or((0, 1, 1));
        for c in self.text.get(start..offset).unwrap_or("").chars() {
            if c == '\n' {
                line += 1;
                column = 1;
            } else {
                column += 1;
            }
        }
        (line, column)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Source;

    #[test]
    fn it_agrees_with_the_source_everywhere() {
        let mut text = String::new();
        for i in 0..40_000 {
            text.push_str(if i % 7 == 0 { "é\n" } else { "ab€" });
        }
        let source = Source {
            file: "t",
            text: &text,
        };
        let lines = Lines::new(&text);
        assert!(lines.marks.len() > 2);
        for offset in (0..text.len() + 3)
            .step_by(97)
            .chain([0, 1, text.len(), STRIDE, STRIDE + 1])
        {
            assert_eq!(
                lines.line_column(offset),
                source.line_column(offset),
                "{offset}"
            );
        }
    }

    #[test]
    fn a_small_stride_agrees_at_every_offset() {
        let text = "a€\r\n𝄞é\n\r\n\nxyz€€\r\né";
        let source = Source { file: "t", text };
        for stride in 1..8 {
            let lines = Lines::with_stride(text, stride);
            for offset in 0..text.len() + 3 {
                assert_eq!(
                    lines.line_column(offset),
                    source.line_column(offset),
                    "stride {stride}, offset {offset}"
                );
            }
        }
        assert_eq!(Lines::new("").line_column(5), (1, 1));
    }
}

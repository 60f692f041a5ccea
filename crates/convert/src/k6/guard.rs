//! A bound on how deep the parser will recurse, checked before it runs.
//!
//! oxc's parser is recursive descent with no depth limit of its own, so a hostile
//! script (`- - - - ... 1` a million times, `a = a = a = ...`, brackets nested a
//! million deep) would overflow the stack. This scan walks the text once as a small
//! lexer (strings, comments, template literals and regular expressions are skipped
//! as the parser would read them) and measures the nesting the parser will meet:
//! brackets, plus the chain of right-recursive tokens (prefix operators, `=`, `=>`,
//! `?`, `typeof`/`void`/`delete`/`await`/`new`/`yield`/`else`) since the last `;` or
//! `,` at that bracket level. It reads the text only to bound the parser's stack; the
//! script is understood from the AST alone.

/// The deepest nesting a script may have (a real one is far below).
pub(crate) const MAX_PARSE_NESTING: usize = 1_000;

/// Keywords after which a `/` starts a regular expression.
const BEFORE_REGEX: &[&str] = &[
    "return",
    "typeof",
    "case",
    "do",
    "else",
    "in",
    "of",
    "new",
    "delete",
    "void",
    "throw",
    "yield",
    "await",
    "instanceof",
];

/// Keywords that nest what follows them.
const CHAIN_WORDS: &[&str] = &["typeof", "void", "delete", "await", "new", "yield", "else"];

/// The byte offset where the nesting passes [`MAX_PARSE_NESTING`], if it does.
pub(crate) fn too_deep(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    // One entry per open bracket: the chain length when it opened, and whether it is
    // a template literal's `${`.
    let mut stack: Vec<(usize, bool)> = Vec::new();
    let mut chain = 0usize;
    // Whether the previous significant token ends an operand (so `/` divides and
    // `+`/`-` are binary).
    let mut after_operand = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let depth = stack.len() + chain;
        if depth > MAX_PARSE_NESTING {
            return Some(i);
        }
        match c {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            b'\'' | b'"' => {
                i = skip_string(b, i + 1, c);
                after_operand = true;
            }
            b'`' => {
                i = skip_template(b, i + 1, &mut stack, chain);
                after_operand = true;
            }
            b'}' if stack.last().is_some_and(|(_, t)| *t) => {
                // The end of a `${...}`: the template literal goes on.
                if let Some((c0, _)) = stack.pop() {
                    chain = c0;
                }
                i = skip_template(b, i + 1, &mut stack, chain);
                after_operand = true;
            }
            b'/' if !after_operand => {
                i = skip_regex(b, i + 1);
                after_operand = true;
            }
            b'(' | b'[' | b'{' => {
                stack.push((chain, false));
                chain = 0;
                after_operand = false;
                i += 1;
            }
            b')' | b']' | b'}' => {
                if let Some((c0, _)) = stack.pop() {
                    chain = c0;
                }
                after_operand = c != b'}';
                i += 1;
            }
            b';' | b',' => {
                chain = 0;
                after_operand = false;
                i += 1;
            }
            b'=' | b'?' | b'!' | b'~' | b'+' | b'-' | b'<' | b'>' | b'*' | b'%' | b'&' | b'|'
            | b'^' | b':' | b'.' | b'/' => {
                let next = b.get(i + 1).copied();
                let nests = match c {
                    b'=' => {
                        !matches!(next, Some(b'='))
                            && !matches!(b.get(i.wrapping_sub(1)), Some(b'=' | b'!' | b'<' | b'>'))
                    }
                    b'?' => !matches!(next, Some(b'.' | b'?')),
                    b'!' | b'~' => true,
                    b'+' | b'-' => !after_operand,
                    _ => false,
                };
                if nests {
                    chain += 1;
                }
                after_operand = false;
                i += 1;
            }
            c if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80 => {
                let start = i;
                while i < b.len()
                    && (b[i].is_ascii_alphanumeric()
                        || b[i] == b'_'
                        || b[i] == b'$'
                        || b[i] >= 0x80)
                {
                    i += 1;
                }
                let word = text.get(start..i).unwrap_or_default();
                if CHAIN_WORDS.contains(&word) {
                    chain += 1;
                }
                after_operand = !BEFORE_REGEX.contains(&word);
            }
            _ => i += 1,
        }
    }
    None
}

/// Past a string closed by `quote` (backslash escapes).
fn skip_string(b: &[u8], mut i: usize, quote: u8) -> usize {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            c if c == quote || c == b'\n' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// Past a template literal's text: to its closing backtick, or into a `${` (pushed).
fn skip_template(b: &[u8], mut i: usize, stack: &mut Vec<(usize, bool)>, chain: usize) -> usize {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'`' => return i + 1,
            b'$' if b.get(i + 1) == Some(&b'{') => {
                stack.push((chain, true));
                return i + 2;
            }
            _ => i += 1,
        }
    }
    i
}

/// Past a regular expression literal (classes may hold `/`).
fn skip_regex(b: &[u8], mut i: usize) -> usize {
    let mut class = false;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'[' => {
                class = true;
                i += 1;
            }
            b']' => {
                class = false;
                i += 1;
            }
            b'/' if !class => return i + 1,
            b'\n' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_code_passes_and_deep_chains_do_not() {
        let ok = "const a = `x ${b ? `y ${c}` : '('} z`; // (((((((\n/* [[[[ */ const r = /[(/]+/g; x = -y - -z;\n";
        assert_eq!(too_deep(ok), None);
        assert_eq!(
            too_deep(&"// ----------\n".repeat(5_000)),
            None,
            "comments are skipped"
        );
        assert_eq!(
            too_deep(&format!("const s = '{}';", "=".repeat(50_000))),
            None,
            "strings are skipped"
        );
        assert_eq!(
            too_deep(&"f(1, -2);\n".repeat(50_000)),
            None,
            "separators end a chain"
        );
        for deep in [
            format!("x = {}1", "- ".repeat(2_000)),
            format!("x = {}1", "(".repeat(2_000)),
            "a = ".repeat(2_000),
            "x => ".repeat(2_000),
            "typeof ".repeat(2_000),
            format!("x = `{}", "${`".repeat(2_000)),
            "a ? b : ".repeat(2_000),
        ] {
            assert!(too_deep(&deep).is_some(), "{}", &deep[..20]);
        }
    }
}

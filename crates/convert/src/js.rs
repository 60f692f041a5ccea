//! What the converters that read JavaScript beside their own format share (Postman's
//! test scripts, `.http` response handlers): a cheap bound on bracket nesting checked
//! before a script is parsed (oxc's parser recurses without a limit of its own), and
//! the names of a plain member chain (`pm.response.code`, `client.global.set`).

use oxc_ast::ast::Expression;

/// How long a member chain is followed.
const MAX_CHAIN: usize = 64;

/// The deepest bracket nesting of `text`, counted on every bracket (strings and
/// comments included: an over-estimate only leaves a script out).
pub(crate) fn bracket_depth(text: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    for b in text.bytes() {
        match b {
            b'(' | b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// The names of a plain member chain (`pm.response.to.have.status` →
/// `["pm", "response", "to", "have", "status"]`); `None` when `expr` is not one (a
/// call, a computed member, a chain longer than [`MAX_CHAIN`]).
pub(crate) fn dotted(expr: &Expression<'_>) -> Option<Vec<String>> {
    let mut names = Vec::new();
    let mut at = expr;
    for _ in 0..MAX_CHAIN {
        match at {
            Expression::StaticMemberExpression(m) => {
                names.push(m.property.name.to_string());
                at = &m.object;
            }
            Expression::Identifier(id) => {
                names.push(id.name.to_string());
                names.reverse();
                return Some(names);
            }
            _ => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxc_allocator::Allocator;
    use oxc_parser::Parser;
    use oxc_span::SourceType;

    #[test]
    fn brackets_count_nesting_not_total() {
        assert_eq!(bracket_depth("a(b[c]{d})(e)"), 2);
        assert_eq!(bracket_depth("a(b[c{d}])"), 3);
        assert_eq!(bracket_depth(")))((("), 3);
        assert_eq!(bracket_depth(""), 0);
    }

    #[test]
    fn member_chains_are_named_and_the_rest_refused() {
        let allocator = Allocator::default();
        let text = "pm.response.code; f().x; a[b].c; x;";
        let parsed = Parser::new(&allocator, text, SourceType::cjs()).parse();
        let names: Vec<Option<Vec<String>>> = parsed
            .program
            .body
            .iter()
            .map(|s| match s {
                oxc_ast::ast::Statement::ExpressionStatement(e) => dotted(&e.expression),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(
            names,
            [
                Some(vec!["pm".into(), "response".into(), "code".into()]),
                None,
                None,
                Some(vec!["x".into()]),
            ]
        );
    }
}

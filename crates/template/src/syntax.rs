//! The one small expression language of placeholders and conditions: a lexer and a
//! recursive-descent parser into a syntax tree. Nesting is bounded (`MAX_DEPTH`), so
//! hostile input fails fast with an error instead of overflowing the stack.
//!
//! ```text
//! condition  := and ( "||" and )*
//! and        := not ( "&&" not )*
//! not        := "!" not | "(" condition ")" | value ( CMP value )?
//! CMP        := "==" | "!=" | "<" | "<=" | ">" | ">="
//! value      := NUMBER | STRING | NAME | NAME "(" [ value ( "," value )* ] ")"
//! NUMBER     := -?[0-9]+(.[0-9]+)?
//! STRING     := '…' | "…"            (a backslash takes the next character as is)
//! NAME       := [A-Za-z_][A-Za-z0-9_.-]* (checked when compiled: see `func::name`)
//! ```
//!
//! A placeholder is one `value`.

use std::fmt;

use crate::error::{Problem, MAX_DEPTH};

/// A value: what a placeholder holds and what a condition compares.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expr {
    /// A number as written: `-?[0-9]+(.[0-9]+)?`.
    Num(String),
    /// A quoted string, its escapes resolved.
    Str(String),
    /// A variable, a dotted name or `env.NAME`, as written (checked when compiled).
    Name(String),
    /// A function call: its name and arguments.
    Call(String, Vec<Expr>),
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    /// The operator as written.
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}

/// A condition as parsed; `||` and `&&` chains are flat lists.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CondExpr {
    Or(Vec<CondExpr>),
    And(Vec<CondExpr>),
    Not(Box<CondExpr>),
    Cmp(CmpOp, Expr, Expr),
    Bare(Expr),
}

/// Parses a placeholder's expression: exactly one value.
pub(crate) fn value(src: &str) -> Result<Expr, Problem> {
    let mut p = Parser::new(src);
    let expr = p.value(false, "a value")?;
    p.end("the end of the expression")?;
    Ok(expr)
}

/// Parses a condition.
pub(crate) fn condition(src: &str) -> Result<CondExpr, Problem> {
    let mut p = Parser::new(src);
    let cond = p.or()?;
    p.end("`&&`, `||` or the end of the condition")?;
    Ok(cond)
}

/// Whether `word` is a number literal: `-?[0-9]+(.[0-9]+)?`.
pub(crate) fn is_number(word: &str) -> bool {
    let digits = word.strip_prefix('-').unwrap_or(word);
    let (int, frac) = match digits.split_once('.') {
        Some((int, frac)) => (int, Some(frac)),
        None => (digits, None),
    };
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    all_digits(int) && frac.is_none_or(all_digits)
}

/// Writes `s` in double quotes, `"` and `\` escaped with a backslash: the form the
/// lexer reads back as `s`.
pub(crate) fn write_quoted(s: &str, f: &mut impl fmt::Write) -> fmt::Result {
    f.write_char('"')?;
    for c in s.chars() {
        if matches!(c, '"' | '\\') {
            f.write_char('\\')?;
        }
        f.write_char(c)?;
    }
    f.write_char('"')
}

/// The expression in its canonical source form.
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Num(text) | Expr::Name(text) => f.write_str(text),
            Expr::Str(text) => write_quoted(text, f),
            Expr::Call(name, args) => {
                write!(f, "{name}(")?;
                for (i, arg) in args.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{arg}")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// One token.
#[derive(Debug, Clone, PartialEq)]
enum Tok<'s> {
    /// A run of characters that are not spaces, quotes, parentheses, commas or
    /// operators: a number or a name.
    Word(&'s str),
    Str(String),
    LParen,
    RParen,
    Comma,
    Not,
    And,
    Or,
    Cmp(CmpOp),
    End,
}

/// Characters that end a word.
const SPECIAL: &[char] = &['(', ')', ',', '"', '\'', '!', '=', '<', '>', '&', '|'];

/// Longest token text an error message quotes.
const SHOWN: usize = 40;

/// How a token shows in an error message.
fn describe(tok: &Tok<'_>) -> String {
    let text = match tok {
        Tok::Word(w) => w.to_string(),
        Tok::Str(s) => {
            let mut out = String::new();
            let _ = write_quoted(s, &mut out);
            out
        }
        Tok::LParen => "(".into(),
        Tok::RParen => ")".into(),
        Tok::Comma => ",".into(),
        Tok::Not => "!".into(),
        Tok::And => "&&".into(),
        Tok::Or => "||".into(),
        Tok::Cmp(op) => op.symbol().into(),
        Tok::End => return "the end".into(),
    };
    match text.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("`{}…`", &text[..cut]),
        None => format!("`{text}`"),
    }
}

struct Parser<'s> {
    src: &'s str,
    /// Byte offset of the next character the lexer reads.
    pos: usize,
    /// The token peeked at and its byte offset.
    ahead: Option<(Tok<'s>, usize)>,
    /// How deep in parentheses, `!` and calls the parser is.
    depth: usize,
}

impl<'s> Parser<'s> {
    fn new(src: &'s str) -> Self {
        Parser {
            src,
            pos: 0,
            ahead: None,
            depth: 0,
        }
    }

    /// The column (characters from 1) of byte offset `at`.
    fn column(&self, at: usize) -> usize {
        self.src[..at].chars().count() + 1
    }

    fn expected(&self, expected: &'static str, tok: &Tok<'_>, at: usize) -> Problem {
        Problem::Expected {
            expected,
            found: describe(tok),
            column: self.column(at),
        }
    }

    fn peek(&mut self) -> Result<&(Tok<'s>, usize), Problem> {
        if self.ahead.is_none() {
            self.ahead = Some(self.lex()?);
        }
        Ok(self.ahead.as_ref().expect("just filled"))
    }

    fn bump(&mut self) -> Result<(Tok<'s>, usize), Problem> {
        match self.ahead.take() {
            Some(token) => Ok(token),
            None => self.lex(),
        }
    }

    fn end(&mut self, expected: &'static str) -> Result<(), Problem> {
        match self.bump()? {
            (Tok::End, _) => Ok(()),
            (tok, at) => Err(self.expected(expected, &tok, at)),
        }
    }

    fn enter(&mut self) -> Result<(), Problem> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Problem::TooDeep);
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// Reads the next token.
    fn lex(&mut self) -> Result<(Tok<'s>, usize), Problem> {
        let rest = &self.src[self.pos..];
        let trimmed = rest.trim_start();
        let at = self.pos + (rest.len() - trimmed.len());
        let mut chars = trimmed.chars();
        let Some(c) = chars.next() else {
            self.pos = at;
            return Ok((Tok::End, at));
        };
        let then = chars.next();
        let (tok, len) = match (c, then) {
            ('(', _) => (Tok::LParen, 1),
            (')', _) => (Tok::RParen, 1),
            (',', _) => (Tok::Comma, 1),
            ('!', Some('=')) => (Tok::Cmp(CmpOp::Ne), 2),
            ('!', _) => (Tok::Not, 1),
            ('=', Some('=')) => (Tok::Cmp(CmpOp::Eq), 2),
            ('<', Some('=')) => (Tok::Cmp(CmpOp::Le), 2),
            ('<', _) => (Tok::Cmp(CmpOp::Lt), 1),
            ('>', Some('=')) => (Tok::Cmp(CmpOp::Ge), 2),
            ('>', _) => (Tok::Cmp(CmpOp::Gt), 1),
            ('&', Some('&')) => (Tok::And, 2),
            ('|', Some('|')) => (Tok::Or, 2),
            ('=' | '&' | '|', _) => {
                return Err(Problem::Expected {
                    expected: "`==`, `&&` or `||`",
                    found: format!("`{c}`"),
                    column: self.column(at),
                })
            }
            ('"' | '\'', _) => {
                let (text, len) = string(trimmed, c)?;
                (Tok::Str(text), len)
            }
            _ => {
                let len = trimmed
                    .find(|c: char| c.is_whitespace() || SPECIAL.contains(&c))
                    .unwrap_or(trimmed.len());
                (Tok::Word(&trimmed[..len]), len)
            }
        };
        self.pos = at + len;
        Ok((tok, at))
    }

    /// One value; `in_args` when it is a call's argument.
    fn value(&mut self, in_args: bool, expected: &'static str) -> Result<Expr, Problem> {
        let (tok, at) = self.bump()?;
        match tok {
            Tok::Str(text) => Ok(Expr::Str(text)),
            Tok::Word(word) if is_number(word) => Ok(Expr::Num(word.to_string())),
            Tok::Word(word) if word.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') => {
                if !matches!(self.peek()?, (Tok::LParen, _)) {
                    return Ok(Expr::Name(word.to_string()));
                }
                self.bump()?;
                self.enter()?;
                let args = self.arguments()?;
                self.leave();
                Ok(Expr::Call(word.to_string(), args))
            }
            Tok::Word(word) if in_args => Err(Problem::NotAnArgument {
                token: word.to_string(),
            }),
            tok => Err(self.expected(expected, &tok, at)),
        }
    }

    /// A call's arguments, after its `(`, up to and including its `)`.
    fn arguments(&mut self) -> Result<Vec<Expr>, Problem> {
        let mut args = Vec::new();
        match self.peek()? {
            (Tok::RParen, _) => {
                self.bump()?;
                return Ok(args);
            }
            (Tok::End, _) => return Err(Problem::Unclosed),
            _ => {}
        }
        loop {
            args.push(self.value(true, "an argument")?);
            match self.bump()? {
                (Tok::Comma, _) => {
                    if matches!(self.peek()?, (Tok::RParen | Tok::End, _)) {
                        return Err(Problem::MissingArgument);
                    }
                }
                (Tok::RParen, _) => return Ok(args),
                (Tok::End, _) => return Err(Problem::Unclosed),
                (tok, _) => {
                    return Err(Problem::NoComma {
                        found: describe(&tok),
                    })
                }
            }
        }
    }

    fn or(&mut self) -> Result<CondExpr, Problem> {
        let mut items = Vec::new();
        loop {
            match self.and()? {
                CondExpr::Or(inner) => items.extend(inner),
                other => items.push(other),
            }
            if !matches!(self.peek()?, (Tok::Or, _)) {
                break;
            }
            self.bump()?;
        }
        Ok(single_or(items, CondExpr::Or))
    }

    fn and(&mut self) -> Result<CondExpr, Problem> {
        let mut items = Vec::new();
        loop {
            match self.not()? {
                CondExpr::And(inner) => items.extend(inner),
                other => items.push(other),
            }
            if !matches!(self.peek()?, (Tok::And, _)) {
                break;
            }
            self.bump()?;
        }
        Ok(single_or(items, CondExpr::And))
    }

    fn not(&mut self) -> Result<CondExpr, Problem> {
        match self.peek()? {
            (Tok::Not, _) => {
                self.bump()?;
                self.enter()?;
                let inner = self.not()?;
                self.leave();
                Ok(CondExpr::Not(Box::new(inner)))
            }
            (Tok::LParen, _) => {
                self.bump()?;
                self.enter()?;
                let inner = self.or()?;
                match self.bump()? {
                    (Tok::RParen, _) => {}
                    (tok, at) => return Err(self.expected("`&&`, `||` or `)`", &tok, at)),
                }
                self.leave();
                Ok(inner)
            }
            _ => self.comparison(),
        }
    }

    fn comparison(&mut self) -> Result<CondExpr, Problem> {
        let left = self.value(false, "a value, `!` or `(`")?;
        let op = match self.peek()? {
            (Tok::Cmp(op), _) => *op,
            _ => return Ok(CondExpr::Bare(left)),
        };
        self.bump()?;
        let right = self.value(false, "a value after the comparison")?;
        if let (Tok::Cmp(_), at) = *self.peek()? {
            return Err(Problem::Chained {
                column: self.column(at),
            });
        }
        Ok(CondExpr::Cmp(op, left, right))
    }
}

/// The one item of a list, or the list wrapped by `wrap`.
fn single_or(mut items: Vec<CondExpr>, wrap: fn(Vec<CondExpr>) -> CondExpr) -> CondExpr {
    if items.len() == 1 {
        items.pop().expect("one item")
    } else {
        wrap(items)
    }
}

/// A quoted string at the start of `src` (whose first character is `quote`): its text
/// with escapes resolved and its length in bytes, quotes included.
fn string(src: &str, quote: char) -> Result<(String, usize), Problem> {
    let mut text = String::new();
    let mut chars = src.char_indices().skip(1);
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, escaped)) => text.push(escaped),
                None => return Err(Problem::UnterminatedString),
            },
            c if c == quote => return Ok((text, i + c.len_utf8())),
            c => text.push(c),
        }
    }
    Err(Problem::UnterminatedString)
}

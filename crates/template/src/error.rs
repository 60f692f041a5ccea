//! Why a template or a condition does not compile: [`TemplateError`] names the
//! placeholder or the condition, and [`Problem`] says what was expected in it.

pub(crate) const FUNCTIONS: &str = "rand_int, rand_float, rand_choice, rand_string, uuid, \
     seq, user, iteration, now_unix, now_iso, now_format, base64, urlencode";

/// The dotted names a template or a condition accepts, for error messages.
pub(crate) const PREFIXES: &str = "cookie.NAME, data.SET.COLUMN, setup.NAME, env.NAME";

/// Largest `now_iso` and `now_format` offset either way, seconds: 100 years. Further is
/// a typo, and the rendered date must stay between 1970 and 9999 (see
/// `render::write_iso`).
pub(crate) const MAX_ISO_OFFSET_S: i64 = 100 * 365 * 24 * 3600;

/// Longest `rand_string(n)`, characters.
pub(crate) const MAX_RAND_STRING: i64 = 4096;

/// Largest magnitude of a `rand_float` bound: its millionths must fit in an `i64`.
pub(crate) const MAX_RAND_FLOAT: i64 = 1_000_000_000_000;

/// Longest condition source, bytes.
pub(crate) const MAX_CONDITION_LEN: usize = 4096;

/// Deepest nesting of parentheses, `!` and calls in one expression.
pub(crate) const MAX_DEPTH: usize = 32;

/// Most `base64`/`urlencode` calls nested in one another: each multiplies the size of
/// what it encodes (by up to 3 for `urlencode`), so the output stays bounded.
pub(crate) const MAX_ENCODINGS: usize = 4;

/// A template or a condition that does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// A `{{` with no `}}` after it.
    #[error("unclosed `{{{{` in {text:?}: expected `}}}}`")]
    Unclosed {
        /// The whole template.
        text: String,
    },
    /// `{{ }}` with nothing inside.
    #[error("empty placeholder `{{{{ }}}}`: expected an expression such as `uuid()`")]
    Empty,
    /// One placeholder's expression is wrong.
    #[error("`{{{{ {expr} }}}}`: {problem}")]
    Placeholder {
        /// The expression, trimmed.
        expr: String,
        /// What is wrong with it.
        problem: Problem,
    },
    /// A condition (`if:`) is wrong.
    #[error("condition `{text}`: {problem}")]
    Condition {
        /// The condition, trimmed and shortened to its first 80 characters.
        text: String,
        /// What is wrong with it.
        problem: Problem,
    },
}

/// What is wrong with one expression (a placeholder's or a condition).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// `env.` followed by something that is not a name.
    #[error("expected an environment variable name after `env.`")]
    EnvName,
    /// `env.NAME` with `NAME` unset at compile time.
    #[error("environment variable {name} is not set")]
    EnvUnset {
        /// The variable.
        name: String,
    },
    /// Neither a variable, `env.NAME`, a quoted string nor a call.
    #[error(
        "expected a variable name, `env.NAME` or a function call ({FUNCTIONS}), or a quoted string"
    )]
    NotAnExpression,
    /// A dotted name whose prefix is not one of the accepted ones.
    #[error("unknown prefix `{prefix}.` in `{name}`: dotted names are {PREFIXES}")]
    UnknownPrefix {
        /// The prefix given.
        prefix: String,
        /// The whole name.
        name: String,
    },
    /// A dotted name with an accepted prefix but a malformed rest.
    #[error("`{name}` is not a valid name: expected {expected}")]
    DottedName {
        /// The whole name.
        name: String,
        /// The shape expected.
        expected: &'static str,
    },
    /// A call without its closing parenthesis.
    #[error("expected `)` at the end of the call")]
    Unclosed,
    /// Arguments given to a function that takes none.
    #[error("{function}() takes no arguments, found {found}")]
    NoArguments {
        /// The function.
        function: String,
        /// How many were given.
        found: usize,
    },
    /// `rand_int(lo, hi)` with `lo > hi`.
    #[error("rand_int(lo, hi) needs lo <= hi, found {lo} > {hi}")]
    RandIntOrder {
        /// The lower bound given.
        lo: i64,
        /// The upper bound given.
        hi: i64,
    },
    /// `rand_int` with other than two integers.
    #[error("rand_int expects 2 integer arguments (lo, hi), found {found}")]
    RandIntArguments {
        /// The kinds of the arguments given.
        found: String,
    },
    /// `rand_float` with other than two numbers.
    #[error("rand_float expects 2 number arguments (lo, hi), found {found}")]
    RandFloatArguments {
        /// The kinds of the arguments given.
        found: String,
    },
    /// `rand_float` with a bound beyond a trillion either way.
    #[error("rand_float's bounds are at most {MAX_RAND_FLOAT} either way, found {value}")]
    RandFloatRange {
        /// The bound given.
        value: String,
    },
    /// `rand_float(lo, hi)` with `lo > hi`, or no millionth between them.
    #[error("rand_float(lo, hi) needs lo <= hi with a multiple of 0.000001 between them, found {lo} and {hi}")]
    RandFloatOrder {
        /// The lower bound given.
        lo: String,
        /// The upper bound given.
        hi: String,
    },
    /// `rand_choice` with a non-string argument.
    #[error("rand_choice expects string arguments, found {found}")]
    RandChoiceArguments {
        /// The kinds of the arguments given.
        found: String,
    },
    /// `rand_choice()`.
    #[error("rand_choice expects at least one string argument")]
    RandChoiceEmpty,
    /// `rand_string` with other than one integer between 1 and the limit.
    #[error("rand_string expects one integer argument from 1 to {MAX_RAND_STRING} (the length), found {found}")]
    RandStringArguments {
        /// The argument or the kinds of the arguments given.
        found: String,
    },
    /// `now_iso` or `now_format` with an offset beyond 100 years.
    #[error(
        "{function}'s offset is at most {MAX_ISO_OFFSET_S} seconds (100 years) either way, found {offset}"
    )]
    IsoOffset {
        /// The function.
        function: &'static str,
        /// The offset given.
        offset: i64,
    },
    /// `now_iso` with other than one integer.
    #[error("now_iso expects one integer argument (offset in seconds), found {found}")]
    IsoArguments {
        /// The kinds of the arguments given.
        found: String,
    },
    /// `now_format` with other than a format and an optional integer.
    #[error("now_format expects a quoted format and an optional integer offset in seconds, found {found}")]
    FormatArguments {
        /// The kinds of the arguments given.
        found: String,
    },
    /// `now_format` with a format that is not a valid strftime format.
    #[error(
        "now_format: {format:?} is not a valid strftime format (such as \"%Y-%m-%d %H:%M:%S\")"
    )]
    BadFormat {
        /// The format given.
        format: String,
    },
    /// `base64` or `urlencode` with other than one argument.
    #[error(
        "{function} expects one argument (a variable, a call or a quoted string), found {found}"
    )]
    EncodeArguments {
        /// The function.
        function: &'static str,
        /// How many were given.
        found: usize,
    },
    /// `base64` and `urlencode` nested too deeply.
    #[error("at most {MAX_ENCODINGS} base64/urlencode calls may be nested in one another")]
    EncodeDepth,
    /// `chance(p)` with other than one number from 0 to 1.
    #[error("chance expects one number argument from 0 to 1 (the probability), found {found}")]
    ChanceArguments {
        /// The argument or the kinds of the arguments given.
        found: String,
    },
    /// `chance(p)` outside a condition, or compared with something.
    #[error("chance(p) is a condition on its own: it is neither compared nor rendered")]
    ChanceNotAValue,
    /// A function that does not exist.
    #[error("unknown function `{function}` (known: {FUNCTIONS})")]
    UnknownFunction {
        /// The name given.
        function: String,
    },
    /// A quoted argument without its closing quote.
    #[error("unterminated string argument")]
    UnterminatedString,
    /// An argument that is neither a number nor a quoted string, where one is needed.
    #[error("expected an integer or a quoted string argument, found `{token}` (only base64 and urlencode take a variable or a call)")]
    NotAnArgument {
        /// What was found.
        token: String,
    },
    /// An integer that does not fit 64 bits, or a number too large to be finite.
    #[error("number `{token}` is out of range")]
    NumberRange {
        /// The number as written.
        token: String,
    },
    /// A `,` with nothing after it.
    #[error("expected an argument after `,`")]
    MissingArgument,
    /// Two arguments without a `,` between them.
    #[error("expected `,` between arguments, found {found}")]
    NoComma {
        /// The token found instead.
        found: String,
    },
    /// Something else than what the grammar allows at this point.
    #[error("expected {expected}, found {found} at column {column}")]
    Expected {
        /// What the grammar allows there.
        expected: &'static str,
        /// The token found, quoted, or "the end".
        found: String,
        /// Where, in characters from 1.
        column: usize,
    },
    /// `a == b == c`.
    #[error("comparisons do not chain: join them with `&&` (column {column})")]
    Chained {
        /// Where the second comparison operator is, in characters from 1.
        column: usize,
    },
    /// Parentheses, `!` and calls nested more than 32 deep.
    #[error("nested more than {MAX_DEPTH} levels deep (parentheses, `!` and calls)")]
    TooDeep,
    /// A condition longer than the limit.
    #[error("a condition is at most {MAX_CONDITION_LEN} bytes, found {len}")]
    TooLong {
        /// Its length, bytes.
        len: usize,
    },
}

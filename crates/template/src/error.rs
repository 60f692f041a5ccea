//! Why a template does not compile: [`TemplateError`] names the placeholder, and
//! [`Problem`] says what was expected in it.

pub(crate) const FUNCTIONS: &str = "rand_int, rand_choice, uuid, seq, now_unix, now_iso";

/// Largest `now_iso` offset either way, seconds: 100 years. Further is a typo, and the
/// rendered date must stay between 1970 and 9999 (see `render::write_iso`).
pub(crate) const MAX_ISO_OFFSET_S: i64 = 100 * 365 * 24 * 3600;

/// A template that does not compile.
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
}

/// What is wrong with one placeholder's expression.
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
    /// Neither a variable, `env.NAME` nor a call.
    #[error("expected a variable name, `env.NAME` or a function call ({FUNCTIONS})")]
    NotAnExpression,
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
    /// `rand_choice` with a non-string argument.
    #[error("rand_choice expects string arguments, found {found}")]
    RandChoiceArguments {
        /// The kinds of the arguments given.
        found: String,
    },
    /// `rand_choice()`.
    #[error("rand_choice expects at least one string argument")]
    RandChoiceEmpty,
    /// `now_iso` with an offset beyond 100 years.
    #[error(
        "now_iso's offset is at most {MAX_ISO_OFFSET_S} seconds (100 years) either way, found {offset}"
    )]
    IsoOffset {
        /// The offset given.
        offset: i64,
    },
    /// `now_iso` with other than one integer.
    #[error("now_iso expects one integer argument (offset in seconds), found {found}")]
    IsoArguments {
        /// The kinds of the arguments given.
        found: String,
    },
    /// A function that does not exist.
    #[error("unknown function `{function}` (known: {FUNCTIONS})")]
    UnknownFunction {
        /// The name given.
        function: String,
    },
    /// A quoted argument without its closing quote.
    #[error("unterminated string argument")]
    UnterminatedString,
    /// An argument that is neither an integer nor a quoted string.
    #[error("expected an integer or a quoted string argument, found `{token}`")]
    NotAnArgument {
        /// What was found.
        token: String,
    },
    /// A `,` with nothing after it.
    #[error("expected an argument after `,`")]
    MissingArgument,
    /// Two arguments without a `,` between them.
    #[error("expected `,` between arguments, found `{found}`")]
    NoComma {
        /// The character found instead.
        found: char,
    },
}

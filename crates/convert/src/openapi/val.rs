//! The value a request sends, as the generator builds it: a leaf, so the formats and
//! the generator that uses them share it without importing each other.

/// The longest string generated for `minLength`, and the most array items for
/// `minItems`, beyond which the schema's bound is not met (and the value says so).
pub(crate) const MAX_GENERATED_LEN: usize = 4096;

/// A value to send: literal data from the document or generated, or a template
/// expression (without its braces) rendered per request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    /// Literal text (any `{{` in it is escaped when written).
    Str(String),
    /// A template expression such as `uuid()`.
    Tpl(&'static str),
    Seq(Vec<Val>),
    Map(Vec<(String, Val)>),
}

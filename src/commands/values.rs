//! Flag values that clap parses with our own rules, and [`ValueError`], what they return
//! when a value does not parse. A leaf of the commands: the flag structs (`args`), the
//! commands and the error type all import it.

/// A flag value that does not parse: what was expected and what was found. What
/// clap's value parsers return.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected {expected}, found {found:?}")]
pub struct ValueError {
    /// What the flag takes, e.g. `key=value`.
    pub expected: &'static str,
    /// The text given.
    pub found: String,
}

impl ValueError {
    /// `text` given where `expected` was.
    pub fn new(expected: &'static str, text: &str) -> ValueError {
        ValueError {
            expected,
            found: text.to_string(),
        }
    }
}

/// Parses a precision as a percentage, with or without `%` (`5%`, `2.5`), into a
/// fraction (0.05, 0.025). It must lie strictly between 0 % and 100 %.
pub fn parse_percent(text: &str) -> Result<f64, ValueError> {
    let number = text.trim().trim_end_matches('%').trim();
    let p: f64 = number
        .parse()
        .map_err(|_| ValueError::new("a percentage such as 5%", text))?;
    if p > 0.0 && p < 100.0 {
        Ok(p / 100.0)
    } else {
        Err(ValueError::new("a percentage between 0% and 100%", text))
    }
}

/// Parses `find --hold`'s duration (`10m`, `90s`, `1h`): at least
/// [`MIN_HOLD`](crate::search::hold::MIN_HOLD), whose thirds give a first and a last
/// part to compare.
pub fn parse_hold(text: &str) -> Result<std::time::Duration, ValueError> {
    match crate::scenario::parse_duration(text) {
        Ok(d) if d >= crate::search::hold::MIN_HOLD => Ok(d),
        Ok(_) => Err(ValueError::new("a hold of at least 3s", text)),
        Err(crate::scenario::DurationError::TooLong { .. }) => {
            Err(ValueError::new("a hold of at most a year (8760h)", text))
        }
        Err(_) => Err(ValueError::new("a duration such as 10m, 90s or 1h", text)),
    }
}

/// Parses `key=value` (the value may be empty and may hold `=`; the key may not be empty).
pub fn parse_label(text: &str) -> Result<(String, String), ValueError> {
    match text.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => {
            Ok((key.trim().to_string(), value.to_string()))
        }
        _ => Err(ValueError::new("key=value", text)),
    }
}

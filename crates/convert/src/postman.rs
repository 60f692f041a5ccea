//! A Postman v2.1 collection as a scenario.

use crate::{ConvertError, Converted, Source};

/// Converts `source`.
pub fn convert(source: Source<'_>) -> Result<Converted, ConvertError> {
    source.check_size()?;
    Err(source.unusable(0, "not built yet"))
}

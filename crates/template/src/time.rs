//! `now_format(FMT, offset_s)`: a strftime format parsed once, when the template
//! compiles, into chrono's formatting items; rendering walks the items.

use std::fmt;

use chrono::format::{Item, StrftimeItems};
use chrono::{DateTime, Utc};

use crate::error::Problem;
use crate::write::json_escape;
use crate::Escape;

/// A compiled `now_format`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TimeFormat {
    /// The format as written (for `Display`).
    pub(crate) source: String,
    /// Seconds added to the current time.
    pub(crate) offset: i64,
    /// The format parsed, its literal text already escaped for the template.
    items: Vec<Item<'static>>,
}

impl TimeFormat {
    /// Parses `source`; an unknown specifier or a format chrono cannot write is
    /// [`Problem::BadFormat`].
    pub(crate) fn compile(source: &str, offset: i64, escape: Escape) -> Result<Self, Problem> {
        let bad = || Problem::BadFormat {
            format: source.to_owned(),
        };
        let items = StrftimeItems::new(source)
            .parse_to_owned()
            .map_err(|_| bad())?;
        // Formatting can still fail on an item a UTC time cannot give; find out now.
        let probe = DateTime::<Utc>::from_timestamp(0, 0).ok_or_else(bad)?;
        let mut text = String::new();
        probe
            .format_with_items(items.iter())
            .write_to(&mut text)
            .map_err(|_| bad())?;
        let items = items.into_iter().map(|i| escaped(i, escape)).collect();
        Ok(TimeFormat {
            source: source.to_owned(),
            offset,
            items,
        })
    }

    /// Writes the time `now` (seconds since the epoch) plus the offset.
    pub(crate) fn write(&self, now: u64, out: &mut Vec<u8>) {
        let at = i64::try_from(now)
            .unwrap_or(i64::MAX)
            .saturating_add(self.offset);
        let Some(time) = DateTime::<Utc>::from_timestamp(at, 0) else {
            return;
        };
        // Validated at compile time; writing into a Vec cannot fail otherwise.
        let _ = time
            .format_with_items(self.items.iter())
            .write_to(&mut Bytes(out));
    }
}

/// A literal item escaped for the template: the text between specifiers, and `%n`
/// and `%t`, may need JSON escaping; what specifiers write never does.
fn escaped(item: Item<'static>, escape: Escape) -> Item<'static> {
    let text = match (&item, escape) {
        (Item::OwnedLiteral(s) | Item::OwnedSpace(s), Escape::Json) => s.to_string(),
        (Item::Literal(s) | Item::Space(s), Escape::Json) => s.to_string(),
        _ => return item,
    };
    let mut out = Vec::with_capacity(text.len());
    json_escape(text.as_bytes(), &mut out);
    Item::OwnedLiteral(
        String::from_utf8(out)
            .expect("JSON escaping keeps UTF-8 valid")
            .into_boxed_str(),
    )
}

/// `fmt::Write` appending to a byte buffer.
struct Bytes<'a>(&'a mut Vec<u8>);

impl fmt::Write for Bytes<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

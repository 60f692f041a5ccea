//! How headroom writes figures for people: human units ([`units`]: latencies, rates,
//! percentages, durations) and plain aligned tables ([`table`]). A leaf crate, so the
//! search's live lines and messages and every report format write numbers the same way
//! without the search importing the report layer.

pub mod table;
pub mod units;

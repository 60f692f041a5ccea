//! The end-of-run text summary.

use crate::metrics::summary::Summary;

/// Renders a summary for the terminal.
pub fn render(summary: &Summary) -> String {
    serde_json::to_string_pretty(summary).unwrap_or_default()
}

//! The JSON report of one stored run: its summary exactly as stored (the v1 contract
//! of ARCHITECTURE.md, with any fields added since, such as `watches`).

use crate::store::StoredRun;

/// The stored summary, pretty-printed; `None` for a run that ended without one.
pub fn render(run: &StoredRun) -> Option<String> {
    run.summary_json
        .as_ref()
        .map(|v| serde_json::to_string_pretty(v).expect("a JSON value serializes") + "\n")
}

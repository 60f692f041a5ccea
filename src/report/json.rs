//! The JSON report of one stored run: its summary exactly as stored (the v1 contract
//! of ARCHITECTURE.md, with any fields added since, such as `watches`), and
//! [`write_json`], how every JSON file headroom writes (`--out`, kept shares) is
//! written: atomically.

use std::io::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::store::StoredRun;

/// The stored summary, pretty-printed; `None` for a run that ended without one.
pub fn render(run: &StoredRun) -> Option<String> {
    run.summary_json
        .as_ref()
        .map(|v| serde_json::to_string_pretty(v).expect("a JSON value serializes") + "\n")
}

/// Writes `value` as pretty JSON atomically (temp file + rename), so a reader never
/// sees half a file. The temp file is flushed to disk before the rename, so a full disk
/// is an error here rather than a truncated file later; on any error it is removed, so
/// a failed write leaves nothing behind (an earlier file at `path` is left as it was).
pub fn write_json(path: &Path, value: &impl Serialize) -> std::io::Result<()> {
    let mut text = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
    text.push(b'\n');
    let tmp = path.with_extension("json.partial");
    let written = std::fs::File::create(&tmp)
        .and_then(|mut f| {
            f.write_all(&text)?;
            f.sync_all()
        })
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

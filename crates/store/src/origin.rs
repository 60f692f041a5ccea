//! Where a run came from: the scenario file's hash and the working directory's git
//! commit, both best effort (a missing file or repository leaves them empty).

use std::path::Path;
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

/// Hex sha256 of the file's text; `None` when it cannot be read.
pub fn scenario_hash(path: &Path) -> Option<String> {
    let text = std::fs::read(path).ok()?;
    Some(
        Sha256::digest(&text)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    )
}

/// `git rev-parse HEAD` in the working directory; `None` when git is missing or this
/// is not a repository.
pub fn git_commit() -> Option<String> {
    let out = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let commit = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !commit.is_empty()).then_some(commit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_sha256_of_the_text() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.yaml");
        std::fs::write(&path, "abc").unwrap();
        assert_eq!(
            scenario_hash(&path).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(scenario_hash(&dir.path().join("missing")), None);
    }
}

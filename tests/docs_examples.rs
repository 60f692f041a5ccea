//! Issue 28, item 5: the guide (`docs/`, an mdBook) cannot drift from the code.
//!
//! - The reference pages, `docs/src/reference/*.md`, are exactly what
//!   `docs/gen-reference.sh` writes from this build's `headroom CMD --help` and
//!   `headroom schema`; each is listed in `docs/src/SUMMARY.md`.
//! - Every example, `docs/examples/*.yaml`, passes `headroom check` and the JSON
//!   Schema of `headroom schema`, and points only at loopback.
//! - The chapters show YAML only by including those files
//!   (`{{#include ../examples/NAME.yaml}}`): a ```yaml block with anything else in it
//!   fails, so no example escapes the check. Every example is included somewhere, and
//!   the README's YAML blocks are copies of examples.
//! - The examples whose first line says they run against the built-in target, with a
//!   constant load (`--duration` cannot shorten stages), run for a second against one
//!   started here: `--url` replaces their `target:`. They must send requests and exit
//!   0 or 99 (a threshold may fail on a busy machine), with no failure that a wrong
//!   path, body or expectation would cause (`status_4xx`, `check`, `protocol`,
//!   `graphql`).

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use headroom::target::{self, TargetOptions};

use crate::support::{headroom_bin, require, run_headroom, run_with_summary, stderr, stdout};

/// The first line of an example written against the built-in target's default address.
const BUILT_IN_MARK: &str = "# Against the built-in target";

/// Error kinds a broken example causes (a wrong path or body, an expectation that
/// cannot hold), as opposed to what a busy machine causes (timeouts, late streams).
const EXAMPLE_FAULTS: [&str; 4] = ["status_4xx", "check", "protocol", "graphql"];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The files of `dir` whose name ends with `ext`, sorted.
fn files_with(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.is_file() && p.to_string_lossy().ends_with(ext))
        .collect();
    found.sort();
    found
}

/// Every `*.md` under `dir`, recursively.
fn markdown_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(markdown_under(&path));
        } else if path.extension().is_some_and(|e| e == "md") {
            found.push(path);
        }
    }
    found.sort();
    found
}

fn examples() -> Vec<PathBuf> {
    let found = files_with(&repo().join("docs/examples"), ".yaml");
    assert!(found.len() >= 10, "too few examples: {found:?}");
    found
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn name_of(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

/// A fenced code block: its info string, first line number (1-based) and content.
struct Fence {
    info: String,
    line: usize,
    body: Vec<String>,
}

/// The fenced code blocks (``` or ~~~) of a Markdown text.
fn fences(text: &str) -> Vec<Fence> {
    let mut out = Vec::new();
    let mut open: Option<(String, Fence)> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        match &mut open {
            None => {
                for marker in ["```", "~~~"] {
                    if let Some(info) = trimmed.strip_prefix(marker) {
                        let run = marker.len()
                            + info
                                .chars()
                                .take_while(|&c| c == marker.as_bytes()[0] as char)
                                .count();
                        let fence = trimmed[..run].to_string();
                        open = Some((
                            fence,
                            Fence {
                                info: trimmed[run..].trim().to_string(),
                                line: i + 1,
                                body: Vec::new(),
                            },
                        ));
                        break;
                    }
                }
            }
            Some((fence, block)) => {
                if trimmed.starts_with(fence.as_str())
                    && trimmed
                        .trim_start_matches(fence.chars().next().unwrap())
                        .trim()
                        .is_empty()
                {
                    out.push(open.take().unwrap().1);
                } else {
                    block.body.push(line.to_string());
                }
            }
        }
    }
    assert!(open.is_none(), "a code block is never closed");
    out
}

fn is_yaml(info: &str) -> bool {
    let lang = info.split([' ', ',', '{']).next().unwrap_or("");
    lang.eq_ignore_ascii_case("yaml") || lang.eq_ignore_ascii_case("yml")
}

/// The file an mdBook include directive names, if `line` is one.
fn include_of(line: &str) -> Option<&str> {
    let rest = line
        .trim()
        .strip_prefix("{{#include ")?
        .strip_suffix("}}")?;
    // `{{#include file:anchor}}` or `file:10:20` include a part of the file.
    Some(rest.trim().split(':').next().unwrap())
}

#[test]
fn reference_pages_are_what_the_script_writes_from_this_build() {
    let Some(_) = require(
        "python3 (docs/gen-reference.sh)",
        Command::new("python3").arg("--version").output(),
    ) else {
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let script = repo().join("docs/gen-reference.sh");
    let done = Command::new("bash")
        .arg(&script)
        .arg(headroom_bin())
        .arg(out.path())
        .stdin(Stdio::null())
        .output()
        .expect("run bash docs/gen-reference.sh");
    assert!(
        done.status.success(),
        "docs/gen-reference.sh failed:\n{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let committed_dir = repo().join("docs/src/reference");
    let names = |dir: &Path| -> BTreeSet<String> {
        files_with(dir, ".md").iter().map(|p| name_of(p)).collect()
    };
    let generated = names(out.path());
    assert!(
        generated.contains("run.md") && generated.contains("scenario.md"),
        "{generated:?}"
    );
    let fix = "regenerate them: cargo build --release && bash docs/gen-reference.sh";
    assert_eq!(
        names(&committed_dir),
        generated,
        "docs/src/reference/ holds other pages than the script writes; {fix}"
    );
    for name in &generated {
        let want = read(&out.path().join(name));
        let have = read(&committed_dir.join(name));
        if want != have {
            let (n, (w, h)) = want
                .lines()
                .chain(std::iter::repeat(""))
                .zip(have.lines().chain(std::iter::repeat("")))
                .enumerate()
                .find(|(_, (w, h))| w != h)
                .unwrap();
            panic!(
                "docs/src/reference/{name} is not what this build's help and schema give; {fix}\n\
                 first difference, line {}:\n  committed: {h}\n  generated: {w}",
                n + 1
            );
        }
    }
    let summary = read(&repo().join("docs/src/SUMMARY.md"));
    for name in &generated {
        assert!(
            summary.contains(&format!("(reference/{name})")),
            "docs/src/SUMMARY.md does not list reference/{name}"
        );
    }
}

#[test]
fn every_example_passes_check() {
    for example in examples() {
        let out = run_headroom(
            [OsStr::new("check"), example.as_os_str()],
            Duration::from_secs(60),
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "headroom check {} failed:\n{}{}",
            example.display(),
            stdout(&out),
            stderr(&out)
        );
        assert!(stdout(&out).contains("valid:"), "{}", stdout(&out));
    }
}

#[test]
fn the_schema_accepts_every_example() {
    let out = run_headroom(["schema"], Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let schema: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("a valid JSON Schema");
    for example in examples() {
        let text = read(&example);
        let instance: serde_json::Value =
            serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", example.display()));
        let errors: Vec<String> = validator
            .iter_errors(&instance)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{}: {errors:#?}", example.display());
    }
}

#[test]
fn examples_point_only_at_loopback() {
    for example in examples() {
        let text = read(&example);
        for (n, line) in text.lines().enumerate() {
            let mut rest = line;
            while let Some(at) = rest.find("://") {
                let after = &rest[at + 3..];
                let authority: String = after
                    .chars()
                    .take_while(|c| {
                        !matches!(c, '/' | '"' | '\'' | '#' | ' ' | '?' | ',' | ')' | '`')
                    })
                    .collect();
                rest = after;
                if authority.is_empty() {
                    continue; // `http://` named in prose, no address
                }
                let host_port = authority.rsplit('@').next().unwrap();
                let host = if host_port.starts_with('[') {
                    host_port.split(']').next().unwrap().to_string() + "]"
                } else {
                    host_port.split(':').next().unwrap().to_string()
                };
                assert!(
                    matches!(host.as_str(), "127.0.0.1" | "localhost" | "[::1]"),
                    "{}:{}: {host} is not loopback: examples point only at 127.0.0.1 or localhost",
                    example.display(),
                    n + 1
                );
            }
            if let Some(target) = line.strip_prefix("target: ") {
                assert!(
                    target.contains("://127.0.0.1") || target.contains("://localhost"),
                    "{}:{}: target {target} is not on loopback",
                    example.display(),
                    n + 1
                );
            }
        }
    }
}

#[test]
fn chapters_show_yaml_only_by_including_examples() {
    let src = repo().join("docs/src");
    let mut included = BTreeSet::new();
    let mut loose = Vec::new();
    for page in markdown_under(&src) {
        let text = read(&page);
        let shown = page.strip_prefix(repo()).unwrap().display().to_string();
        for fence in fences(&text) {
            for line in &fence.body {
                if let Some(file) = include_of(line) {
                    let path = page.parent().unwrap().join(file);
                    assert!(
                        path.is_file(),
                        "{shown}: {{{{#include {file}}}}} names no file"
                    );
                    if let Ok(canonical) = path.canonicalize() {
                        included.insert(canonical);
                    }
                }
            }
            if !is_yaml(&fence.info) {
                continue;
            }
            let own = fence
                .body
                .iter()
                .any(|l| !l.trim().is_empty() && include_of(l).is_none());
            if own || fence.body.iter().all(|l| l.trim().is_empty()) {
                loose.push(format!("{shown}:{}", fence.line));
            }
        }
    }
    assert!(
        loose.is_empty(),
        "YAML written into a chapter instead of included from docs/examples/ \
         (put it in docs/examples/NAME.yaml, where `headroom check` checks it, and write \
         {{{{#include ../examples/NAME.yaml}}}}): {loose:?}"
    );
    for example in examples() {
        assert!(
            included.contains(&example.canonicalize().unwrap()),
            "{} is included by no chapter",
            example.display()
        );
    }
}

#[test]
fn readme_yaml_blocks_are_examples() {
    let contents: Vec<String> = examples().iter().map(|p| read(p)).collect();
    let readme = read(&repo().join("README.md"));
    for fence in fences(&readme) {
        if !is_yaml(&fence.info) {
            continue;
        }
        let body = fence.body.join("\n") + "\n";
        assert!(
            contents.contains(&body),
            "README.md:{}: a YAML block that is not a copy of a file in docs/examples/",
            fence.line
        );
    }
}

#[test]
fn built_in_target_examples_run() {
    let target = target::spawn(TargetOptions::loopback()).expect("start the built-in target");
    let url = target.url();
    let mut ran = 0;
    for example in examples() {
        let text = read(&example);
        if !text.starts_with(BUILT_IN_MARK) || text.contains("stages:") {
            continue;
        }
        assert!(
            text.contains("target: http://127.0.0.1:8080"),
            "{} says it runs against the built-in target but targets something else",
            example.display()
        );
        let dir = tempfile::tempdir().unwrap();
        let file = example.display().to_string();
        let (out, summary) = run_with_summary(
            dir.path(),
            &[&file, "--url", &url, "--duration", "1s"],
            Duration::from_secs(90),
        );
        assert!(
            matches!(out.status.code(), Some(0 | 99)),
            "headroom run {file} exited {:?}:\n{}",
            out.status.code(),
            stderr(&out)
        );
        assert!(
            summary.requests > 0,
            "{file}: no requests\n{}",
            stderr(&out)
        );
        for kind in EXAMPLE_FAULTS {
            assert!(
                !summary.errors.by_kind.contains_key(kind),
                "{file}: {kind} errors against the built-in target: {:?}\n{}",
                summary.errors.by_kind,
                stderr(&out)
            );
        }
        ran += 1;
    }
    assert!(
        ran >= 8,
        "only {ran} examples ran against the built-in target"
    );
}

/// The guide's k6 scripts, `docs/examples/*.js`: each converts with nothing left out
/// (`--strict`), passes `headroom check`, is included by a chapter, and runs for two
/// seconds against the built-in target as `headroom run SCRIPT.js` (its `BASE_URL`
/// from the environment, as k6 users write it) with no failure a wrong request causes.
#[test]
fn k6_examples_convert_whole_and_run_against_the_built_in_target() {
    let scripts = files_with(&repo().join("docs/examples"), ".js");
    assert!(!scripts.is_empty(), "no k6 example in docs/examples");
    let chapters: String = markdown_under(&repo().join("docs/src"))
        .iter()
        .map(|p| read(p))
        .collect();
    let target = target::spawn(TargetOptions::loopback()).expect("start the built-in target");
    for script in scripts {
        let file = script.display().to_string();
        let name = script.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            chapters.contains(&format!("{{{{#include ../examples/{name}}}}}")),
            "{name} is included by no chapter"
        );
        assert!(
            read(&script).starts_with("// Against the built-in target"),
            "{name}"
        );
        let out = run_headroom(
            ["convert", "k6", &file, "--strict"],
            Duration::from_secs(30),
        );
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
        let out = run_headroom(["check", &file], Duration::from_secs(30));
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
        let dir = tempfile::tempdir().unwrap();
        let summary_file = dir.path().join("s.json");
        let mut command = Command::new(headroom_bin());
        command
            .args([
                "run",
                &file,
                "--users",
                "2",
                "--duration",
                "2s",
                "--quiet",
                "--out",
            ])
            .arg(&summary_file)
            .env("BASE_URL", target.url());
        let out = crate::support::run_command(command, Duration::from_secs(60));
        assert!(
            matches!(out.status.code(), Some(0 | 99)),
            "{name} exited {:?}:\n{}",
            out.status.code(),
            stderr(&out)
        );
        let summary = crate::support::read_summary(&summary_file);
        assert!(summary.requests > 0, "{name}: no requests");
        for kind in EXAMPLE_FAULTS {
            assert!(
                !summary.errors.by_kind.contains_key(kind),
                "{name}: {kind} errors: {:?}",
                summary.errors.by_kind
            );
        }
    }
}

//! Hostile files: each is refused with a clear error, holding memory within a bound
//! set by the limits (counted by the test allocator), not by what the file claims.

use super::tests::file;
use super::*;

#[path = "../../../../tests/support/alloc.rs"]
mod alloc;

const MIB: usize = 1 << 20;

/// Loads `bytes` as the file `name` within `limits`: the error and the most bytes held
/// at once while loading.
fn refused_within(name: &str, bytes: &[u8], limits: &DataLimits) -> (DataError, usize) {
    let (_dir, path) = file(name, bytes);
    let (result, peak) = alloc::peak_during(|| DataSet::load("hostile", &path, limits));
    (result.expect_err("refused"), peak)
}

fn refused(name: &str, bytes: &[u8]) -> (DataError, usize) {
    refused_within(name, bytes, &DataLimits::default())
}

/// Pseudo-random bytes (a fixed xorshift, so the test is the same every run).
fn noise(len: usize, mut seed: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 24) as u8
        })
        .collect()
}

#[test]
fn one_field_of_10_mib_is_refused_as_it_is_read() {
    let mut csv = b"id,blob\n1,".to_vec();
    csv.resize(csv.len() + 10 * MIB, b'x');
    csv.extend_from_slice(b"\n2,y\n");
    let (e, peak) = refused("big.csv", &csv);
    assert_eq!(e.line, Some(2), "{e}");
    assert!(
        matches!(e.problem, Problem::CellTooLong { ref column, limit } if column == "blob" && limit == MIB),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains("big.csv:2: the value of column `blob` is longer"),
        "{e}"
    );
    // The limit (1 MiB) plus a growth step and the read buffer, not the 10 MiB field.
    assert!(peak < 4 * MIB, "held {peak} bytes");

    // Quoted, so the parser is in a quoted field throughout.
    let mut csv = b"id,blob\n1,\"".to_vec();
    csv.resize(csv.len() + 10 * MIB, b'x');
    csv.extend_from_slice(b"\"\n");
    let (e, peak) = refused("big.csv", &csv);
    assert!(matches!(e.problem, Problem::CellTooLong { .. }), "{e}");
    assert!(peak < 4 * MIB, "held {peak} bytes");
}

#[test]
fn a_json_string_of_10_mib_is_refused_holding_about_its_size() {
    let mut json = b"[{\"id\": 1, \"blob\": \"".to_vec();
    json.resize(json.len() + 10 * MIB, b'x');
    json.extend_from_slice(b"\"}]");
    let (e, peak) = refused("big.json", &json);
    assert!(
        matches!(e.problem, Problem::CellTooLong { ref column, .. } if column == "blob"),
        "{e}"
    );
    assert_eq!(e.line, Some(1), "{e}");
    // serde_json holds a string whole before it can be looked at: bounded by the longest
    // string of the file (itself within the file limit), not by more than that.
    assert!(peak < 3 * 10 * MIB, "held {peak} bytes");
    let (e, _) = refused("big.jsonl", &json[1..json.len() - 1]);
    assert!(matches!(e.problem, Problem::CellTooLong { .. }), "{e}");
}

#[test]
fn a_header_of_100_000_columns_is_refused_early() {
    let header: Vec<String> = (0..100_000).map(|i| format!("c{i}")).collect();
    let csv = format!("{}\n{}\n", header.join(","), vec!["1"; 100_000].join(","));
    let (e, peak) = refused("wide.csv", csv.as_bytes());
    assert_eq!(e.line, Some(1), "{e}");
    assert!(
        matches!(e.problem, Problem::TooManyColumns { limit: 1024 }),
        "{e}"
    );
    assert!(peak < 2 * MIB, "held {peak} bytes");

    let keys: Vec<String> = (0..100_000).map(|i| format!("\"c{i}\": 1")).collect();
    let json = format!("[{{{}}}]", keys.join(", "));
    let (e, peak) = refused("wide.json", json.as_bytes());
    assert!(
        matches!(e.problem, Problem::TooManyColumns { limit: 1024 }),
        "{e}"
    );
    assert!(peak < 2 * MIB, "held {peak} bytes");
}

#[test]
fn a_binary_file_is_refused() {
    // A PNG's signature and noise: not UTF-8 on its first line.
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend(noise(MIB, 7));
    let (e, peak) = refused("image.csv", &png);
    assert_eq!(e.line, Some(1), "{e}");
    assert!(matches!(e.problem, Problem::InvalidUtf8 { .. }), "{e}");
    assert!(e.to_string().contains("image.csv:1: not UTF-8 text"), "{e}");
    assert!(peak < 4 * MIB, "held {peak} bytes");
    // Noise alone, under every name: refused (which check trips first depends on the
    // bytes), within the same bound.
    for seed in 1..=5 {
        for name in ["noise.csv", "noise.json", "noise.jsonl"] {
            let (e, peak) = refused(name, &noise(MIB, seed));
            assert!(
                e.to_string().starts_with(&format!("{}", e.file.display())),
                "{e}"
            );
            assert!(peak < 4 * MIB, "{name} #{seed}: held {peak} bytes ({e})");
        }
    }
}

#[test]
fn a_truncated_quote_is_refused() {
    // The last record's quote never closes: it swallows the rest of the file.
    let mut csv = b"id,name\n1,ok\n2,\"trunc".to_vec();
    for i in 0..10_000 {
        csv.extend_from_slice(format!("\n{i},row").as_bytes());
    }
    let (e, peak) = refused("cut.csv", &csv);
    assert_eq!(e.line, Some(3), "{e}");
    assert!(matches!(e.problem, Problem::UnclosedQuote), "{e}");
    assert!(peak < 4 * MIB, "held {peak} bytes");
    // Cut early in a large file: the quoted field grows past the cell limit first.
    let mut csv = b"id,name\n1,\"cut\n".to_vec();
    csv.extend((0..500_000).flat_map(|i| format!("{i},row\n").into_bytes()));
    let (e, peak) = refused("cut.csv", &csv);
    assert!(matches!(e.problem, Problem::CellTooLong { .. }), "{e}");
    assert_eq!(e.line, Some(2), "{e}");
    assert!(peak < 4 * MIB, "held {peak} bytes");
    // In a file smaller than the cell limit: the end of the file finds it open.
    let (e, _) = refused("cut.csv", &csv[..100_000]);
    assert!(matches!(e.problem, Problem::UnclosedQuote), "{e}");
    assert_eq!(e.line, Some(2), "{e}");
}

#[test]
fn a_file_over_the_size_limit_is_refused_before_it_is_read() {
    let limits = DataLimits {
        max_file_bytes: 1000,
        ..DataLimits::default()
    };
    let csv = format!("a\n{}", "1\n".repeat(1000));
    let (e, peak) = refused_within("big.csv", csv.as_bytes(), &limits);
    assert!(
        matches!(e.problem, Problem::TooLarge { limit: 1000 }),
        "{e}"
    );
    assert!(
        e.to_string()
            .ends_with("big.csv: larger than the limit of 1000 bytes"),
        "{e}"
    );
    assert!(peak < 64 * 1024, "held {peak} bytes");
    // Exactly the limit: read.
    let csv = format!("a\n{}", "1\n".repeat(499));
    let (_dir, path) = file("edge.csv", csv.as_bytes());
    assert_eq!(DataSet::load("s", &path, &limits).unwrap().len(), 499);
}

#[test]
fn the_reader_enforces_the_limit_on_what_it_reads() {
    // A file that grows after its size was read, or a pipe (size 0), meets the reader.
    let mut input = Limited {
        inner: &b"0123456789"[..],
        left: 4,
    };
    let mut out = Vec::new();
    let e = std::io::Read::read_to_end(&mut input, &mut out).unwrap_err();
    assert!(matches!(
        io_problem(e, &limits_of(4)),
        Problem::TooLarge { limit: 4 }
    ));
    let mut input = Limited {
        inner: &b"0123"[..],
        left: 4,
    };
    out.clear();
    std::io::Read::read_to_end(&mut input, &mut out).unwrap();
    assert_eq!(out, b"0123");
}

fn limits_of(bytes: u64) -> DataLimits {
    DataLimits {
        max_file_bytes: bytes,
        ..DataLimits::default()
    }
}

#[test]
fn deep_json_nesting_is_refused_without_overflowing_the_stack() {
    let json = format!(
        "[{{\"a\": {}{}}}]",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let (e, _) = refused("deep.json", json.as_bytes());
    assert!(
        matches!(e.problem, Problem::Json(ref m) if m.contains("recursion")),
        "{e}"
    );
}

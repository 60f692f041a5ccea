//! Loading CSV, JSON and JSON Lines: what is read, and what is refused with which line.

use std::path::{Path, PathBuf};

use super::*;

/// A file `name` holding `bytes` in a new temporary directory (kept alive by the guard).
pub(super) fn file(name: &str, bytes: impl AsRef<[u8]>) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    (dir, path)
}

/// Loads `bytes` as the file `name` with the default limits.
pub(super) fn load(name: &str, bytes: impl AsRef<[u8]>) -> Result<DataSet, DataError> {
    let (_dir, path) = file(name, bytes);
    DataSet::load("set", &path, &DataLimits::default())
}

/// Every row's cells.
pub(super) fn rows(set: &DataSet) -> Vec<Vec<&str>> {
    (0..set.len())
        .map(|r| (0..set.columns().len()).map(|c| set.cell(r, c)).collect())
        .collect()
}

/// The error of loading `bytes` as `name`: its line and problem.
fn refused(name: &str, bytes: impl AsRef<[u8]>) -> (Option<u64>, Problem, String) {
    let e = load(name, bytes).expect_err("refused");
    let shown = e.to_string();
    (e.line, e.problem, shown)
}

#[test]
fn reads_a_csv_header_and_rows() {
    let set = load("a.csv", "id,username,password\n1,alice,pw1\n2,bob,pw2\n").unwrap();
    assert_eq!(set.name(), "set");
    assert_eq!(set.columns(), ["id", "username", "password"]);
    assert_eq!(set.column("username"), Some(1));
    assert_eq!(set.column("nope"), None);
    assert_eq!(set.len(), 2);
    assert!(!set.is_empty());
    assert_eq!(rows(&set), [["1", "alice", "pw1"], ["2", "bob", "pw2"]]);
    assert!(set.file().ends_with("a.csv"));
    assert!(set.heap_bytes() > 0);
}

#[test]
fn reads_quotes_embedded_line_breaks_crlf_a_bom_and_blank_lines() {
    let text = "\u{feff}name,note\r\n\"Smith, J\",\"said \"\"hi\"\"\"\r\n\r\n\"multi\r\nline\",\r\nlast,\"x\"";
    let set = load("q.CSV", text).unwrap();
    assert_eq!(set.columns(), ["name", "note"]);
    assert_eq!(
        rows(&set),
        [
            ["Smith, J", "said \"hi\""],
            ["multi\r\nline", ""],
            ["last", "x"]
        ]
    );
}

#[test]
fn reads_unicode_and_empty_cells() {
    let set = load("u.csv", "a,b,c\n,é,日本\n\"\",,\n").unwrap();
    assert_eq!(rows(&set), [["", "é", "日本"], ["", "", ""]]);
}

#[test]
fn a_row_with_another_number_of_fields_names_its_line() {
    // The bad row is on line 5: the quoted field of line 3 spans two lines.
    let (line, problem, shown) = refused("a.csv", "a,b\n1,2\n\"x\ny\",3\n4,5,6\n");
    assert_eq!(line, Some(5), "{shown}");
    assert!(matches!(
        problem,
        Problem::FieldCount {
            expected: 2,
            found: 3
        }
    ));
    assert!(
        shown.ends_with("a.csv:5: 3 fields where the header has 2"),
        "{shown}"
    );
    // CRLF: the same line numbers.
    let (line, problem, _) = refused("a.csv", "a,b\r\n1,2\r\n\r\n3\r\n");
    assert_eq!(line, Some(4));
    assert!(matches!(
        problem,
        Problem::FieldCount {
            expected: 2,
            found: 1
        }
    ));
}

#[test]
fn refuses_duplicate_and_unnamed_columns() {
    let (line, problem, shown) = refused("a.csv", "id,name,id\n1,2,3\n");
    assert_eq!(line, Some(1));
    assert!(
        matches!(problem, Problem::DuplicateColumn(ref c) if c == "id"),
        "{shown}"
    );
    let (_, problem, shown) = refused("a.csv", "id,,x\n1,2,3\n");
    assert!(matches!(problem, Problem::UnnamedColumn(2)), "{shown}");
}

#[test]
fn refuses_a_file_empty_or_without_rows() {
    assert!(matches!(refused("a.csv", "").1, Problem::Empty));
    assert!(matches!(refused("a.csv", "\n\r\n\n").1, Problem::Empty));
    assert!(matches!(refused("a.csv", "id,name\n").1, Problem::NoRows));
    assert!(matches!(refused("a.json", "").1, Problem::Empty));
    assert!(matches!(refused("a.json", "[]").1, Problem::NoRows));
    assert!(matches!(
        refused("a.json", "[{}, {}]").1,
        Problem::NoColumns
    ));
    assert!(matches!(refused("a.jsonl", "\n\n").1, Problem::Empty));
}

#[test]
fn refuses_invalid_utf8_naming_the_line() {
    let (line, problem, shown) = refused("a.csv", b"a,b\n1,2\n3,\xff\xfe\n");
    assert_eq!(line, Some(3));
    assert!(
        matches!(problem, Problem::InvalidUtf8 { ref column } if column == "b"),
        "{shown}"
    );
    // "é" cut in two by a delimiter: each half is refused, though the two are UTF-8 joined.
    let (line, problem, _) = refused("a.csv", b"a,b\n\xc3,\xa9\n");
    assert_eq!(line, Some(2));
    assert!(matches!(problem, Problem::InvalidUtf8 { .. }));
    let (line, _, _) = refused("a.jsonl", b"{\"a\": \"ok\"}\n{\"a\": \"\xff\"}\n");
    assert_eq!(line, Some(2));
}

#[test]
fn refuses_a_quote_never_closed_naming_its_row() {
    let (line, problem, shown) = refused("a.csv", "id,name\n1,ok\n2,\"abc\n3,def\n");
    assert_eq!(line, Some(3), "{shown}");
    assert!(matches!(problem, Problem::UnclosedQuote));
    // Closed at the very end, with no line break after it: read.
    let set = load("a.csv", "id,name\n1,\"a\nb\"").unwrap();
    assert_eq!(rows(&set), [["1", "a\nb"]]);
    // A quote inside an unquoted field is a character.
    let set = load("a.csv", "size\n5\"\n").unwrap();
    assert_eq!(rows(&set), [["5\""]]);
}

#[test]
fn chooses_the_format_by_extension() {
    let (line, problem, shown) = refused("accounts.txt", "a\n1\n");
    assert_eq!(line, None);
    assert!(matches!(problem, Problem::UnknownFormat));
    assert!(shown.contains("accounts.txt"), "{shown}");
    assert_eq!(Format::of(Path::new("x.NDJSON")), Some(Format::JsonLines));
    assert_eq!(Format::of(Path::new("x")), None);
    let e = DataSet::load("s", Path::new("/no/such/file.csv"), &DataLimits::default());
    assert!(matches!(e.unwrap_err().problem, Problem::Io(_)));
}

#[test]
fn reads_a_json_array_with_the_union_of_keys_and_values_as_text() {
    let text = r#"[
        {"user": "alice", "age": 31, "admin": true},
        {"age": 2.5, "user": "bob\n\"b\"", "tags": ["x", 1], "extra": null},
        {"user": "carol", "meta": {"a": {"b": [1, 2]}}, "big": 18446744073709551615, "neg": -7}
    ]"#;
    let set = load("t.json", text).unwrap();
    assert_eq!(
        set.columns(),
        ["user", "age", "admin", "tags", "extra", "meta", "big", "neg"]
    );
    assert_eq!(
        rows(&set),
        [
            vec!["alice", "31", "true", "", "", "", "", ""],
            vec!["bob\n\"b\"", "2.5", "", "[\"x\",1]", "null", "", "", ""],
            vec![
                "carol",
                "",
                "",
                "",
                "",
                r#"{"a":{"b":[1,2]}}"#,
                "18446744073709551615",
                "-7"
            ],
        ]
    );
}

#[test]
fn a_key_given_twice_keeps_its_last_value() {
    let set = load("t.json", r#"[{"a": "1", "b": "2", "a": "3"}]"#).unwrap();
    assert_eq!(rows(&set), [["3", "2"]]);
}

#[test]
fn reads_json_lines_skipping_blank_lines() {
    let text = "\u{feff}{\"id\": 1, \"q\": \"a b\"}\r\n\n  {\"q\": \"c\"}  \n{\"id\": 3}";
    for name in ["e.jsonl", "e.ndjson"] {
        let set = load(name, text).unwrap();
        assert_eq!(set.columns(), ["id", "q"]);
        assert_eq!(rows(&set), [["1", "a b"], ["", "c"], ["3", ""]]);
    }
}

#[test]
fn refuses_json_that_is_not_an_array_of_objects() {
    let (line, problem, shown) = refused("t.json", r#"{"a": 1}"#);
    assert_eq!(line, Some(1));
    assert!(
        matches!(problem, Problem::Json(ref m) if m.contains("expected a JSON array of objects")),
        "{shown}"
    );
    let (line, problem, shown) = refused("t.json", "[{\"a\": 1},\n 2]");
    assert_eq!(line, Some(2), "{shown}");
    assert!(
        matches!(problem, Problem::Json(ref m) if m.contains("expected a JSON object")),
        "{shown}"
    );
    assert!(shown.contains("t.json:2:"), "{shown}");
    let (_, problem, shown) = refused("t.json", "[{\"a\": 1}] [");
    assert!(matches!(problem, Problem::Json(_)), "{shown}");
    let (line, problem, shown) = refused("t.jsonl", "{\"a\": 1}\n\n[1]\n");
    assert_eq!(line, Some(3), "{shown}");
    assert!(matches!(problem, Problem::Json(_)));
    let (line, _, shown) = refused("t.jsonl", "{\"a\": 1}\n{\"a\": 1} x\n");
    assert_eq!(line, Some(2), "{shown}");
    let (line, _, shown) = refused("t.json", "[{\"a\": 1},\n{\"a\": ");
    assert_eq!(line, Some(2), "{shown}");
    let (_, problem, _) = refused("t.json", r#"[{"": 1}]"#);
    assert!(matches!(problem, Problem::UnnamedColumn(1)));
}

#[test]
fn json_keys_seen_late_give_earlier_rows_empty_cells_within_bounds() {
    let set = load(
        "t.jsonl",
        "{\"a\": 1}\n{}\n{\"b\": 2, \"a\": 3}\n{\"c\": 4}\n",
    )
    .unwrap();
    assert_eq!(set.columns(), ["a", "b", "c"]);
    assert_eq!(
        rows(&set),
        [["1", "", ""], ["", "", ""], ["3", "2", ""], ["", "", "4"]]
    );
    // 1000 one-key rows, then a row of 30 new keys: 31,031 cells from ~12 kB of file.
    let mut text: String = (0..1000).map(|i| format!("{{\"a\":{i}}}\n")).collect();
    let keys: Vec<String> = (0..30).map(|k| format!("\"k{k}\":1")).collect();
    text.push_str(&format!("{{{}}}\n", keys.join(",")));
    let (_, problem, shown) = refused("t.jsonl", &text);
    assert!(
        matches!(
            problem,
            Problem::TooManyCells {
                rows: 1001,
                columns: 31
            }
        ),
        "{shown}"
    );
}

#[test]
fn from_rows_builds_a_set_in_code() {
    let set = DataSet::from_rows("s", &["a", "b"], [["1", "2"], ["3", "4"]]);
    assert_eq!(rows(&set), [["1", "2"], ["3", "4"]]);
    assert_eq!(set.file(), Path::new(""));
    let empty = DataSet::from_rows("s", &["a"], Vec::<[&str; 1]>::new());
    assert!(empty.is_empty());
}

#[test]
#[should_panic(expected = "row 2 of 2 rows")]
fn a_cell_past_the_last_row_panics() {
    let set = DataSet::from_rows("s", &["a"], [["1"], ["2"]]);
    set.cell(2, 0);
}

//! Handing rows out (`unique`, `sequential`, `random`), shards' slices, and the load
//! benchmark of a 1,000,000-row file.

use std::io::Write;
use std::time::Instant;

use rand::rngs::SmallRng;
use rand::SeedableRng;

use super::tests::rows;
use super::*;

fn numbers(n: usize) -> DataSet {
    DataSet::from_rows("n", &["i"], (0..n).map(|i| [i.to_string()]))
}

#[test]
fn picks_parse_and_print_by_name() {
    for pick in Pick::ALL {
        assert_eq!(pick.as_str().parse::<Pick>(), Ok(pick));
        assert_eq!(pick.to_string(), pick.as_str());
    }
    let e = "circular".parse::<Pick>().unwrap_err();
    assert_eq!(
        e.to_string(),
        "`circular` is not a pick: expected unique, sequential or random"
    );
}

#[test]
fn unique_hands_each_row_out_once_across_threads() {
    let source = DataSource::new(numbers(10_000), Pick::Unique);
    let taken: Vec<Vec<usize>> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let mine = source.clone();
                s.spawn(move || std::iter::from_fn(|| mine.take_unique()).collect())
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let mut all: Vec<usize> = taken.into_iter().flatten().collect();
    all.sort_unstable();
    assert_eq!(all, (0..10_000).collect::<Vec<_>>());
    assert_eq!(source.take_unique(), None);
    assert_eq!(source.taken(), 10_000);
    let mut rng = SmallRng::seed_from_u64(1);
    assert_eq!(source.next_row(&mut rng), None);
    // A restart has its own cursor; the clones above share the first one.
    let again = source.restart();
    assert_eq!(again.take_unique(), Some(0));
    assert_eq!(source.take_unique(), None);
}

#[test]
fn sequential_shares_one_cursor_and_wraps() {
    let source = DataSource::new(numbers(3), Pick::Sequential);
    let other_user = source.clone();
    let mut rng = SmallRng::seed_from_u64(1);
    let got: Vec<usize> = (0..4)
        .flat_map(|_| [source.sequential(), other_user.next_row(&mut rng).unwrap()])
        .collect();
    assert_eq!(got, [0, 1, 2, 0, 1, 2, 0, 1]);
}

#[test]
fn random_is_uniform_over_the_rows() {
    let source = DataSource::new(numbers(10), Pick::Random);
    let mut rng = SmallRng::seed_from_u64(42);
    let mut counts = [0u32; 10];
    for _ in 0..100_000 {
        counts[source.next_row(&mut rng).unwrap()] += 1;
    }
    // Each row about 10,000 times (a binomial's standard deviation here is ~95).
    assert!(
        counts.iter().all(|&c| (9_500..10_500).contains(&c)),
        "{counts:?}"
    );
    let empty = DataSource::new(numbers(0), Pick::Random);
    assert_eq!(empty.next_row(&mut rng), None);
}

#[test]
fn slices_are_disjoint_contiguous_and_cover_every_row() {
    let set = numbers(10);
    let parts: Vec<DataSet> = (0..3)
        .map(|i| set.slice(Slice::new(i, 3).unwrap()))
        .collect();
    let firsts: Vec<(usize, usize)> = parts.iter().map(|p| (p.offset(), p.len())).collect();
    assert_eq!(firsts, [(0, 3), (3, 3), (6, 4)]);
    let cells: Vec<&str> = parts
        .iter()
        .flat_map(|p| (0..p.len()).map(|r| p.cell(r, 0)))
        .collect();
    assert_eq!(cells, ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]);
    // A slice of a slice is a part of that part; more parts than rows: some are empty.
    let inner = parts[2].slice(Slice::new(1, 2).unwrap());
    assert_eq!(rows(&inner), [["8"], ["9"]]);
    let tiny: Vec<usize> = (0..4)
        .map(|i| numbers(2).slice(Slice::new(i, 4).unwrap()).len())
        .collect();
    assert_eq!(tiny, [0, 1, 0, 1]);
    assert_eq!(set.slice(Slice::WHOLE).len(), 10);
}

#[test]
#[should_panic(expected = "row 3 of 3 rows")]
fn a_slice_reads_only_its_own_rows() {
    numbers(10).slice(Slice::new(0, 3).unwrap()).cell(3, 0);
}

#[test]
fn a_plan_slices_unique_sets_and_keeps_the_others_whole() {
    let plan = DataPlan {
        sets: vec![
            DataSource::new(
                DataSet::from_rows("u", &["i"], [["a"], ["b"], ["c"], ["d"]]),
                Pick::Unique,
            ),
            DataSource::new(
                DataSet::from_rows("s", &["i"], [["a"], ["b"]]),
                Pick::Sequential,
            ),
            DataSource::new(
                DataSet::from_rows("r", &["i"], [["a"], ["b"]]),
                Pick::Random,
            ),
        ],
    };
    assert!(!plan.is_empty() && DataPlan::default().is_empty());
    assert_eq!(plan.index("s"), Some(1));
    assert_eq!(plan.get("r").unwrap().pick(), Pick::Random);
    assert!(plan.get("x").is_none());
    let shard = plan.slice(Slice::new(1, 2).unwrap());
    let unique = shard.get("u").unwrap();
    assert_eq!(rows(unique.set()), [["c"], ["d"]]);
    assert_eq!(
        (
            unique.take_unique(),
            unique.take_unique(),
            unique.take_unique()
        ),
        (Some(0), Some(1), None)
    );
    assert_eq!(shard.get("s").unwrap().set().len(), 2);
    assert_eq!(shard.get("r").unwrap().set().len(), 2);
    // The whole plan's cursors are untouched by the shard's.
    assert_eq!(plan.get("u").unwrap().take_unique(), Some(0));
    let fresh = plan.restart();
    assert_eq!(fresh.get("u").unwrap().take_unique(), Some(0));
}

#[test]
fn require_rows_says_how_many_unique_needs() {
    let set = numbers(3);
    set.require_rows(3, "users").unwrap();
    let e = set.require_rows(5, "users").unwrap_err();
    assert!(matches!(
        e.problem,
        Problem::TooFewRows {
            rows: 3,
            needed: 5,
            ..
        }
    ));
    assert!(
        e.to_string().contains("data `n` has 3 rows for 5 users"),
        "{e}"
    );
}

/// The load benchmark (bench/data-load.sh measures the binary; this the library alone):
/// `cargo test --release -p headroom-plan data::tests_pick::load_1m -- --ignored --nocapture`.
#[test]
#[ignore = "a benchmark: writes and loads a 1,000,000-row file"]
fn load_1m_rows() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("accounts.csv");
    let jsonl = dir.path().join("accounts.jsonl");
    let mut c = std::io::BufWriter::new(std::fs::File::create(&csv).unwrap());
    let mut j = std::io::BufWriter::new(std::fs::File::create(&jsonl).unwrap());
    writeln!(c, "id,username,password,email").unwrap();
    for i in 0..1_000_000u32 {
        let (user, pass) = (
            format!("user{i:07}"),
            format!("pw{:08x}", i.wrapping_mul(2_654_435_761)),
        );
        writeln!(c, "{i},{user},{pass},{user}@example.com").unwrap();
        writeln!(
            j,
            r#"{{"id":{i},"username":"{user}","password":"{pass}","email":"{user}@example.com"}}"#
        )
        .unwrap();
    }
    drop((c, j));
    // The same objects as one JSON array.
    let json = dir.path().join("accounts.json");
    let lines = std::fs::read_to_string(&jsonl).unwrap();
    let objects: Vec<&str> = lines.lines().collect();
    std::fs::write(&json, format!("[{}]", objects.join(",\n"))).unwrap();
    drop(lines);
    for path in [&csv, &jsonl, &json] {
        let size = std::fs::metadata(path).unwrap().len() as f64;
        let start = Instant::now();
        let set = DataSet::load("accounts", path, &DataLimits::default()).unwrap();
        let seconds = start.elapsed().as_secs_f64();
        assert_eq!((set.len(), set.columns().len()), (1_000_000, 4));
        assert_eq!(set.cell(999_999, 1), "user0999999");
        let heap = set.heap_bytes() as f64;
        println!(
            "{}: {:.1} MiB, {} rows, loaded in {seconds:.3} s ({:.0} MiB/s), heap {:.1} MiB = {:.2}× the file",
            path.file_name().unwrap().to_string_lossy(),
            size / 1048576.0,
            set.len(),
            size / 1048576.0 / seconds,
            heap / 1048576.0,
            heap / size,
        );
    }
}

/// Loads the file `DATA_LOAD_FILE` names (nothing without it) and prints its figures:
/// for measuring the loader's peak RSS alone, under `/usr/bin/time -v`, on a file
/// bench/data-load.sh made.
#[test]
#[ignore = "a benchmark: loads the file DATA_LOAD_FILE names"]
fn load_file_from_env() {
    let Some(path) = std::env::var_os("DATA_LOAD_FILE") else {
        return;
    };
    let start = Instant::now();
    let set = DataSet::load("file", path.as_ref(), &DataLimits::default()).unwrap();
    println!(
        "{} rows × {} columns in {:.3} s, heap {:.1} MiB",
        set.len(),
        set.columns().len(),
        start.elapsed().as_secs_f64(),
        set.heap_bytes() as f64 / 1048576.0
    );
}

#[test]
fn sets_and_sources_are_shared_across_threads() {
    fn shared<T: Send + Sync + Clone>() {}
    shared::<DataSet>();
    shared::<DataSource>();
    shared::<DataPlan>();
}

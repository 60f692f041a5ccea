//! What flows did besides their requests, in the end-of-run text: the `checks`,
//! `redirects` and `cookies` rows of the volume table, and the per-group table. Each
//! appears only when the summary has it.

use std::fmt::Write;

use crate::metrics::summary::Summary;
use crate::report::table::Table;
use crate::report::units::{latency, percent, share};

/// Most failed check names listed on the `checks` row; the rest are counted.
const MAX_FAILED_NAMES: usize = 10;

/// Text from the scenario or the target, with control characters (terminal escapes)
/// shown as spaces.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// The `checks`, `redirects` and `cookies` rows, for the volume table: e.g. `checks
/// 990 of 1000 passed (99.00%); failed: status ok 8, has id 2`.
pub(super) fn rows(t: &mut Table, s: &Summary) {
    let c = &s.checks;
    if !c.is_empty() {
        let mut line = format!(
            "{} of {} passed ({})",
            c.passed,
            c.total(),
            percent(share(c.passed, c.total()))
        );
        let mut failed: Vec<(&String, u64)> = c
            .by_name
            .iter()
            .filter(|(_, n)| n.failed > 0)
            .map(|(name, n)| (name, n.failed))
            .collect();
        failed.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        if !failed.is_empty() {
            let listed: Vec<String> = failed
                .iter()
                .take(MAX_FAILED_NAMES)
                .map(|(name, n)| format!("{} {n}", printable(name)))
                .collect();
            let _ = write!(line, "; failed: {}", listed.join(", "));
            if failed.len() > MAX_FAILED_NAMES {
                let _ = write!(line, " and {} more", failed.len() - MAX_FAILED_NAMES);
            }
        }
        t.row(["checks".to_string(), line]);
    }
    if s.redirects > 0 {
        t.row(["redirects".to_string(), s.redirects.to_string()]);
    }
    let k = &s.cookies;
    if !k.is_empty() {
        let mut line = format!("{} received, {} sent", k.received, k.sent);
        if k.dropped > 0 {
            let _ = write!(
                line,
                ", {} dropped (over a jar limit, or unparsable)",
                k.dropped
            );
        } else {
            line.push_str(", 0 dropped");
        }
        t.row(["cookies".to_string(), line]);
    }
}

/// The measured value of a checks rule on `name` (all checks when `None`), or why
/// there is none: no check ran at all, the named one never ran, or no check has that
/// name.
pub(super) fn checks_value(s: &Summary, name: Option<&str>, value: f64) -> String {
    let c = &s.checks;
    if c.passed_percent(name).is_some() {
        percent(value)
    } else if c.is_empty() {
        "no check ran".to_string()
    } else if name.is_some_and(|n| c.by_name.contains_key(n)) {
        "never ran".to_string()
    } else {
        "no such check".to_string()
    }
}

/// The per-group table (runs, p50, p95, failed runs), with a blank line after it;
/// nothing without groups.
pub(super) fn groups(out: &mut String, s: &Summary) {
    if s.by_group.is_empty() {
        return;
    }
    let mut t = Table::labelled(4);
    t.row(["group", "count", "p50", "p95", "failed"]);
    for (name, g) in &s.by_group {
        let cell = |ms: f64| {
            if g.count > 0 {
                latency(ms)
            } else {
                "-".to_string()
            }
        };
        t.row([
            printable(name),
            g.count.to_string(),
            cell(g.duration_ms.p50),
            cell(g.duration_ms.p95),
            g.failed.to_string(),
        ]);
    }
    out.push_str(&t.render(0));
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use crate::metrics::summary::{CheckCounts, ChecksSummary, GroupSummary, Latency, Summary};
    use crate::report::text::render;

    fn counts(passed: u64, failed: u64) -> CheckCounts {
        CheckCounts { passed, failed }
    }

    #[test]
    fn a_run_without_flow_figures_prints_none_of_them() {
        let text = render(&Summary::empty("t", 1.0));
        for absent in ["checks", "redirects", "cookies", "group"] {
            assert!(!text.contains(absent), "{absent:?} in\n{text}");
        }
    }

    #[test]
    fn checks_redirects_cookies_and_groups_read_in_the_house_style() {
        let mut s = Summary::empty("t", 1.0);
        let names: Vec<String> = ["status ok", "has id", "fine"].map(String::from).into();
        s.checks = ChecksSummary::of(&names, &[counts(990, 8), counts(8, 2), counts(5, 0)]);
        s.redirects = 12;
        s.cookies.received = 3;
        s.cookies.sent = 40;
        s.cookies.dropped = 1;
        s.by_group.insert(
            "login".into(),
            GroupSummary {
                count: 100,
                failed: 2,
                duration_ms: Latency {
                    p50: 12.0,
                    p95: 30.5,
                    ..Latency::default()
                },
            },
        );
        s.by_group
            .insert("never\u{1b}[2J".into(), GroupSummary::default());
        let text = render(&s);
        let want = "\
checks     1003 of 1013 passed (99.01%); failed: status ok 8, has id 2
redirects  12
cookies    3 received, 40 sent, 1 dropped (over a jar limit, or unparsable)
";
        assert!(text.contains(want), "{text}");
        let want = "\
group      count     p50     p95  failed
login        100  12.0ms  30.5ms       2
never [2J      0       -       -       0
";
        assert!(text.contains(want), "{text}");
    }

    #[test]
    fn at_most_ten_failed_checks_are_named() {
        let mut s = Summary::empty("t", 1.0);
        let names: Vec<String> = (0..13).map(|i| format!("c{i:02}")).collect();
        let all: Vec<CheckCounts> = (0..13).map(|i| counts(1, 13 - i)).collect();
        s.checks = ChecksSummary::of(&names, &all);
        let text = render(&s);
        let line = text.lines().find(|l| l.starts_with("checks ")).unwrap();
        assert!(
            line.ends_with("failed: c00 13, c01 12, c02 11, c03 10, c04 9, c05 8, c06 7, c07 6, c08 5, c09 4 and 3 more"),
            "{line}"
        );
        s.checks = ChecksSummary::of(&names[..1], &[counts(4, 0)]);
        let text = render(&s);
        assert!(
            text.contains("\nchecks     4 of 4 passed (100.00%)\n"),
            "{text}"
        );
    }
}

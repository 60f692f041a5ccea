//! The JUnit XML report of one stored run, for CI: one test suite named after the
//! scenario, one test case per threshold, with a `<failure>` element for each one that
//! failed. A run without a summary becomes one failed test case saying so.

use std::fmt::Write;

use super::escape::html as escape;
use crate::store::StoredRun;

/// The report as a JUnit XML document.
pub fn render(run: &StoredRun) -> String {
    let name = format!("headroom {}", run.row.scenario_name);
    let mut cases = String::new();
    let (tests, failures, time) = match &run.row.summary {
        Some(s) => {
            for t in &s.thresholds {
                let _ = write!(
                    cases,
                    "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\">",
                    escape(&name),
                    escape(&t.expr),
                    s.duration_s
                );
                if !t.ok {
                    let message = format!("{} did not hold: measured {:.3}", t.expr, t.value);
                    let _ = write!(
                        cases,
                        "<failure type=\"threshold\" message=\"{}\">{}</failure>",
                        escape(&message),
                        escape(&message)
                    );
                }
                cases.push_str("</testcase>\n");
            }
            let mut failed = s.thresholds.iter().filter(|t| !t.ok).count();
            let mut tests = s.thresholds.len();
            if let Some(words) = super::text::partial_words(s, "") {
                // A run that did not end is a failure in CI, whatever its figures.
                let _ = writeln!(
                    cases,
                    "    <testcase classname=\"{n}\" name=\"run completed\" time=\"{t:.3}\"><failure type=\"partial\" message=\"{m}\">{m}</failure></testcase>",
                    n = escape(&name),
                    t = s.duration_s,
                    m = escape(&words)
                );
                failed += 1;
                tests += 1;
            }
            (tests, failed, s.duration_s)
        }
        None => {
            let message = format!(
                "run {} has no summary ({})",
                run.row.id,
                run.row.status.as_str()
            );
            let _ = writeln!(
                cases,
                "    <testcase classname=\"{n}\" name=\"run completed\" time=\"0\"><failure type=\"run\" message=\"{m}\">{m}</failure></testcase>",
                n = escape(&name),
                m = escape(&message)
            );
            (1, 1, 0.0)
        }
    };
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"headroom\" tests=\"{tests}\" failures=\"{failures}\">\n  <testsuite name=\"{n}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" time=\"{time:.3}\" timestamp=\"{ts}\">\n{cases}  </testsuite>\n</testsuites>\n",
        n = escape(&name),
        ts = escape(run.row.started_at.get(..19).unwrap_or(&run.row.started_at)),
    )
}

//! What flows did besides their requests, as the summary reports it: non-fatal checks
//! ([`ChecksSummary`], key `checks`), cookies (key `cookies`, [`CookieCounts`]) and
//! `group:` steps ([`GroupSummary`], key `by_group`). Each is absent from the JSON when
//! nothing of its kind happened, so a summary without them reads as before.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Latency;
use crate::recorder::{CheckCounts, GroupTally};

/// The name of entry `id` of a plan's list, or `#ID` for one the list lacks.
fn name_of(names: &[String], id: usize) -> String {
    names.get(id).cloned().unwrap_or_else(|| format!("#{id}"))
}

/// Non-fatal checks over the run: how many passed and failed, overall and per check
/// name. Default (and absent from the JSON) when no check ran.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct ChecksSummary {
    /// Check outcomes that passed, all checks together.
    pub passed: u64,
    /// Check outcomes that failed.
    pub failed: u64,
    /// Per check name (every check of the plan, zero for one that never ran).
    pub by_name: BTreeMap<String, CheckCounts>,
}

impl ChecksSummary {
    /// The summary of `counts` (indexed by check id) named by `names` (the plan's
    /// `checks`): empty when no check ran. Checks that share a name add up.
    pub fn of(names: &[String], counts: &[CheckCounts]) -> ChecksSummary {
        let mut all = CheckCounts::default();
        counts.iter().for_each(|c| all.add(c));
        if all.total() == 0 {
            return ChecksSummary::default();
        }
        let mut by_name: BTreeMap<String, CheckCounts> = BTreeMap::new();
        for id in 0..names.len().max(counts.len()) {
            let c = counts.get(id).copied().unwrap_or_default();
            by_name.entry(name_of(names, id)).or_default().add(&c);
        }
        ChecksSummary {
            passed: all.passed,
            failed: all.failed,
            by_name,
        }
    }

    /// Check outcomes recorded, passed or failed.
    pub fn total(&self) -> u64 {
        self.passed + self.failed
    }

    /// True when no check ran (the summary leaves `checks` out).
    pub fn is_empty(&self) -> bool {
        self.total() == 0
    }

    /// Passed checks as a percentage of the checks that ran, all of them (`None`) or
    /// those named `name`; `None` when none of them ran (or no check has that name).
    pub fn passed_percent(&self, name: Option<&str>) -> Option<f64> {
        let c = match name {
            None => CheckCounts {
                passed: self.passed,
                failed: self.failed,
            },
            Some(name) => *self.by_name.get(name)?,
        };
        (c.total() > 0).then(|| c.passed as f64 * 100.0 / c.total() as f64)
    }
}

/// One `group:` step over the run, as k6's `group_duration`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct GroupSummary {
    /// Times the group ran.
    pub count: u64,
    /// Of those, runs in which something failed.
    pub failed: u64,
    /// How long each run of the group took, failed ones included, in milliseconds.
    pub duration_ms: Latency,
}

impl GroupSummary {
    /// Per group name, from the tallies indexed by group id named by `names` (the
    /// plan's `groups`): every group of the plan once any group ran, else empty.
    /// Groups that share a name merge.
    pub fn by_name(names: &[String], groups: &[GroupTally]) -> BTreeMap<String, GroupSummary> {
        if groups.iter().all(|g| g.count() == 0) {
            return BTreeMap::new();
        }
        let mut merged: BTreeMap<String, GroupTally> = BTreeMap::new();
        let none = GroupTally::default();
        for id in 0..names.len().max(groups.len()) {
            let g = groups.get(id).unwrap_or(&none);
            merged.entry(name_of(names, id)).or_default().add(g);
        }
        merged
            .into_iter()
            .map(|(name, g)| {
                let s = GroupSummary {
                    count: g.count(),
                    failed: g.failed,
                    duration_ms: Latency::of_micros(&g.duration),
                };
                (name, s)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::recorder::{CookieCounts, Recorder};
    use crate::summary::Summary;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn checks_are_summed_by_name_and_empty_when_none_ran() {
        let mut r = Recorder::new(1);
        assert_eq!(
            ChecksSummary::of(&names(&["a"]), &r.checks),
            ChecksSummary::default()
        );
        r.check(0, true);
        r.check(0, false);
        r.check(2, true);
        r.check(3, false);
        let s = ChecksSummary::of(&names(&["status ok", "never", "status ok"]), &r.checks);
        assert_eq!((s.passed, s.failed, s.total()), (2, 2, 4));
        let by: Vec<(&str, u64, u64)> = s
            .by_name
            .iter()
            .map(|(n, c)| (n.as_str(), c.passed, c.failed))
            .collect();
        assert_eq!(by, [("#3", 0, 1), ("never", 0, 0), ("status ok", 2, 1)]);
        assert_eq!(s.passed_percent(None), Some(50.0));
        assert!((s.passed_percent(Some("status ok")).unwrap() - 200.0 / 3.0).abs() < 1e-9);
        assert_eq!(s.passed_percent(Some("never")), None, "never ran");
        assert_eq!(s.passed_percent(Some("nope")), None, "no such check");
    }

    #[test]
    fn groups_have_every_name_once_any_ran() {
        let mut r = Recorder::new(1);
        assert!(GroupSummary::by_name(&names(&["login"]), &r.groups).is_empty());
        for ms in 1..=100 {
            r.group(1, Duration::from_millis(ms), ms % 10 == 0);
        }
        let g = GroupSummary::by_name(&names(&["idle", "checkout"]), &r.groups);
        assert_eq!(g["idle"], GroupSummary::default());
        let c = &g["checkout"];
        assert_eq!((c.count, c.failed), (100, 10));
        assert!((49.9..=50.1).contains(&c.duration_ms.p50), "{c:?}");
        assert!((99.9..=100.1).contains(&c.duration_ms.max), "{c:?}");
    }

    /// Each key is left out while it has nothing to say, so summaries of runs without
    /// them are unchanged and old ones read with the defaults; present, it reads back.
    #[test]
    fn the_json_leaves_out_what_did_not_happen_and_reads_back_what_did() {
        let plain = Summary::empty("t", 1.0);
        let json = serde_json::to_value(&plain).unwrap();
        for key in ["checks", "redirects", "cookies", "by_group"] {
            assert!(json.get(key).is_none(), "{key} in {json}");
        }
        let back: Summary = serde_json::from_value(json).unwrap();
        assert_eq!(back, plain);

        let mut r = Recorder::new(1);
        r.check(0, true);
        r.check(0, false);
        r.group(0, Duration::from_millis(20), true);
        let mut s = Summary::empty("t", 1.0);
        s.checks = ChecksSummary::of(&names(&["has id"]), &r.checks);
        s.redirects = 3;
        s.cookies = CookieCounts {
            received: 2,
            sent: 5,
            dropped: 1,
        };
        s.by_group = GroupSummary::by_name(&names(&["login"]), &r.groups);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["checks"]["passed"], 1);
        assert_eq!(json["checks"]["failed"], 1);
        assert_eq!(json["checks"]["by_name"]["has id"]["failed"], 1);
        assert_eq!(json["redirects"], 3);
        assert_eq!(json["cookies"]["sent"], 5);
        assert_eq!(json["by_group"]["login"]["count"], 1);
        assert_eq!(json["by_group"]["login"]["failed"], 1);
        assert!(json["by_group"]["login"]["duration_ms"]["p95"].is_number());
        let back: Summary = serde_json::from_value(json).unwrap();
        assert_eq!(back, s);

        // Only some keys: the others read as their defaults.
        let cookies_only: Summary = serde_json::from_value({
            let mut j = serde_json::to_value(Summary::empty("t", 1.0)).unwrap();
            j["cookies"] = serde_json::json!({"dropped": 4});
            j
        })
        .unwrap();
        assert_eq!(cookies_only.cookies.dropped, 4);
        assert!(cookies_only.checks.is_empty() && cookies_only.by_group.is_empty());
    }
}

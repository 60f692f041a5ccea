//! `options.thresholds` in headroom's syntax: `http_req_duration: ['p(95)<500']` is
//! `p95 < 500ms`, `http_req_failed: ['rate<0.01']` is `errors < 1%`, `checks` is
//! `checks > 99%`, `{name:x}` scopes a rule to request `x` (`x.p95 < 300ms`),
//! `{scenario:x}` to workload `x`, and a Trend that times one request judges that
//! request.

use oxc_span::Span;

use super::ops::round6;
use super::value::{number_text, Value, Why};
use super::Interp;

/// Where a threshold goes: the whole run, or a workload by name.
pub(crate) type Placed = (Option<String>, String);

impl Interp<'_, '_> {
    /// Every rule of `options.thresholds`, placed.
    pub(crate) fn thresholds(
        &mut self,
        v: Value<'_>,
        span: Span,
        workloads: &[String],
        names: &[String],
    ) -> Vec<Placed> {
        let Value::Object(entries) = v else {
            self.left(span, "options.thresholds", "not an object known statically");
            return Vec::new();
        };
        let mut out = Vec::new();
        for (key, rules) in entries {
            let rules = match rules {
                Value::Array(items) => items,
                one => vec![one],
            };
            for rule in rules {
                let (expr, abort) = match rule {
                    Value::Str(s) => (s, false),
                    Value::Object(o) => {
                        let get = |k: &str| o.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
                        match get("threshold") {
                            Some(Value::Str(s)) => {
                                (s, matches!(get("abortOnFail"), Some(Value::Bool(true))))
                            }
                            _ => {
                                self.left(
                                    span,
                                    format!("threshold on {key}"),
                                    "its `threshold` is not a constant string",
                                );
                                continue;
                            }
                        }
                    }
                    other => {
                        self.left(
                            span,
                            format!("threshold on {key}"),
                            format!("{} is not a threshold", other.kind()),
                        );
                        continue;
                    }
                };
                let construct = format!("threshold {key}: {expr}");
                match self.rule(&key, &expr, workloads, names) {
                    Ok((placed, note)) => {
                        match note {
                            None => self.ok(span, construct),
                            Some(n) => self.approx(span, construct, n),
                        }
                        out.push(placed);
                    }
                    Err(why) => self.left(span, construct, why.0),
                }
                if abort {
                    self.approx(span, format!("abortOnFail ({key}: {expr})"), "a scenario cannot ask for it: run with `headroom run --abort-on-fail`, which stops on any failed rule");
                    let note =
                        "k6 aborted on a failed threshold: run with `headroom run --abort-on-fail`"
                            .to_string();
                    if !self.notes.contains(&note) {
                        self.notes.push(note);
                    }
                }
            }
        }
        out
    }

    /// One rule of metric `key` (`http_req_duration{name:login}`).
    fn rule(
        &self,
        key: &str,
        expr: &str,
        workloads: &[String],
        names: &[String],
    ) -> Result<(Placed, Option<String>), Why> {
        let (metric, filter) = match key.split_once('{') {
            Some((m, f)) => (m.trim(), Some(f.trim_end_matches('}').trim())),
            None => (key.trim(), None),
        };
        let (stat, op, value) = parse_rule(expr)
            .ok_or_else(|| format!("{expr:?} is not a threshold expression the converter reads"))?;
        let mut scope: Option<String> = None;
        let mut workload = None;
        let mut success = false;
        if let Some(f) = filter {
            let (tag, val) = f
                .split_once(':')
                .map(|(t, v)| (t.trim(), v.trim()))
                .ok_or_else(|| format!("the filter {{{f}}} is not tag:value"))?;
            match tag {
                "name" if names.iter().any(|n| n == val) => scope = Some(val.to_string()),
                "name" => return Err(format!("no request is named {val:?}").into()),
                "scenario" if workloads.iter().any(|w| w == val) => {
                    workload = Some(val.to_string())
                }
                "scenario" if workloads.is_empty() => {}
                "scenario" => return Err(format!("no scenario is named {val:?}").into()),
                "expected_response" if val == "true" && metric == "http_req_duration" => {
                    success = true
                }
                other => {
                    return Err(format!(
                    "headroom scopes rules by request name and workload, not by the tag {other}"
                )
                    .into())
                }
            }
        }
        let trend = self
            .trends
            .iter()
            .find(|(n, _)| n == metric)
            .map(|(_, id)| *id);
        let latency_note = "headroom's latency runs from the request's scheduled start to its last byte, connecting and redirects included (k6's http_req_duration leaves out connecting)";
        let (text, note) = match (metric, trend) {
            ("http_req_duration", _) | (_, Some(_)) => {
                let stat = latency_stat(&stat).ok_or_else(|| format!("headroom has no latency statistic {stat}"))?;
                if let Some(id) = trend {
                    let name = self.reqs[id].name.clone().unwrap_or_default();
                    scope = Some(name);
                }
                let prefix = if success { "success_" } else { "" };
                (format!("{prefix}{stat} {op} {}ms", number_text(value)), Some(latency_note.to_string()))
            }
            ("http_req_failed", None) if stat == "rate" => (
                format!("errors {op} {}%", number_text(round6(value * 100.0))),
                Some("headroom's errors are failed requests: no response, a status of 400 or more (as k6), and also a capture that found nothing".to_string()),
            ),
            ("checks", None) if stat == "rate" => (format!("checks {op} {}%", number_text(round6(value * 100.0))), None),
            ("http_reqs", None) if stat == "rate" => (format!("rate {op} {}/s", number_text(value)), None),
            ("dropped_iterations", None) if stat == "count" => (format!("dropped {op} {}", number_text(value)), None),
            (m, None) if self.metrics.iter().any(|(n, _)| n == m) => {
                return Err("a custom metric: headroom has no custom metrics".to_string().into());
            }
            (m, None) => return Err(format!("headroom has no figure like k6's {m} {stat}").into()),
        };
        let text = match scope {
            Some(s) => format!("{s}.{text}"),
            None => text,
        };
        Ok(((workload, text), note))
    }
}

/// `p(95)<500` → (`p(95)`, `<`, 500).
fn parse_rule(expr: &str) -> Option<(String, &'static str, f64)> {
    let ops: [(&str, &'static str); 7] = [
        ("===", "=="),
        ("==", "=="),
        ("<=", "<="),
        (">=", ">="),
        ("<", "<"),
        (">", ">"),
        ("!=", ""),
    ];
    for (spelled, op) in ops {
        if let Some((stat, value)) = expr.split_once(spelled) {
            if op.is_empty() {
                return None;
            }
            let value: f64 = value.trim().parse().ok()?;
            return Some((stat.trim().to_string(), op, value));
        }
    }
    None
}

/// A k6 trend statistic as headroom's latency statistic.
fn latency_stat(stat: &str) -> Option<String> {
    Some(match stat {
        "avg" | "min" | "max" => stat.to_string(),
        "med" => "p50".into(),
        p => {
            let n = p.strip_prefix("p(")?.strip_suffix(')')?.trim();
            match n {
                "50" | "90" | "95" | "99" | "99.9" => format!("p{n}"),
                _ => return None,
            }
        }
    })
}

//! The threshold grammar: splits `[NAME.]METRIC OP VALUE` into its parts and converts
//! VALUE into the metric's unit. [`super::Threshold::parse`] drives these in order.

use super::error::RuleError;
use super::{LatencyStat, Metric, Op, StreamMetric};

/// Metric names as written, longest first among those sharing a prefix so that
/// `p99.9` is tried before `p99`. Stream latency figures are in [`STREAM_LATENCIES`].
const METRICS: [(&str, Metric); 24] = [
    ("lost", Metric::DeliveryLost),
    ("duplicated", Metric::DeliveryDuplicated),
    ("p99.9", Metric::Latency(LatencyStat::P999)),
    ("p50", Metric::Latency(LatencyStat::P50)),
    ("p90", Metric::Latency(LatencyStat::P90)),
    ("p95", Metric::Latency(LatencyStat::P95)),
    ("p99", Metric::Latency(LatencyStat::P99)),
    ("min", Metric::Latency(LatencyStat::Min)),
    ("avg", Metric::Latency(LatencyStat::Avg)),
    ("max", Metric::Latency(LatencyStat::Max)),
    ("errors", Metric::ErrorPercent),
    ("error_rate", Metric::ErrorPercent),
    ("rate", Metric::Rate),
    ("dropped", Metric::Dropped),
    ("abandoned", Metric::Abandoned),
    ("success_p99.9", Metric::SuccessLatency(LatencyStat::P999)),
    ("success_p50", Metric::SuccessLatency(LatencyStat::P50)),
    ("success_p90", Metric::SuccessLatency(LatencyStat::P90)),
    ("success_p95", Metric::SuccessLatency(LatencyStat::P95)),
    ("success_p99", Metric::SuccessLatency(LatencyStat::P99)),
    ("success_min", Metric::SuccessLatency(LatencyStat::Min)),
    ("success_avg", Metric::SuccessLatency(LatencyStat::Avg)),
    ("success_max", Metric::SuccessLatency(LatencyStat::Max)),
    ("stream_errors", Metric::Stream(StreamMetric::Errors)),
];

/// Every latency statistic, as a metric name's suffix (`message_p95`).
const STATS: [(&str, LatencyStat); 8] = [
    ("p99.9", LatencyStat::P999),
    ("p50", LatencyStat::P50),
    ("p90", LatencyStat::P90),
    ("p95", LatencyStat::P95),
    ("p99", LatencyStat::P99),
    ("min", LatencyStat::Min),
    ("avg", LatencyStat::Avg),
    ("max", LatencyStat::Max),
];

/// A stream latency figure, given the statistic.
type Figure = fn(LatencyStat) -> StreamMetric;

/// The stream latency figures, each named with every statistic of [`STATS`] after its
/// prefix (`gap_p95`, `lateness_max`).
const STREAM_LATENCIES: [(&str, Figure); 5] = [
    ("message_", StreamMetric::Message),
    ("first_message_", StreamMetric::FirstMessage),
    ("stream_connect_", StreamMetric::Connect),
    ("gap_", StreamMetric::Gap),
    ("lateness_", StreamMetric::Lateness),
];

/// Every metric name with its metric: [`METRICS`], then each stream latency figure
/// with each statistic.
fn metric_names() -> impl Iterator<Item = (std::borrow::Cow<'static, str>, Metric)> {
    let plain = METRICS.iter().map(|&(w, m)| (w.into(), m));
    let streams = STREAM_LATENCIES.iter().flat_map(|&(prefix, figure)| {
        STATS
            .iter()
            .map(move |&(stat, s)| (format!("{prefix}{stat}").into(), Metric::Stream(figure(s))))
    });
    plain.chain(streams)
}

/// The longest window `over` takes: a week, in seconds.
pub(super) const MAX_WINDOW_S: u64 = 7 * 24 * 3600;

/// Splits a rule from its `over D` suffix, if any: `p95 < 500ms over 10s` gives
/// `p95 < 500ms` and 10 (seconds). The suffix is looked for only after the operator,
/// so a request name containing "over" is not mistaken for one.
pub(super) fn split_window(expr: &str) -> Result<(&str, Option<u64>), RuleError> {
    let from = expr.find(['<', '>', '=', '!']).unwrap_or(expr.len());
    // ASCII lowercasing keeps every byte offset.
    let lower = expr.to_ascii_lowercase();
    let found = lower[from..].match_indices("over").find(|&(i, _)| {
        let at = from + i;
        let before = lower[..at].chars().next_back();
        let after = lower[at + 4..].chars().next();
        before.is_some_and(char::is_whitespace) && after.is_none_or(char::is_whitespace)
    });
    let Some((i, _)) = found else {
        return Ok((expr, None));
    };
    let at = from + i;
    let text = expr[at + 4..].trim();
    Ok((&expr[..at], Some(parse_window(text)?)))
}

/// A window's length in whole seconds: a whole number (or a decimal that makes whole
/// seconds, `1.5m`) with `s`, `m` or `h`, at least 1s and at most a week.
fn parse_window(text: &str) -> Result<u64, RuleError> {
    let bad = || RuleError::Window {
        text: text.chars().take(40).collect(),
    };
    let number_len = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = (&text[..number_len], text[number_len..].trim());
    // A number this long is no window length anyone means; it also bounds the work.
    if number.is_empty() || number.len() > 12 {
        return Err(bad());
    }
    let value: f64 = number.parse().map_err(|_| bad())?;
    let scale = match unit.to_ascii_lowercase().as_str() {
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        "ms" | "us" | "µs" => return Err(RuleError::WindowWhole),
        _ => return Err(bad()),
    };
    let seconds = value * scale;
    if seconds == 0.0 {
        return Err(RuleError::WindowZero);
    }
    if seconds.fract() != 0.0 {
        return Err(RuleError::WindowWhole);
    }
    if seconds > MAX_WINDOW_S as f64 {
        return Err(RuleError::WindowTooLong);
    }
    Ok(seconds as u64)
}

/// Whether a rule may take `over D`: a latency statistic of the whole run, or an
/// error rate (whole run or per name). Those are what the per-second buckets hold.
pub(super) fn check_windowed(
    scope: Option<&str>,
    metric: Metric,
    written: &str,
) -> Result<(), RuleError> {
    match (scope, metric) {
        (None, Metric::Latency(_)) | (_, Metric::ErrorPercent) => Ok(()),
        (Some(name), Metric::Latency(_)) => Err(RuleError::WindowNamedLatency {
            name: name.to_string(),
        }),
        _ => Err(RuleError::WindowMetric {
            metric: written.to_string(),
        }),
    }
}

/// Splits `lhs OP rhs` at the first operator character.
pub(super) fn split_op(expr: &str) -> Result<(&str, Op, &str), RuleError> {
    let at = expr
        .find(['<', '>', '=', '!'])
        .ok_or(RuleError::NoOperator)?;
    let rest = &expr[at..];
    let (op, len) = if rest.starts_with("<=") {
        (Op::Le, 2)
    } else if rest.starts_with(">=") {
        (Op::Ge, 2)
    } else if rest.starts_with("==") {
        (Op::Eq, 2)
    } else if rest.starts_with('<') {
        (Op::Lt, 1)
    } else if rest.starts_with('>') {
        (Op::Gt, 1)
    } else {
        return Err(RuleError::UnknownOperator);
    };
    let rhs = &rest[len..];
    if rhs.trim_start().starts_with(['<', '>', '=', '!']) {
        return Err(RuleError::UnknownOperator);
    }
    Ok((&expr[..at], op, rhs))
}

/// Splits `[NAME.]METRIC` into the scope, the metric and the metric as written.
pub(super) fn split_metric(lhs: &str) -> Result<(Option<String>, Metric, &str), RuleError> {
    if lhs.is_empty() {
        return Err(RuleError::NoMetric);
    }
    let found = metric_names().find_map(|(word, metric)| {
        let len = lhs.len().checked_sub(word.len())?;
        let tail = lhs.get(len..)?;
        if !tail.eq_ignore_ascii_case(&word) {
            return None;
        }
        let head = lhs[..len].trim_end();
        match head.strip_suffix('.') {
            _ if head.is_empty() => Some((None, metric, tail)),
            Some(scope) => Some((Some(scope.trim()), metric, tail)),
            // `xp95` or `foo rate`: the metric must be the whole word after the dot.
            None => None,
        }
    });
    let Some((scope, metric, written)) = found else {
        let word = lhs.rsplit('.').next().unwrap_or(lhs).trim();
        return Err(RuleError::UnknownMetric {
            word: word.to_string(),
        });
    };
    match scope {
        Some("") => Err(RuleError::EmptyScope),
        Some(_) if metric == Metric::Dropped => Err(RuleError::WholeRun { metric: "dropped" }),
        Some(_) if metric == Metric::Abandoned => Err(RuleError::WholeRun {
            metric: "abandoned",
        }),
        _ => Ok((scope.map(str::to_string), metric, written)),
    }
}

/// Parses the right-hand side into the metric's unit (ms, percent, per second, count).
pub(super) fn parse_value(
    metric: Metric,
    written: &str,
    op: Op,
    rhs: &str,
) -> Result<f64, RuleError> {
    // Stream figures read like their request counterparts: latencies and a percentage.
    let metric = match metric {
        Metric::Stream(StreamMetric::Errors) => Metric::ErrorPercent,
        Metric::Stream(_) => Metric::Latency(LatencyStat::P50),
        Metric::DeliveryLatency(stat) => Metric::Latency(stat),
        Metric::DeliveryLost | Metric::DeliveryDuplicated => Metric::ErrorPercent,
        other => other,
    };
    let number_len = rhs
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rhs.len());
    let (number, unit) = (&rhs[..number_len], rhs[number_len..].trim());
    let example = match metric {
        Metric::Latency(_) | Metric::SuccessLatency(_) => format!("\"{written} {op} 500ms\""),
        Metric::ErrorPercent => format!("\"{written} {op} 1%\""),
        Metric::Rate => format!("\"{written} {op} 990/s\""),
        Metric::Dropped | Metric::Abandoned => format!("\"{written} {op} 0\""),
        _ => unreachable!("delivery and stream metrics were mapped above"),
    };
    let value: f64 = number
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| RuleError::NoNumber {
            op,
            example: example.clone(),
        })?;
    let scale = match (metric, unit) {
        (Metric::Latency(_) | Metric::SuccessLatency(_), "us" | "µs") => 0.001,
        (Metric::Latency(_) | Metric::SuccessLatency(_), "ms") => 1.0,
        (Metric::Latency(_) | Metric::SuccessLatency(_), "s") => 1000.0,
        (Metric::Latency(_) | Metric::SuccessLatency(_), "") => {
            return Err(RuleError::NoLatencyUnit {
                written: written.to_string(),
                op,
                number: number.to_string(),
            });
        }
        (Metric::Latency(_) | Metric::SuccessLatency(_), _) => {
            return Err(RuleError::LatencyUnit {
                unit: unit.to_string(),
            })
        }
        (Metric::ErrorPercent, "%") => 1.0,
        (Metric::ErrorPercent, _) => return Err(RuleError::NotPercent { example }),
        (Metric::DeliveryLatency(_) | Metric::DeliveryLost | Metric::DeliveryDuplicated, _) => {
            unreachable!("delivery metrics were mapped above")
        }
        (Metric::Rate, "/s") => 1.0,
        (Metric::Rate, _) => return Err(RuleError::NotPerSecond { example }),
        (Metric::Dropped | Metric::Abandoned, "") if value.fract() == 0.0 => 1.0,
        (Metric::Dropped | Metric::Abandoned, _) => {
            return Err(RuleError::NotCount {
                written: written.to_string(),
                example,
            })
        }
        (Metric::Stream(_), _) => unreachable!("mapped above"),
        (Metric::Checks, _) => unreachable!("checks rules are parsed in checks.rs"),
    };
    // A number of hundreds of digits is finite as written but not once scaled (s → ms).
    Some(value * scale)
        .filter(|v| v.is_finite())
        .ok_or_else(|| RuleError::TooLarge {
            number: number.to_string(),
            example,
        })
}

#[cfg(test)]
mod tests {
    use crate::threshold::{LatencyStat, Metric, Op, Threshold};

    #[test]
    fn parses_valid_rules() {
        use LatencyStat::*;
        let cases: &[(&str, Option<&str>, Metric, Op, f64)] = &[
            ("p95 < 500ms", None, Metric::Latency(P95), Op::Lt, 500.0),
            ("  p95<500ms ", None, Metric::Latency(P95), Op::Lt, 500.0),
            ("p99 <= 1.5 s", None, Metric::Latency(P99), Op::Le, 1500.0),
            ("p50 > 250us", None, Metric::Latency(P50), Op::Gt, 0.25),
            ("max >= 2µs", None, Metric::Latency(Max), Op::Ge, 0.002),
            ("p99.9 < 20ms", None, Metric::Latency(P999), Op::Lt, 20.0),
            ("P90 < 1ms", None, Metric::Latency(P90), Op::Lt, 1.0),
            ("min == 0ms", None, Metric::Latency(Min), Op::Eq, 0.0),
            ("avg < 3ms", None, Metric::Latency(Avg), Op::Lt, 3.0),
            ("errors < 1%", None, Metric::ErrorPercent, Op::Lt, 1.0),
            (
                "error_rate <= 0.5 %",
                None,
                Metric::ErrorPercent,
                Op::Le,
                0.5,
            ),
            ("rate > 990/s", None, Metric::Rate, Op::Gt, 990.0),
            ("dropped == 0", None, Metric::Dropped, Op::Eq, 0.0),
            ("dropped < 10", None, Metric::Dropped, Op::Lt, 10.0),
            (
                "create_task.p99 < 800ms",
                Some("create_task"),
                Metric::Latency(P99),
                Op::Lt,
                800.0,
            ),
            (
                "api.v2.get.p99.9 < 1s",
                Some("api.v2.get"),
                Metric::Latency(P999),
                Op::Lt,
                1000.0,
            ),
            (
                "api.v2 . p95 < 1s",
                Some("api.v2"),
                Metric::Latency(P95),
                Op::Lt,
                1000.0,
            ),
            (
                "login.errors < 2%",
                Some("login"),
                Metric::ErrorPercent,
                Op::Lt,
                2.0,
            ),
            ("p99.rate > 5/s", Some("p99"), Metric::Rate, Op::Gt, 5.0),
        ];
        for &(expr, scope, metric, op, limit) in cases {
            let t = Threshold::parse(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
            assert_eq!(t.expr, expr.trim(), "{expr}");
            assert_eq!(t.scope.as_deref(), scope, "{expr}");
            assert_eq!((t.metric, t.op), (metric, op), "{expr}");
            assert!(
                (t.limit - limit).abs() < 1e-12,
                "{expr}: {} != {limit}",
                t.limit
            );
        }
    }

    #[test]
    fn rejects_invalid_rules_with_a_useful_message() {
        let cases: &[(&str, &str)] = &[
            (
                "p95 < 500",
                r#"threshold "p95 < 500": latency needs a unit (us, ms or s), e.g. "p95 < 500ms""#,
            ),
            (
                "p95 < 500 m",
                r#"unknown latency unit "m"; expected us, ms or s"#,
            ),
            ("p95 500ms", "expected METRIC OP VALUE"),
            ("p95 = 500ms", "unknown operator"),
            ("p95 != 500ms", "unknown operator"),
            ("p95 <> 500ms", "unknown operator"),
            (
                "p97 < 5ms",
                r#"unknown metric "p97"; expected one of p50, p90"#,
            ),
            ("xp95 < 5ms", r#"unknown metric "xp95""#),
            ("< 5ms", "missing metric"),
            (".p95 < 5ms", "empty request name"),
            ("p95 < ms", "expected a non-negative number after <"),
            ("p95 < -5ms", "expected a non-negative number"),
            (
                "errors < 1",
                r#"percentage ending in %, e.g. "errors < 1%""#,
            ),
            ("rate > 990", r#"ending in /s, e.g. "rate > 990/s""#),
            ("dropped < 1.5", "whole count with no unit"),
            ("dropped < 5%", "whole count with no unit"),
            ("login.dropped == 0", "not per request name"),
        ];
        for &(expr, wanted) in cases {
            let err = Threshold::parse(expr).expect_err(expr).to_string();
            assert!(
                err.starts_with(&format!("threshold \"{}\": ", expr.trim())),
                "{err}"
            );
            assert!(err.contains(wanted), "{expr}: {err:?} lacks {wanted:?}");
        }
    }
}

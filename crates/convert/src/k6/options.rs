//! `options` onto the load: `vus`/`duration`/`iterations`, `stages`, and
//! `scenarios` with their executors (each a workload with its own load and flow).

use oxc_span::Span;

use super::value::{parse_duration, seconds_text, Value, Why};
use super::Interp;
use crate::Yaml;

/// One k6 scenario as a workload.
#[derive(Debug, Clone)]
pub(crate) struct Workload {
    /// The scenario's name.
    pub(crate) name: String,
    /// Its `load:`.
    pub(crate) load: Yaml,
    /// The function it runs.
    pub(crate) exec: String,
    /// `start:` (k6's `startTime`).
    pub(crate) start: Option<String>,
}

/// What `options` says of the load.
#[derive(Debug, Default)]
pub(crate) struct LoadPlan {
    /// The workloads (one, for a script without `scenarios`).
    pub(crate) workloads: Vec<Workload>,
    /// `client:` keys.
    pub(crate) client: Vec<(String, Yaml)>,
    /// `defaults.headers`.
    pub(crate) headers: Vec<(String, String)>,
    /// `thresholds`, as written.
    pub(crate) thresholds: Option<Value<'static>>,
    /// Where `options` is (for the report of its thresholds).
    pub(crate) span: Span,
}

/// Reads a field of an object.
fn get<'v, 'a>(o: &'v [(String, Value<'a>)], k: &str) -> Option<&'v Value<'a>> {
    o.iter().find(|(n, _)| n == k).map(|(_, v)| v)
}

/// A duration value (`'30s'`, or a number of milliseconds).
fn duration(v: Option<&Value<'_>>) -> Option<String> {
    match v? {
        Value::Str(s) => parse_duration(s).map(seconds_text),
        Value::Num(ms) => Some(seconds_text(ms / 1000.0)),
        _ => None,
    }
}

/// A count.
fn count(v: Option<&Value<'_>>) -> Option<u64> {
    match v? {
        Value::Num(n) if *n >= 0.0 && n.fract() == 0.0 => Some(*n as u64),
        _ => None,
    }
}

/// Stages (`[{duration, target}]`), with targets divided by `per` (a rate's time unit).
fn stages(v: Option<&Value<'_>>, per: f64) -> Option<Yaml> {
    let Value::Array(items) = v? else { return None };
    let mut out = Vec::new();
    for s in items {
        let Value::Object(o) = s else { return None };
        let d = duration(get(o, "duration"))?;
        let Value::Num(t) = get(o, "target")? else {
            return None;
        };
        out.push(
            Yaml::map()
                .with("duration", d)
                .with("target", Yaml::from(t / per)),
        );
    }
    Some(Yaml::Seq(out))
}

impl Interp<'_, '_> {
    /// Reads `options` (None: k6's default, one VU running one iteration).
    pub(crate) fn load_plan(&mut self, options: Option<(Value<'_>, Span)>) -> LoadPlan {
        let mut plan = LoadPlan::default();
        if let Some((_, span)) = &options {
            plan.span = *span;
        }
        let Some((options, span)) = options else {
            plan.workloads.push(Workload {
                name: "default".into(),
                load: Yaml::map()
                    .with("model", "users")
                    .with("users", 1u64)
                    .with("iterations", Yaml::map().with("per_user", 1u64)),
                exec: "default".into(),
                start: None,
            });
            return plan;
        };
        let Value::Object(o) = options else {
            self.left(
                span,
                "options",
                format!(
                    "not an object known statically ({}); the load is one user for 10s",
                    options.why()
                ),
            );
            plan.workloads.push(Workload {
                name: "default".into(),
                load: Yaml::map()
                    .with("model", "users")
                    .with("users", 1u64)
                    .with("duration", "10s"),
                exec: "default".into(),
                start: None,
            });
            return plan;
        };
        for (key, v) in &o {
            match key.as_str() {
                "vus" | "duration" | "iterations" | "stages" | "scenarios" | "thresholds" => {}
                "insecureSkipTLSVerify" => {
                    plan.client.push((
                        "insecure".into(),
                        Yaml::Bool(matches!(v, Value::Bool(true))),
                    ));
                    self.ok(span, "options.insecureSkipTLSVerify");
                }
                "maxRedirects" => match count(Some(v)) {
                    Some(n) => {
                        plan.client.push(("redirects".into(), Yaml::from(n)));
                        self.ok(span, "options.maxRedirects");
                    }
                    None => self.left(span, "options.maxRedirects", "not a count"),
                },
                "userAgent" => match v {
                    Value::Str(ua) => {
                        plan.headers.push(("User-Agent".into(), ua.clone()));
                        self.ok(span, "options.userAgent");
                    }
                    _ => self.left(span, "options.userAgent", "not a constant"),
                },
                "noCookiesReset"
                | "summaryTrendStats"
                | "summaryTimeUnit"
                | "discardResponseBodies"
                | "setupTimeout"
                | "teardownTimeout" => {
                    self.approx(
                        span,
                        format!("options.{key}"),
                        "no scenario equivalent; headroom's own behaviour applies",
                    );
                }
                other => self.left(span, format!("options.{other}"), "no scenario equivalent"),
            }
        }
        if let Some(th) = get(&o, "thresholds") {
            plan.thresholds = Some(to_static(th));
        }
        if let Some(Value::Object(scenarios)) = get(&o, "scenarios") {
            for (name, s) in scenarios {
                let construct = format!("options.scenarios.{name}");
                let Value::Object(s) = s else {
                    self.left(span, construct, "not an object known statically");
                    continue;
                };
                match self.executor(s) {
                    Ok((load, note)) => {
                        let exec = match get(s, "exec") {
                            Some(Value::Str(e)) => e.clone(),
                            _ => "default".into(),
                        };
                        let start = duration(get(s, "startTime"));
                        let mut notes: Vec<String> = note.into_iter().collect();
                        for k in ["gracefulStop", "gracefulRampDown", "env", "tags"] {
                            if get(s, k).is_some() {
                                notes.push(format!("`{k}` has no equivalent"));
                            }
                        }
                        match notes.is_empty() {
                            true => self.ok(span, construct),
                            false => self.approx(span, construct, notes.join("; ")),
                        }
                        plan.workloads.push(Workload {
                            name: name.clone(),
                            load,
                            exec,
                            start,
                        });
                    }
                    Err(why) => self.left(span, construct, why.0),
                }
            }
            return plan;
        }
        let users = count(get(&o, "vus"));
        let mut load = Yaml::map().with("model", "users");
        if let Some(st) = stages(get(&o, "stages"), 1.0) {
            load.set("stages", st);
            // k6 ramps from `vus` (1 unless given), not from 0.
            load.set("start", users.unwrap_or(1));
            self.ok(span, "options.stages");
        } else if let Some(n) = count(get(&o, "iterations")) {
            load.set("users", users.unwrap_or(1));
            load.set("iterations", Yaml::map().with("shared", n));
            if let Some(d) = duration(get(&o, "duration")) {
                load.set("duration", d);
            }
            self.ok(span, "options.iterations");
        } else if let Some(d) = duration(get(&o, "duration")) {
            load.set("users", users.unwrap_or(1));
            load.set("duration", d);
            self.ok(span, "options.duration");
        } else {
            load.set("users", users.unwrap_or(1));
            load.set("iterations", Yaml::map().with("shared", 1u64));
        }
        if users.is_some() {
            self.ok(span, "options.vus");
        }
        plan.workloads.push(Workload {
            name: "default".into(),
            load,
            exec: "default".into(),
            start: None,
        });
        plan
    }

    /// One scenario's executor as a load; an approximation's note.
    fn executor(&mut self, s: &[(String, Value<'_>)]) -> Result<(Yaml, Option<String>), Why> {
        let executor = match get(s, "executor") {
            Some(Value::Str(e)) => e.as_str(),
            _ => return Err("its executor is not a constant".into()),
        };
        let users = |k: &str| count(get(s, k)).unwrap_or(1);
        let time_unit = duration(get(s, "timeUnit"))
            .and_then(|d| parse_duration(&d))
            .unwrap_or(1.0);
        let cap_note = "k6's VU pool (`preAllocatedVUs`/`maxVUs`) becomes `max_in_flight`: an arrival beyond it is dropped and counted, as k6 drops it";
        let cap = count(get(s, "maxVUs")).or_else(|| count(get(s, "preAllocatedVUs")));
        Ok(match executor {
            "constant-vus" => {
                let d = duration(get(s, "duration")).ok_or("no duration")?;
                (
                    Yaml::map()
                        .with("model", "users")
                        .with("users", users("vus"))
                        .with("duration", d),
                    None,
                )
            }
            "ramping-vus" => {
                let st =
                    stages(get(s, "stages"), 1.0).ok_or("its stages are not known statically")?;
                (
                    Yaml::map()
                        .with("model", "users")
                        .with("stages", st)
                        .with("start", count(get(s, "startVUs")).unwrap_or(1)),
                    None,
                )
            }
            "constant-arrival-rate" => {
                let Some(Value::Num(rate)) = get(s, "rate") else {
                    return Err("its rate is not a constant".into());
                };
                let d = duration(get(s, "duration")).ok_or("no duration")?;
                let mut load = Yaml::map()
                    .with("model", "arrival-rate")
                    .with("rate", Yaml::from(rate / time_unit))
                    .with("duration", d);
                if let Some(c) = cap {
                    load.set("max_in_flight", c);
                }
                (load, Some(cap_note.to_string()))
            }
            "ramping-arrival-rate" => {
                let st = stages(get(s, "stages"), time_unit)
                    .ok_or("its stages are not known statically")?;
                let start = match get(s, "startRate") {
                    Some(Value::Num(r)) => r / time_unit,
                    _ => 0.0,
                };
                let mut load = Yaml::map()
                    .with("model", "arrival-rate")
                    .with("stages", st)
                    .with("start", Yaml::from(start));
                if let Some(c) = cap {
                    load.set("max_in_flight", c);
                }
                (load, Some(cap_note.to_string()))
            }
            "per-vu-iterations" | "shared-iterations" => {
                let key = if executor == "per-vu-iterations" {
                    "per_user"
                } else {
                    "shared"
                };
                let d = duration(get(s, "maxDuration")).unwrap_or_else(|| "10m".into());
                (
                    Yaml::map()
                        .with("model", "users")
                        .with("users", users("vus"))
                        .with("iterations", Yaml::map().with(key, users("iterations")))
                        .with("duration", d),
                    None,
                )
            }
            other => return Err(format!("the executor {other} has no headroom load model").into()),
        })
    }
}

/// A constant value detached from the AST's lifetime (options are constants).
fn to_static(v: &Value<'_>) -> Value<'static> {
    match v {
        Value::Undefined => Value::Undefined,
        Value::Null => Value::Null,
        Value::Bool(b) => Value::Bool(*b),
        Value::Num(n) => Value::Num(*n),
        Value::Str(s) => Value::Str(s.clone()),
        Value::Array(a) => Value::Array(a.iter().map(to_static).collect()),
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, v)| (k.clone(), to_static(v))).collect())
        }
        other => Value::Unknown(other.why()),
    }
}

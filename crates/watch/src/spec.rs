//! Watch specs as written on the command line or in a scenario's `watch:` list, parsed
//! into a [`Spec`] before anything is opened, so a typo is bad input with no side effect.

use std::fmt;

use super::error::SpecError;

/// What one `--watch SPEC` asks to observe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spec {
    /// `pid:N`: one process by id.
    Pid(u32),
    /// `process:NAME`: every process whose command or executable name is `NAME`, summed.
    Process(String),
    /// `cgroup:PATH`: a cgroup v2 directory, relative to the cgroup2 mount (or absolute).
    Cgroup(String),
    /// `docker:NAME`: a container's cgroup, found through the Docker Engine API.
    Docker(String),
    /// `postgres:URL` (or a bare `postgres://` / `postgresql://` URL).
    Postgres(String),
    /// `prometheus:URL[#metric,metric]`: a text exposition endpoint; no metrics means all.
    Prometheus {
        /// The `http://` or `https://` URL to scrape.
        url: String,
        /// Metric names to keep (empty: all, up to a cap).
        metrics: Vec<String>,
    },
}

impl Spec {
    /// Parses a spec; the error says what was expected.
    pub fn parse(text: &str) -> Result<Spec, SpecError> {
        let text = text.trim();
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            return Ok(Spec::Postgres(text.to_string()));
        }
        let Some((kind, rest)) = text.split_once(':') else {
            return Err(SpecError::NoKind);
        };
        if rest.is_empty() {
            return Err(SpecError::NoValue {
                kind: kind.to_string(),
            });
        }
        match kind {
            "pid" => rest
                .parse::<u32>()
                .ok()
                .filter(|&p| p > 0)
                .map(Spec::Pid)
                .ok_or_else(|| SpecError::Pid {
                    found: rest.to_string(),
                }),
            "process" => Ok(Spec::Process(rest.to_string())),
            "cgroup" => Ok(Spec::Cgroup(rest.to_string())),
            "docker" => Ok(Spec::Docker(rest.to_string())),
            "postgres" | "postgresql" => {
                if rest.starts_with("postgres://") || rest.starts_with("postgresql://") {
                    Ok(Spec::Postgres(rest.to_string()))
                } else {
                    Err(SpecError::PostgresUrl {
                        found: rest.to_string(),
                    })
                }
            }
            "prometheus" => {
                let (url, metrics) = match rest.split_once('#') {
                    Some((url, list)) => (
                        url,
                        list.split(',')
                            .map(str::trim)
                            .filter(|m| !m.is_empty())
                            .map(String::from)
                            .collect(),
                    ),
                    None => (rest, Vec::new()),
                };
                if !url.starts_with("http://") && !url.starts_with("https://") {
                    return Err(SpecError::PrometheusUrl {
                        found: url.to_string(),
                    });
                }
                Ok(Spec::Prometheus {
                    url: url.to_string(),
                    metrics,
                })
            }
            other => Err(SpecError::UnknownKind {
                kind: other.to_string(),
            }),
        }
    }
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Spec::Pid(pid) => write!(f, "pid:{pid}"),
            Spec::Process(name) => write!(f, "process:{name}"),
            Spec::Cgroup(path) => write!(f, "cgroup:{path}"),
            Spec::Docker(name) => write!(f, "docker:{name}"),
            Spec::Postgres(url) => write!(f, "postgres:{url}"),
            Spec::Prometheus { url, metrics } if metrics.is_empty() => {
                write!(f, "prometheus:{url}")
            }
            Spec::Prometheus { url, metrics } => {
                write!(f, "prometheus:{url}#{}", metrics.join(","))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_parses_and_prints_back() {
        let cases = [
            ("pid:42", Spec::Pid(42)),
            ("process:nginx", Spec::Process("nginx".into())),
            (
                "cgroup:/system.slice/x",
                Spec::Cgroup("/system.slice/x".into()),
            ),
            ("docker:db", Spec::Docker("db".into())),
            (
                "postgres:postgresql://u@127.0.0.1:5432/d",
                Spec::Postgres("postgresql://u@127.0.0.1:5432/d".into()),
            ),
            (
                "prometheus:https://127.0.0.1:9/metrics",
                Spec::Prometheus {
                    url: "https://127.0.0.1:9/metrics".into(),
                    metrics: Vec::new(),
                },
            ),
            (
                "prometheus:http://127.0.0.1:9/metrics#a_total, b",
                Spec::Prometheus {
                    url: "http://127.0.0.1:9/metrics".into(),
                    metrics: vec!["a_total".into(), "b".into()],
                },
            ),
        ];
        for (text, want) in cases {
            let spec = Spec::parse(text).unwrap();
            assert_eq!(spec, want, "{text}");
            assert_eq!(Spec::parse(&spec.to_string()).unwrap(), want);
        }
        assert_eq!(
            Spec::parse("postgres://127.0.0.1/x").unwrap(),
            Spec::Postgres("postgres://127.0.0.1/x".into())
        );
    }

    #[test]
    fn bad_specs_say_what_was_expected() {
        for (text, part) in [
            ("nginx", "expected KIND:VALUE"),
            ("pid:abc", "expected a process id"),
            ("pid:0", "expected a process id"),
            ("pid:", "needs a value"),
            ("disk:/dev/sda", "unknown kind `disk`"),
            ("postgres:127.0.0.1", "postgres:// or postgresql://"),
            ("prometheus:ftp://x/metrics", "http:// or https:// URL"),
        ] {
            let err = Spec::parse(text).unwrap_err();
            assert!(err.to_string().contains(part), "{text}: {err}");
        }
    }
}

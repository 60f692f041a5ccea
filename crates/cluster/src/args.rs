//! [`ClusterArgs`]: the flags that place shards on a cluster, shared by `run`, `find`
//! (flattened there) and `headroom cluster manifest`, and the checks of their values
//! (Kubernetes quantities, names, the image reference, `HOST:PORT`). Each check reads
//! at most [`MAX_VALUE`] bytes of user input and says what was expected.

use std::net::IpAddr;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::{ClusterSpec, SpecError, SpecProblem, MAX_RUN_NAME};

/// Longest flag value the checks here look at; longer ones are refused unread.
pub const MAX_VALUE: usize = 512;

/// Where shards run when `--shards N` is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClusterKind {
    /// An Indexed Job on the Kubernetes cluster of the current kubeconfig context.
    Kubernetes,
    /// Started by someone else (from `headroom cluster manifest`, say): the
    /// coordinator waits for them, with the run's secret from HEADROOM_SHARD_SECRET.
    External,
}

/// Flags that place shards on a cluster. Without `--cluster`, shards are local
/// processes and the other flags are unused.
#[derive(Debug, Args, Clone, Default, PartialEq, Eq)]
pub struct ClusterArgs {
    /// Run the shards on a cluster: `kubernetes` (the current kubeconfig context), or
    /// `external` (started by someone else; the coordinator waits for them). Without
    /// it, shards are processes on this machine.
    #[arg(long, value_enum, value_name = "KIND")]
    pub cluster: Option<ClusterKind>,
    /// Container image of the shards; it must hold `headroom` on its PATH [default:
    /// the scenario's `cluster.kubernetes.image`, else `headroom:<this version>`].
    #[arg(long, value_name = "IMAGE", value_parser = parse_image)]
    pub image: Option<String>,
    /// Kubernetes namespace of the run's Job, Service and Secret [default: the
    /// scenario's `cluster.kubernetes.namespace`, else `default`].
    #[arg(long, value_name = "NS", value_parser = parse_namespace)]
    pub namespace: Option<String>,
    /// Address the shards dial, `HOST:PORT` (default: the coordinator's listen
    /// address), e.g. a node's address or a LoadBalancer's in front of the coordinator.
    #[arg(long, value_name = "HOST:PORT", value_parser = parse_advertise)]
    pub advertise: Option<String>,
    /// CPU request (and equal limit) of each shard, a Kubernetes quantity: `2`, `500m`.
    #[arg(long, value_name = "QTY", value_parser = parse_quantity)]
    pub shard_cpu: Option<String>,
    /// Memory request (and equal limit) of each shard, a Kubernetes quantity: `512Mi`, `2Gi`.
    #[arg(long, value_name = "QTY", value_parser = parse_quantity)]
    pub shard_memory: Option<String>,
}

/// The image when neither `--image` nor the scenario names one.
pub const DEFAULT_IMAGE: &str = concat!("headroom:", env!("CARGO_PKG_VERSION"));
/// The namespace when neither `--namespace` nor the scenario names one.
pub const DEFAULT_NAMESPACE: &str = "default";

/// What applies where a flag of [`ClusterArgs`] is absent: the scenario's `cluster:`
/// block, and the coordinator's own address for `advertise`. Flags win over these.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterDefaults {
    /// `cluster.kubernetes.namespace`.
    pub namespace: Option<String>,
    /// `cluster.kubernetes.image`.
    pub image: Option<String>,
    /// `cluster.kubernetes.cpu`.
    pub cpu: Option<String>,
    /// `cluster.kubernetes.memory`.
    pub memory: Option<String>,
    /// `cluster.advertise`, else the coordinator's listen address.
    pub advertise: Option<String>,
}

impl ClusterArgs {
    /// The spec of a run with these flags, each absent one taken from `defaults`
    /// ([`DEFAULT_IMAGE`] and [`DEFAULT_NAMESPACE`] last); no advertised address at
    /// all is an error naming `--advertise`. The result is validated, so a scenario's
    /// bad value is caught here too.
    pub fn spec(
        &self,
        run: String,
        shards: u32,
        secret: String,
        scenario: Option<(String, String)>,
        run_length: Duration,
        defaults: &ClusterDefaults,
    ) -> Result<ClusterSpec, SpecError> {
        let pick =
            |flag: &Option<String>, default: &Option<String>| flag.clone().or(default.clone());
        let advertise = pick(&self.advertise, &defaults.advertise).ok_or(SpecError {
            field: "--advertise",
            problem: SpecProblem::NoAdvertise,
        })?;
        let spec = ClusterSpec {
            run,
            namespace: pick(&self.namespace, &defaults.namespace)
                .unwrap_or_else(|| DEFAULT_NAMESPACE.into()),
            shards,
            image: pick(&self.image, &defaults.image).unwrap_or_else(|| DEFAULT_IMAGE.into()),
            advertise,
            secret,
            scenario,
            cpu: pick(&self.shard_cpu, &defaults.cpu),
            memory: pick(&self.shard_memory, &defaults.memory),
            deadline: super::deadline_for(run_length),
        };
        spec.validate()?;
        Ok(spec)
    }
}

/// A flag or field value the cluster cannot use: what was expected, and what was found
/// (at most a few dozen characters of it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// Longer than [`MAX_VALUE`] bytes: refused unread.
    #[error("longer than {MAX_VALUE} bytes")]
    TooLong,
    /// Not a Kubernetes quantity greater than zero.
    #[error(
        "expected a Kubernetes quantity greater than 0, such as `500m` or `2` (CPU) \
         or `512Mi` or `2Gi` (memory), found {found:?}"
    )]
    Quantity {
        /// The value given (its first 40 characters).
        found: String,
    },
    /// No image at all.
    #[error("expected an image such as `registry.example/headroom:0.1.0`, found nothing")]
    NoImage,
    /// An image reference with a space or control character.
    #[error("an image reference has no {bad:?}, found {found:?}")]
    ImageCharacter {
        /// The character that cannot be in one.
        bad: char,
        /// The value given.
        found: String,
    },
    /// Not an image reference.
    #[error("expected an image such as `registry.example/headroom:0.1.0`, found {found:?}")]
    Image {
        /// The value given.
        found: String,
    },
    /// `HOST:PORT` whose port is not 1 to 65535.
    #[error(
        "expected HOST:PORT such as `10.200.0.5:7700`, found {found:?}: the port must be from 1 to 65535"
    )]
    Port {
        /// The value given.
        found: String,
    },
    /// Not `HOST:PORT`.
    #[error("expected HOST:PORT such as `10.200.0.5:7700`, found {found:?}")]
    HostPort {
        /// The value given.
        found: String,
    },
    /// Not a DNS-1123 label.
    #[error(
        "expected a DNS-1123 label (1 to 63 lowercase letters, digits or `-`, starting \
         and ending with a letter or digit), found {found:?}"
    )]
    DnsLabel {
        /// The value given (its first 70 characters).
        found: String,
    },
    /// A label too long or not starting with a letter for a run name.
    #[error("expected at most {MAX_RUN_NAME} characters starting with a letter, found {found:?}")]
    RunName {
        /// The value given.
        found: String,
    },
}

/// Refuses a value longer than [`MAX_VALUE`] before looking at it.
fn bounded(s: &str) -> Result<&str, ValueError> {
    if s.len() > MAX_VALUE {
        return Err(ValueError::TooLong);
    }
    Ok(s)
}

/// A Kubernetes quantity greater than zero, as the API accepts for requests and
/// limits: a decimal number (`2`, `0.5`) with an optional suffix, binary (`Ki`, `Mi`,
/// `Gi`, `Ti`, `Pi`, `Ei`), decimal SI (`n`, `u`, `m`, `k`, `M`, `G`, `T`, `P`, `E`)
/// or an exponent (`1e3`, `5E-1`). Returns it unchanged.
pub fn parse_quantity(s: &str) -> Result<String, ValueError> {
    let expected = || ValueError::Quantity {
        found: s.chars().take(40).collect(),
    };
    let s = bounded(s)?;
    let digits_end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(digits_end);
    let mut parts = number.split('.');
    let whole = parts.next().unwrap_or("");
    let fraction = parts.next().unwrap_or("");
    let well_formed_number = parts.next().is_none() && !(whole.is_empty() && fraction.is_empty());
    let nonzero = number.bytes().any(|b| (b'1'..=b'9').contains(&b));
    let suffix_ok = match suffix {
        "" | "n" | "u" | "m" | "k" | "M" | "G" | "T" | "P" | "E" => true,
        "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => true,
        exp if exp.starts_with(['e', 'E']) => {
            let e = exp[1..].strip_prefix(['+', '-']).unwrap_or(&exp[1..]);
            !e.is_empty() && e.len() <= 3 && e.bytes().all(|b| b.is_ascii_digit())
        }
        _ => false,
    };
    if well_formed_number && nonzero && suffix_ok {
        Ok(s.to_owned())
    } else {
        Err(expected())
    }
}

/// A container image reference: printable, without spaces, not starting with `-`.
/// Its grammar in full (registry, tag, digest) is the runtime's to check; this catches
/// what would never pull, such as a value of two words.
pub fn parse_image(s: &str) -> Result<String, ValueError> {
    let s = bounded(s)?;
    if s.is_empty() {
        return Err(ValueError::NoImage);
    }
    if let Some(bad) = s.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(ValueError::ImageCharacter {
            bad,
            found: s.to_owned(),
        });
    }
    if s.starts_with('-') || s.ends_with([':', '@', '/']) {
        return Err(ValueError::Image {
            found: s.to_owned(),
        });
    }
    Ok(s.to_owned())
}

/// `HOST:PORT` the shards dial: an IPv4 address, `[IPv6]` or a DNS name, and a port
/// from 1 to 65535. Returns it unchanged.
pub fn parse_advertise(s: &str) -> Result<String, ValueError> {
    let s = bounded(s)?;
    let expected = || ValueError::HostPort {
        found: s.to_owned(),
    };
    let (host, port) = s.rsplit_once(':').ok_or_else(expected)?;
    match port.parse::<u16>() {
        Ok(p) if p > 0 => {}
        _ => {
            return Err(ValueError::Port {
                found: s.to_owned(),
            })
        }
    }
    let host_ok = if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        v6.parse::<std::net::Ipv6Addr>().is_ok()
    } else {
        host.parse::<IpAddr>()
            .map(|ip| ip.is_ipv4())
            .unwrap_or(false)
            || check_dns_name(host)
    };
    if host_ok {
        Ok(s.to_owned())
    } else {
        Err(expected())
    }
}

/// `--namespace`: a DNS-1123 label.
fn parse_namespace(s: &str) -> Result<String, ValueError> {
    check_dns_label(bounded(s)?).map(|()| s.to_owned())
}

/// A DNS-1123 label: 1 to 63 lowercase letters, digits or `-`, starting and ending
/// with a letter or digit.
pub fn check_dns_label(s: &str) -> Result<(), ValueError> {
    let ok = (1..=63).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(ValueError::DnsLabel {
            found: s.chars().take(70).collect(),
        })
    }
}

/// A run name: a DNS-1123 label of at most [`MAX_RUN_NAME`] characters starting with a
/// letter (it names a Service, which must).
pub fn check_run_name(s: &str) -> Result<(), ValueError> {
    check_dns_label(s)?;
    if s.len() > MAX_RUN_NAME || !s.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err(ValueError::RunName {
            found: s.to_owned(),
        });
    }
    Ok(())
}

/// A DNS name: dot-separated labels, each a DNS-1123 label, 253 characters at most.
fn check_dns_name(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(|label| check_dns_label(label).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_are_read_as_kubernetes_reads_them() {
        for ok in [
            "1", "500m", "0.5", ".5", "2Gi", "512Mi", "1e3", "5E-1", "1.5k", "100M",
        ] {
            assert_eq!(parse_quantity(ok).as_deref(), Ok(ok), "{ok}");
        }
        for bad in [
            "", "0", "0m", "-1", "+1", "1.2.3", ".", "1GB", "1g", "lots", "1 Gi", "1e", "1e1234",
            "Mi",
        ] {
            let e = parse_quantity(bad).unwrap_err();
            assert!(e.to_string().contains("Kubernetes quantity"), "{bad}: {e}");
        }
    }

    #[test]
    fn advertise_takes_a_host_and_a_port() {
        for ok in [
            "10.200.0.5:7700",
            "[::1]:80",
            "coordinator.default.svc:9000",
            "a:1",
        ] {
            assert_eq!(parse_advertise(ok).as_deref(), Ok(ok), "{ok}");
        }
        for bad in [
            "10.200.0.5",
            "10.200.0.5:0",
            "10.200.0.5:65536",
            ":80",
            "::1:80",
            "Host_x:80",
            "h:p",
        ] {
            assert!(
                parse_advertise(bad)
                    .unwrap_err()
                    .to_string()
                    .contains("HOST:PORT"),
                "{bad}"
            );
        }
    }

    #[test]
    fn images_and_names_are_checked() {
        assert!(parse_image("ghcr.io/x/headroom@sha256:abc").is_ok());
        for bad in ["", "two words", "-x", "repo:", "a\tb"] {
            assert!(parse_image(bad).is_err(), "{bad:?}");
        }
        assert!(check_dns_label("default").is_ok());
        assert!(check_run_name("9abc").is_err());
        assert!(parse_namespace("Kube").is_err());
    }

    #[test]
    fn hostile_values_are_refused_unread() {
        let huge = "9".repeat(1 << 20);
        for check in [
            parse_quantity,
            parse_image,
            parse_advertise,
            parse_namespace,
        ] {
            assert!(check(&huge)
                .unwrap_err()
                .to_string()
                .contains("longer than"));
        }
        // Every byte sequence is answered, never a panic.
        for s in [
            "\u{0}",
            "é",
            "1\u{301}",
            "[",
            "[]:1",
            "1e+",
            "9".repeat(600).as_str(),
        ] {
            let _ = (
                parse_quantity(s),
                parse_image(s),
                parse_advertise(s),
                check_dns_label(s),
            );
        }
    }

    #[test]
    fn flags_win_over_the_scenario_and_defaults_come_last() {
        let spec = |args: &ClusterArgs, defaults: &ClusterDefaults| {
            let secret = "0".repeat(64);
            args.spec(
                "headroom-1".into(),
                2,
                secret,
                None,
                Duration::from_secs(10),
                defaults,
            )
        };
        let none = ClusterDefaults::default();
        assert_eq!(
            spec(&ClusterArgs::default(), &none).unwrap_err().field,
            "--advertise"
        );
        let scenario = ClusterDefaults {
            namespace: Some("load".into()),
            image: Some("r/headroom:1".into()),
            cpu: Some("1".into()),
            memory: Some("lots".into()),
            advertise: Some("127.0.0.1:9".into()),
        };
        // The scenario's values apply, and are checked as the flags are.
        assert_eq!(
            spec(&ClusterArgs::default(), &scenario).unwrap_err().field,
            "--shard-memory"
        );
        let flags = ClusterArgs {
            image: Some("mine:2".into()),
            shard_memory: Some("1Gi".into()),
            advertise: Some("10.200.0.5:7".into()),
            ..ClusterArgs::default()
        };
        let s = spec(&flags, &scenario).unwrap();
        assert_eq!(
            (
                s.namespace.as_str(),
                s.image.as_str(),
                s.cpu.as_deref(),
                s.memory.as_deref()
            ),
            ("load", "mine:2", Some("1"), Some("1Gi"))
        );
        assert_eq!(
            (s.advertise.as_str(), s.deadline.as_secs()),
            ("10.200.0.5:7", 310)
        );
        let s = spec(&flags, &none).unwrap();
        assert_eq!(
            (s.namespace.as_str(), s.cpu.as_deref()),
            (DEFAULT_NAMESPACE, None)
        );
        let s = spec(
            &ClusterArgs::default(),
            &ClusterDefaults {
                advertise: Some("a:1".into()),
                ..none
            },
        );
        assert_eq!(s.unwrap().image, DEFAULT_IMAGE);
    }
}

//! [`TargetOptions`]: what the built-in target serves and how fast, and
//! [`ServiceDist`], the shape of its per-request service time.
//!
//! The options are plain data with a [`Default`]; the command line maps its flags onto
//! them, and tests and `headroom demo` build them directly.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use super::error::OptionsError;

/// How the service time of one `/work` request is drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ServiceDist {
    /// Every request takes exactly the configured service time.
    #[default]
    Fixed,
    /// Service times are exponentially distributed with the configured mean (an M/M/c
    /// server): same capacity as `Fixed`, but queueing starts well below it.
    Exp,
}

impl std::str::FromStr for ServiceDist {
    type Err = String;

    /// Parses `fixed` or `exp` (also `exponential`), case-insensitively.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "fixed" => Ok(ServiceDist::Fixed),
            "exp" | "exponential" => Ok(ServiceDist::Exp),
            other => Err(format!(
                "unknown service distribution `{other}`, expected fixed or exp"
            )),
        }
    }
}

/// Configuration of one built-in target service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetOptions {
    /// Address to listen on; port 0 picks a free port (see `RunningTarget::addr`).
    pub listen: SocketAddr,
    /// Number of workers: at most this many `/work` requests are in service at once.
    pub workers: usize,
    /// Mean service time of one `/work` request.
    pub service_time: Duration,
    /// Distribution of the service time around its mean.
    pub service_dist: ServiceDist,
    /// Most `/work` requests that may wait for a worker; one more is answered 503 at once.
    pub queue: usize,
    /// Contention mode: after its service time, each `/work` request reconciles with
    /// the n − 1 others in flight, n − 1 exchanges of this long × n, so throughput peaks
    /// and then falls as the load grows (see `contention.rs`); zero (the default) turns
    /// it off.
    pub contention: Duration,
    /// PostgreSQL connection URL for the tasks API; `None` keeps tasks in memory.
    pub postgres: Option<String>,
    /// Threads of the server's own tokio runtime (1 = a current-thread runtime).
    pub threads: usize,
    /// Most concurrent streams on one HTTP/2 connection (the server's
    /// `SETTINGS_MAX_CONCURRENT_STREAMS`).
    pub h2_max_streams: u32,
    /// Serve HTTPS (HTTP/1.1 and h2 chosen by ALPN) with a self-signed certificate made
    /// at start, instead of cleartext HTTP/1.1 and h2c.
    pub tls: bool,
    /// With `tls`, write the certificate (PEM) here, for a client's `--cacert`.
    pub tls_cert_out: Option<PathBuf>,
    /// Share of `POST /graphql` requests answered with an injected `errors` array,
    /// in parts per million (integer, so the options stay `Eq`); see
    /// [`TargetOptions::with_graphql_error_share`].
    pub graphql_error_ppm: u32,
}

/// Default of [`TargetOptions::h2_max_streams`]: nginx's and Go's choice (nginx 128,
/// Go 250), far above what one connection's client asks for unless told to.
pub const DEFAULT_H2_MAX_STREAMS: u32 = 250;

impl Default for TargetOptions {
    /// 127.0.0.1:8080, 4 workers × 5 ms fixed (800 requests/s), queue of 10 000,
    /// tasks in memory, one runtime thread, cleartext, 250 HTTP/2 streams.
    fn default() -> Self {
        TargetOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            workers: 4,
            service_time: Duration::from_millis(5),
            service_dist: ServiceDist::Fixed,
            queue: 10_000,
            contention: Duration::ZERO,
            postgres: None,
            threads: 1,
            h2_max_streams: DEFAULT_H2_MAX_STREAMS,
            tls: false,
            tls_cert_out: None,
            graphql_error_ppm: 0,
        }
    }
}

impl TargetOptions {
    /// Defaults listening on `127.0.0.1:0`: what tests and the demo want.
    pub fn loopback() -> Self {
        TargetOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            ..TargetOptions::default()
        }
    }

    /// The true ceiling of `/work` in requests per second: workers / mean service time.
    /// Infinite when the service time is zero. Without contention: with it, the
    /// throughput peaks below this at a load that depends on the lock's hold.
    pub fn capacity(&self) -> f64 {
        let secs = self.service_time.as_secs_f64();
        if secs == 0.0 {
            f64::INFINITY
        } else {
            self.workers as f64 / secs
        }
    }

    /// These options with `share` (0..=1) of `/graphql` requests failing.
    pub fn with_graphql_error_share(self, share: f64) -> Self {
        TargetOptions {
            graphql_error_ppm: (share.clamp(0.0, 1.0) * 1e6).round() as u32,
            ..self
        }
    }

    /// The share of `/graphql` requests that fail, 0..=1.
    pub fn graphql_error_share(&self) -> f64 {
        f64::from(self.graphql_error_ppm) / 1e6
    }

    /// Checks the options make a usable server: at least one worker, one thread and
    /// one HTTP/2 stream, and a certificate path only with TLS.
    pub fn validate(&self) -> Result<(), OptionsError> {
        if self.workers == 0 {
            return Err(OptionsError::NoWorkers);
        }
        if self.threads == 0 {
            return Err(OptionsError::NoThreads);
        }
        if self.h2_max_streams == 0 {
            return Err(OptionsError::NoH2Streams);
        }
        if self.graphql_error_ppm > 1_000_000 {
            return Err(OptionsError::GraphqlErrorShare);
        }
        if self.tls_cert_out.is_some() && !self.tls {
            return Err(OptionsError::CertOutWithoutTls);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_capacity_is_800_per_second() {
        let o = TargetOptions::default();
        assert_eq!(o.listen.port(), 8080);
        assert!((o.capacity() - 800.0).abs() < 1e-9);
        assert_eq!(TargetOptions::loopback().listen.port(), 0);
    }

    #[test]
    fn capacity_scales_with_workers_and_time() {
        let o = TargetOptions {
            workers: 10,
            service_time: Duration::from_millis(20),
            ..TargetOptions::default()
        };
        assert!((o.capacity() - 500.0).abs() < 1e-9);
        let zero = TargetOptions {
            service_time: Duration::ZERO,
            ..TargetOptions::default()
        };
        assert!(zero.capacity().is_infinite());
    }

    #[test]
    fn parses_distributions() {
        assert_eq!("fixed".parse(), Ok(ServiceDist::Fixed));
        assert_eq!("EXP".parse(), Ok(ServiceDist::Exp));
        assert_eq!("exponential".parse(), Ok(ServiceDist::Exp));
        assert!("normal".parse::<ServiceDist>().is_err());
    }

    #[test]
    fn validate_rejects_zero_workers_and_threads() {
        let mut o = TargetOptions::default();
        assert!(o.validate().is_ok());
        o.workers = 0;
        assert!(o.validate().is_err());
        o.workers = 1;
        o.threads = 0;
        assert!(o.validate().is_err());
        o.threads = 1;
        o.h2_max_streams = 0;
        assert!(o.validate().is_err());
        o.h2_max_streams = 1;
        o.tls_cert_out = Some("cert.pem".into());
        assert!(o.validate().is_err());
        o.tls = true;
        assert!(o.validate().is_ok());
    }
}

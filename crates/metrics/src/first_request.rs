//! [`FirstRequest`]: the summary's `connections.first_request`, what a new
//! connection's handshake cost the request that opened it, from the recorder's
//! [`Opening`] sums.

use serde::{Deserialize, Serialize};

use crate::recorder::Opening;

/// Successful requests that opened their connection with a handshake (TLS over TCP,
/// or QUIC's, which carries TLS 1.3 inside): their mean latency and the handshake's
/// share of it. All 0 in a run that made no handshake, and in a summary stored before
/// it was counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FirstRequest {
    /// Such requests.
    pub count: u64,
    /// Their mean latency from the actual send (the connect and handshake included), ms.
    pub mean_ms: f64,
    /// Their handshakes' mean, ms.
    pub handshake_mean_ms: f64,
    /// `handshake_mean_ms` ÷ `mean_ms`, percent: how much of the first request on a
    /// connection went to the handshake.
    pub handshake_share_percent: f64,
}

impl FirstRequest {
    /// The figures of the recorder's sums.
    pub fn of(o: &Opening) -> FirstRequest {
        if o.requests == 0 || o.latency_us == 0 {
            return FirstRequest::default();
        }
        let n = o.requests as f64;
        FirstRequest {
            count: o.requests,
            mean_ms: o.latency_us as f64 / n / 1000.0,
            handshake_mean_ms: o.handshake_us as f64 / n / 1000.0,
            handshake_share_percent: 100.0 * o.handshake_us as f64 / o.latency_us as f64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_is_the_ratio_of_the_sums() {
        let o = Opening {
            requests: 4,
            handshake_us: 4_000,
            latency_us: 10_000,
        };
        let f = FirstRequest::of(&o);
        assert_eq!(f.count, 4);
        assert!((f.mean_ms - 2.5).abs() < 1e-9, "{f:?}");
        assert!((f.handshake_mean_ms - 1.0).abs() < 1e-9, "{f:?}");
        assert!((f.handshake_share_percent - 40.0).abs() < 1e-9, "{f:?}");
    }

    #[test]
    fn no_opening_request_gives_zeros_not_nan() {
        let f = FirstRequest::of(&Opening::default());
        assert_eq!(f, FirstRequest::default());
        assert!(serde_json::to_string(&f).unwrap().contains("\"count\":0"));
    }
}

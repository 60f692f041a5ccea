//! The error mapping of QUIC's connection errors: what a request that needed the
//! connection is counted under; the UDP socket's buffers and GSO. (Requests over real
//! HTTP/3 servers are the integration tests' `tests/http3.rs`.)

use super::endpoint::shortfall;
use super::*;

fn closed(code: quinn::TransportErrorCode) -> quinn::ConnectionError {
    quinn::ConnectionError::ConnectionClosed(quinn::ConnectionClose {
        error_code: code,
        frame_type: None,
        reason: Bytes::from_static(b"closed by the test"),
    })
}

#[test]
fn a_failed_handshake_is_tls_and_a_lost_peer_a_timeout_or_reset() {
    use quinn::ConnectionError as E;
    // A TLS alert inside QUIC (bad_certificate, no_application_protocol).
    for alert in [42, 120] {
        let code = quinn::TransportErrorCode::crypto(alert);
        assert!(is_crypto(code));
        assert_eq!(connection_kind(&closed(code)), ErrorKind::Tls);
    }
    let violation = quinn::TransportErrorCode::PROTOCOL_VIOLATION;
    assert!(!is_crypto(violation));
    assert_eq!(connection_kind(&closed(violation)), ErrorKind::Reset);
    assert_eq!(connection_kind(&E::TimedOut), ErrorKind::Timeout);
    assert_eq!(connection_kind(&E::Reset), ErrorKind::Reset);
    assert_eq!(connection_kind(&E::VersionMismatch), ErrorKind::Protocol);
}

#[test]
fn short_udp_buffers_are_named_with_the_sysctl_that_raises_them() {
    // Linux reports twice what it granted.
    assert_eq!(shortfall(2 * UDP_BUFFER, 2 * UDP_BUFFER), None);
    let w = shortfall(2 * 212_992, 2 * UDP_BUFFER).expect("a short receive buffer");
    assert!(w.contains("receive 208 KiB (net.core.rmem_max)"), "{w}");
    assert!(!w.contains("send"), "{w}");
    assert!(w.contains("sysctl -w net.core.rmem_max=4194304"), "{w}");
    let both = shortfall(2 * 212_992, 2 * 212_992).unwrap();
    assert!(
        both.contains("receive 208 KiB") && both.contains("send 208 KiB"),
        "{both}"
    );
}

#[tokio::test]
async fn the_socket_says_how_many_packets_one_send_may_carry() {
    let endpoint = Endpoint::bind("127.0.0.1:443".parse().unwrap()).unwrap();
    let gso = endpoint.take_tally().gso_segments;
    assert!(gso >= 1, "{gso}");
    // Taking the connections' figures leaves the socket's own.
    assert_eq!(endpoint.take_tally().gso_segments, gso);
    // Linux has had UDP_SEGMENT since 4.18, and quinn uses it where the kernel has it.
    if let Some((major, minor)) = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .and_then(|r| {
            let mut parts = r.trim().split(['.', '-']);
            Some((
                parts.next()?.parse::<u32>().ok()?,
                parts.next()?.parse::<u32>().ok()?,
            ))
        })
    {
        if (major, minor) >= (4, 18) {
            assert!(
                gso > 1,
                "kernel {major}.{minor} has GSO, the socket used none"
            );
        }
    }
}

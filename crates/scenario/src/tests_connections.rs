//! The protocol, streams and connection-model keys of `client:` and `defaults:`, and
//! their flags: defaults by load model, precedence, and every refusal.

use super::tests::{plan, plan_with};
use super::tests_errors::assert_error;
use super::*;
use headroom_client::{ConnectionModel, Protocol};

const RATE: &str = "target: http://127.0.0.1:4000\nload: {rate: 10, duration: 1s}\n";
const USERS: &str = "target: http://127.0.0.1:4000\nload: {users: 4, duration: 1s}\n";
const REQ: &str = "requests: [{path: /}]\n";

fn flags(client: ClientFlags) -> Overrides {
    Overrides {
        client,
        ..Overrides::default()
    }
}

#[test]
fn each_load_model_has_its_connection_default() {
    let p = plan(&format!("{USERS}{REQ}"));
    assert_eq!(p.client.connection, ConnectionModel::PerUser);
    assert_eq!(p.client.protocol, Protocol::Http1);
    let p = plan(&format!("{RATE}{REQ}"));
    assert_eq!(p.client.connection, ConnectionModel::Shared(None));
    assert_eq!(p.client.streams, headroom_plan::ClientPlan::DEFAULT_STREAMS);
}

#[test]
fn seed_002s_experiment_is_one_line_apart() {
    let shared = plan(&format!(
        "{USERS}client: {{http2: true, streams: 10, connection: {{shared: 1}}}}\n{REQ}"
    ));
    assert_eq!(shared.client.protocol, Protocol::Http2);
    assert_eq!(shared.client.streams, 10);
    assert_eq!(shared.client.connection, ConnectionModel::Shared(Some(1)));
    // One connection for the run: one engine thread holds it.
    assert_eq!(shared.threads, 1);
    let own = plan(&format!(
        "{USERS}client: {{http2: true, streams: 10, connection: per-user}}\n{REQ}"
    ));
    assert_eq!(own.client.connection, ConnectionModel::PerUser);
}

#[test]
fn defaults_hold_the_same_keys_and_client_wins_over_them() {
    let p = plan(&format!(
        "{RATE}defaults: {{connection: per-request, http2: true}}\n{REQ}"
    ));
    assert_eq!(p.client.connection, ConnectionModel::PerRequest);
    assert_eq!(p.client.protocol, Protocol::Http2);
    let p = plan(&format!(
        "{RATE}defaults: {{connection: per-request}}\nclient: {{connection: shared}}\n{REQ}"
    ));
    assert_eq!(p.client.connection, ConnectionModel::Shared(None));
}

#[test]
fn flags_win_over_the_file_and_connections_sizes_the_pool() {
    let yaml = format!("{USERS}client: {{connection: per-user, http2: true, streams: 3}}\n{REQ}");
    let p = plan_with(
        &yaml,
        &flags(ClientFlags {
            connection: Some(ConnectionModel::PerRequest),
            streams: Some(7),
            ..ClientFlags::default()
        }),
    );
    assert_eq!(
        (p.client.connection, p.client.streams, p.client.protocol),
        (ConnectionModel::PerRequest, 7, Protocol::Http2)
    );
    // `--connections N` alone chooses a shared pool of N, in either model.
    let p = plan_with(
        &format!("{USERS}{REQ}"),
        &Overrides {
            connections: Some(3),
            ..Overrides::default()
        },
    );
    assert_eq!(p.client.connection, ConnectionModel::Shared(Some(3)));
    // ... and sizes a pool chosen by name.
    let p = plan_with(
        &format!("{RATE}client: {{connection: shared}}\n{REQ}"),
        &Overrides {
            connections: Some(5),
            ..Overrides::default()
        },
    );
    assert_eq!(p.client.connection, ConnectionModel::Shared(Some(5)));
}

#[test]
fn http2_over_tls_offers_only_h2_by_alpn() {
    let tls = |yaml: &str| {
        let p = plan(yaml);
        p.client.tls.expect("https").alpn_protocols.clone()
    };
    let h1 = tls(&format!(
        "target: https://localhost:4443\nload: {{rate: 1, duration: 1s}}\n{REQ}"
    ));
    assert_eq!(h1, vec![b"http/1.1".to_vec()]);
    let h2 = tls(&format!(
        "target: https://localhost:4443\nload: {{rate: 1, duration: 1s}}\nclient: {{http2: true}}\n{REQ}"
    ));
    assert_eq!(h2, vec![b"h2".to_vec()]);
}

#[test]
fn http3_offers_only_h3_over_tls_1_3_and_other_origins_keep_tcp() {
    const TLS: &str = "target: https://localhost:4443\nload: {rate: 1, duration: 1s}\n";
    let p = plan(&format!("{TLS}client: {{http3: true, streams: 8}}\n{REQ}"));
    assert_eq!((p.client.protocol, p.client.streams), (Protocol::Http3, 8));
    let tls = p.client.tls.expect("https");
    assert_eq!(tls.alpn_protocols, vec![b"h3".to_vec()]);
    // Redirects and streams to other origins go over TCP: not with QUIC's ALPN.
    let other = p.client.other_origins.expect("other origins");
    assert_eq!(other.alpn_protocols, vec![b"http/1.1".to_vec()]);
    let p = plan(&format!("{TLS}defaults: {{http3: true}}\n{REQ}"));
    assert_eq!(p.client.protocol, Protocol::Http3);
    let p = plan_with(
        &format!("{TLS}{REQ}"),
        &flags(ClientFlags {
            http3: true,
            ..ClientFlags::default()
        }),
    );
    assert_eq!(p.client.protocol, Protocol::Http3);
}

#[test]
fn http3_is_refused_on_cleartext_and_beside_http2() {
    assert_error(
        &format!("{RATE}client: {{http3: true}}\n{REQ}"),
        "3:17",
        &["HTTP/3 runs over QUIC, which is always TLS: the target must be https://, not http://"],
    );
    assert_error(
        &format!("{RATE}client: {{http2: true, http3: true}}\n{REQ}"),
        "3:30",
        &["client.http2 and client.http3 ask for two protocols: choose one"],
    );
}

#[test]
fn bad_connection_settings_name_the_field() {
    assert_error(
        &format!("{RATE}client: {{connection: pooled}}\n{REQ}"),
        "3:22",
        &["client.connection: expected per-user, shared, shared:N or per-request, found \"pooled\""],
    );
    assert_error(
        &format!("{RATE}client: {{connection: {{shared: 0}}}}\n{REQ}"),
        "3:22",
        &["client.connection.shared: expected a positive integer at most 1000000, found 0"],
    );
    assert_error(
        &format!("{RATE}client: {{connection: {{pool: 3}}}}\n{REQ}"),
        "3:22",
        &["client.connection: expected per-user, shared, {shared: N} or per-request"],
    );
    assert_error(
        &format!("{RATE}defaults: {{streams: 0, http2: true}}\n{REQ}"),
        "3:21",
        &["defaults.streams: expected a positive integer, found 0"],
    );
    assert_error(
        &format!("{RATE}client: {{streams: 10}}\n{REQ}"),
        "3:19",
        &["client.streams: streams apply to HTTP/2 and HTTP/3 connections: add --http2 or --http3"],
    );
    assert_error(
        &format!("{RATE}client: {{connectionz: shared}}\n{REQ}"),
        "3:10",
        &[
            "unknown field `connectionz`, expected one of",
            "streams, connection",
        ],
    );
}

#[test]
fn bad_connection_flags_are_refused_with_the_reason() {
    let err = |yaml: &str, o: Overrides| {
        compile::from_text("s.yaml", yaml, &o)
            .unwrap_err()
            .to_string()
    };
    let e = err(
        &format!("{RATE}{REQ}"),
        flags(ClientFlags {
            connection: Some(ConnectionModel::PerUser),
            ..ClientFlags::default()
        }),
    );
    assert!(
        e.contains("--connection: per-user needs the users model"),
        "{e}"
    );
    let e = err(
        &format!("{RATE}client: {{connection: per-user}}\n{REQ}"),
        Overrides::default(),
    );
    assert!(
        e.contains("client.connection: per-user needs the users model"),
        "{e}"
    );
    let e = err(
        &format!("{RATE}{REQ}"),
        flags(ClientFlags {
            streams: Some(4),
            ..ClientFlags::default()
        }),
    );
    assert!(e.contains("--streams: streams apply to HTTP/2"), "{e}");
    let e = err(
        &format!("{RATE}{REQ}"),
        flags(ClientFlags {
            streams: Some(0),
            http2: true,
            ..ClientFlags::default()
        }),
    );
    assert!(
        e.contains("--streams: expected a positive integer, found 0"),
        "{e}"
    );
}

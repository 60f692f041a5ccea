//! Prometheus watches over `https://` (the run's `--cacert` trusted, an untrusted
//! certificate refused naming TLS) and against hostile endpoints (an endless body or
//! header, cut at the limit).

use headroom::target::{self, TargetOptions};
use headroom::watch::Detail;

use super::{run, watch, Untouched, LIMIT};
use crate::support::hostile::{Hostile, Mode};
use crate::support::{assert_adds_up, assert_exit, run_headroom};

#[test]
fn prometheus_watch_scrapes_https_trusting_the_runs_cacert() {
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("target.pem");
    let t = target::spawn(TargetOptions {
        tls: true,
        tls_cert_out: Some(cert.clone()),
        ..TargetOptions::loopback()
    })
    .expect("target");
    assert!(t.url().starts_with("https://"), "{}", t.url());
    // By name: resolved, and the name checked against the certificate's (SNI).
    let spec = format!(
        "prometheus:https://localhost:{}/metrics#headroom_target_requests_total",
        t.addr().port()
    );
    let (out, s) = run(
        dir.path(),
        &[
            "--url",
            &format!("{}/health", t.url()),
            "--rate",
            "100",
            "--duration",
            "2s",
            "--watch",
            &spec,
            "--watch-interval",
            "500ms",
            "--cacert",
            cert.to_str().unwrap(),
        ],
    );
    assert_exit(&out, 0);
    assert_adds_up(&s);
    assert!(s.completed >= 100, "{} completed", s.completed);
    let w = watch(&s, &spec);
    assert!(w.gaps.is_empty(), "{:?}", w.gaps);
    let Detail::Prometheus(p) = &w.detail else {
        panic!("not a prometheus watch: {w:?}")
    };
    assert!(p.samples.len() >= 3, "{} samples", p.samples.len());
    let health = p
        .series
        .iter()
        .find(|x| x.series.contains("endpoint=\"health\""))
        .unwrap_or_else(|| panic!("no health series in {:?}", p.series));
    assert!(health.last - health.first >= 100.0, "{health:?}");
    t.shutdown();
}

#[test]
fn an_untrusted_https_endpoint_is_refused_naming_tls() {
    let t = target::spawn(TargetOptions {
        tls: true,
        ..TargetOptions::loopback()
    })
    .expect("target");
    let load = Untouched::new();
    let spec = format!("prometheus:{}/metrics", t.url());
    let out = run_headroom(
        [
            "run",
            "--url",
            &load.url(),
            "--rate",
            "10",
            "--duration",
            "1s",
            "--watch",
            &spec,
        ],
        LIMIT,
    );
    assert_exit(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&spec)
            && err.contains(&format!("TLS handshake with {}", t.addr()))
            && err.contains("UnknownIssuer")
            && err.contains("--cacert"),
        "{err}"
    );
    assert!(!load.connected(), "load was sent despite a bad watch");
    // `--insecure` for the run is `--insecure` for the watch.
    let dir = tempfile::tempdir().unwrap();
    let (out, s) = run(
        dir.path(),
        &[
            "--url",
            &format!("{}/health", t.url()),
            "--rate",
            "50",
            "--duration",
            "1s",
            "--watch",
            &spec,
            "--insecure",
        ],
    );
    assert_exit(&out, 0);
    let w = watch(&s, &spec);
    let Detail::Prometheus(p) = &w.detail else {
        panic!("not a prometheus watch: {w:?}")
    };
    assert!(!p.samples.is_empty() && w.gaps.is_empty(), "{w:?}");
    t.shutdown();
}

#[test]
fn a_hostile_endpoint_is_cut_at_the_limit() {
    for (mode, says) in [
        (
            Mode::EndlessBody { paced: false },
            "response body larger than 16 MiB",
        ),
        (Mode::EndlessHeader, "response head too large"),
    ] {
        let hostile = Hostile::start(mode);
        let load = Untouched::new();
        let spec = format!("prometheus:{}metrics", hostile.url());
        let out = run_headroom(
            [
                "run",
                "--url",
                &load.url(),
                "--rate",
                "10",
                "--duration",
                "1s",
                "--watch",
                &spec,
            ],
            LIMIT,
        );
        assert_exit(&out, 2);
        let err = String::from_utf8_lossy(&out.stderr);
        // Cut at the limit (a scrape that ran into its 2 s would say "no answer").
        assert!(err.contains(&spec) && err.contains(says), "{mode:?}: {err}");
        assert!(!load.connected(), "load was sent despite a bad watch");
    }
}

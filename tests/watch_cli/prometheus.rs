//! Prometheus watches: a scraped counter of the built-in target, as a rate.

use headroom::target::{self, TargetOptions};
use headroom::watch::Detail;

use super::{run_watching, watch};
use crate::support::assert_exit;

#[test]
fn prometheus_watch_sees_the_targets_request_counter_grow() {
    let t = target::spawn(TargetOptions::loopback()).expect("target");
    let dir = tempfile::tempdir().unwrap();
    let spec = format!(
        "prometheus:{}/metrics#headroom_target_requests_total",
        t.url()
    );
    let (out, s) = run_watching(
        dir.path(),
        &format!("{}/health", t.url()),
        "500",
        "3s",
        &spec,
    );
    assert_exit(&out, 0);
    let w = watch(&s, &spec);
    let Detail::Prometheus(p) = &w.detail else {
        panic!("not a prometheus watch: {w:?}")
    };
    let health = p
        .series
        .iter()
        .find(|x| x.series.contains("endpoint=\"health\""))
        .unwrap_or_else(|| panic!("no health series in {:?}", p.series));
    assert!(health.series.starts_with("headroom_target_requests_total{"));
    assert_eq!(health.kind, "counter");
    assert!(health.last - health.first >= 1000.0, "{health:?}");
    let rate = health.rate_per_s.unwrap();
    assert!((300.0..700.0).contains(&rate), "rate {rate}");
    assert!(p
        .series
        .iter()
        .all(|x| x.series.starts_with("headroom_target_requests_total")));
    t.shutdown();
}

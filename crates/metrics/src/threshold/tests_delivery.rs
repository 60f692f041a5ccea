//! Delivery rules (`delivery.p95`, `delivery.lost`, `delivery.duplicated`): parsed,
//! and judged against the `delivery` object a real sink tracker summarised.

use std::time::{Duration, Instant};

use super::*;
use headroom_sink::Tracker;

#[test]
fn delivery_thresholds_parse_and_judge_the_delivery_object() {
    let p95 = Threshold::parse("delivery.p95 < 2s").unwrap();
    assert_eq!(
        (p95.scope.clone(), p95.metric, p95.limit),
        (None, Metric::DeliveryLatency(LatencyStat::P95), 2000.0)
    );
    let lost = Threshold::parse("delivery.lost < 0.1%").unwrap();
    assert_eq!((lost.metric, lost.limit), (Metric::DeliveryLost, 0.1));
    assert!(Threshold::parse("lost < 1%")
        .unwrap_err()
        .to_string()
        .contains("delivery.lost"));
    assert!(Threshold::parse("delivery.avg < 1s").is_err());
    assert!(Threshold::parse("delivery.rate > 1/s").is_err());
    assert!(Threshold::parse("delivery.lost < 1ms").is_err());

    let mut s = Summary::empty("d", 1.0);
    assert!(
        !lost.evaluate(&s).ok,
        "a delivery rule without a sink fails"
    );
    let t = Tracker::new(Instant::now(), 10, None, false);
    let sent = Instant::now();
    for id in ["a", "b", "c", "d"] {
        t.register(id, sent);
    }
    let at = sent + Duration::from_millis(150);
    for id in ["a", "b", "c", "c"] {
        t.deliver(id, at);
    }
    s.delivery = Some(t.summary(Duration::ZERO));
    let r = lost.evaluate(&s);
    assert!(!r.ok && (r.value - 25.0).abs() < 1e-9, "{r:?}");
    let r = p95.evaluate(&s);
    assert!(r.ok && (r.value - 150.0).abs() < 0.2, "{r:?}");
    let r = Threshold::parse("delivery.duplicated <= 25%")
        .unwrap()
        .evaluate(&s);
    assert!(r.ok && (r.value - 25.0).abs() < 1e-9, "{r:?}");
}

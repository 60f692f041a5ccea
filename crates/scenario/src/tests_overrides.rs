//! Command-line overrides, runs with no scenario file, and reading files from disk.

use super::tests::{plan_with, request, secs};
use super::*;
use headroom_client::ConnectionModel;
use headroom_plan::{Load, Schedule, Think};

#[test]
fn overrides_win_over_the_file() {
    let file = "target: http://127.0.0.1:4000\nload: {model: users, users: 5, duration: 20s, think: 1s}\nthresholds: [\"p95 < 1s\"]\nrequests: [{path: /}]\n";
    let o = Overrides {
        url: Some("http://127.0.0.2:5000/v2".into()),
        rate: Some(250.0),
        duration: Some(secs(3.0)),
        threads: Some(3),
        thresholds: vec!["errors < 1%".into()],
        max_in_flight: Some(7),
        timeout: Some(secs(2.0)),
        users: None,
        connections: Some(2),
        fallback_rate: Some(9.0),
        client: ClientFlags::default(),
        request: Default::default(),
        proto_paths: Vec::new(),
        workload: None,
    };
    let p = plan_with(file, &o);
    assert_eq!(
        (p.target.authority.as_str(), p.target.base_path.as_str()),
        ("127.0.0.2:5000", "/v2")
    );
    assert_eq!(request(&p, 0).path.as_static(), Some("/"));
    match &p.load {
        Load::ArrivalRate {
            schedule,
            max_in_flight,
        } => {
            assert_eq!(*schedule, Schedule::constant(250.0, secs(3.0)));
            assert_eq!(*max_in_flight, 7);
            assert_eq!(p.client.connection, ConnectionModel::Shared(Some(2)));
        }
        other => panic!("{other:?}"),
    }
    // Three threads asked, but a pool of two connections: one thread per connection.
    assert_eq!((p.threads, p.timeout), (2, secs(2.0)));
    let exprs: Vec<&str> = p.thresholds.iter().map(|t| t.expr.as_str()).collect();
    assert_eq!(exprs, vec!["p95 < 1s", "errors < 1%"]);

    // --users keeps the file's think time; --duration alone resizes a constant load.
    let p = plan_with(
        file,
        &Overrides {
            users: Some(9),
            ..Overrides::default()
        },
    );
    assert!(
        matches!(&p.load, Load::Users { schedule, think: Think::Fixed(t), .. }
        if *schedule == Schedule::constant(9.0, secs(20.0)) && *t == secs(1.0))
    );
    let p = plan_with(
        file,
        &Overrides {
            duration: Some(secs(4.0)),
            ..Overrides::default()
        },
    );
    assert_eq!(p.duration(), secs(4.0));

    // --rate over a staged file holds for the stages' total length.
    let staged = "target: http://127.0.0.1:4000\nload: {stages: [{duration: 7s, target: 10}]}\nrequests: [{path: /}]\n";
    let p = plan_with(
        staged,
        &Overrides {
            rate: Some(5.0),
            ..Overrides::default()
        },
    );
    assert!(
        matches!(&p.load, Load::ArrivalRate { schedule, .. } if *schedule == Schedule::constant(5.0, secs(7.0)))
    );
}

#[test]
fn quick_mode_builds_one_get() {
    let o = Overrides {
        url: Some("http://127.0.0.1:8080/health?deep=1".into()),
        rate: Some(100.0),
        ..Overrides::default()
    };
    let p = load(None, &o).unwrap();
    assert_eq!(p.name, "quick");
    assert_eq!(p.names, vec!["GET /health"]);
    assert_eq!(p.target.base_path, "");
    let r = request(&p, 0);
    assert_eq!(
        (r.method.as_str(), r.path.as_static()),
        ("GET", Some("/health?deep=1"))
    );
    assert_eq!(p.timeout, secs(30.0));
    assert!(
        p.client.connection == ConnectionModel::Shared(None)
            && matches!(&p.load, Load::ArrivalRate { schedule, max_in_flight: 10_000 }
        if *schedule == Schedule::constant(100.0, secs(10.0)))
    );

    let o = Overrides {
        url: Some("http://127.0.0.1:8080".into()),
        users: Some(4),
        ..Overrides::default()
    };
    let p = load(None, &o).unwrap();
    assert_eq!(p.names, vec!["GET /"]);
    assert!(matches!(
        &p.load,
        Load::Users {
            think: Think::None,
            ..
        }
    ));
}

#[test]
fn load_reads_the_file_and_names_it_in_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("smoke.yaml");
    std::fs::write(
        &path,
        "target: http://127.0.0.1:1\nload: {rate: 1, duration: 1s}\nrequests: [{path: /}]\n",
    )
    .unwrap();
    assert_eq!(
        load(Some(&path), &Overrides::default()).unwrap().name,
        "smoke"
    );
    std::fs::write(
        &path,
        "target: http://127.0.0.1:1\nload: {rate: 1, duration: 1}\nrequests: [{path: /}]\n",
    )
    .unwrap();
    let err = load(Some(&path), &Overrides::default()).unwrap_err();
    assert_eq!(err.location, format!("{}:2:27", path.display()));
    let missing = load(Some(&dir.path().join("nope.yaml")), &Overrides::default()).unwrap_err();
    assert!(
        missing.message.starts_with("cannot read the scenario"),
        "{missing}"
    );
}

#[test]
fn parse_duration_is_public_for_flags() {
    assert_eq!(parse_duration("1m30s"), Ok(secs(90.0)));
    assert!(parse_duration("30").is_err());
}

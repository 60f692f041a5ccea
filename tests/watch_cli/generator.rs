//! The generator's own watch, always first: a rate one thread cannot drive is a
//! generator-bound warning.

use headroom::watch::Detail;

use super::run;
use crate::support::{stdout, Nginx};

#[test]
fn an_impossible_rate_on_one_thread_is_a_generator_bound_warning() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let (out, s) = run(
        dir.path(),
        &[
            "--url",
            &nginx.url(),
            "--rate",
            "1000000",
            "--threads",
            "1",
            "--duration",
            "2s",
        ],
    );
    assert!(s.generator.bound, "{:?}", s.generator);
    let g = &s.watches[0];
    let Detail::Generator(d) = &g.detail else {
        panic!("first watch is not the generator")
    };
    assert!(d.bound && d.reason == s.generator.reason, "{d:?}");
    assert!(!g.warnings.is_empty(), "{g:?}");
    assert!(d.cpu_cores.max > 0.5, "{:?}", d.cpu_cores);
    assert!(
        stdout(&out).contains("WARNING (self): the generator"),
        "{}",
        stdout(&out)
    );
}

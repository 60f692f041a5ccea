//! Render-time comparison: headroom's compiled templates against minijinja for the same
//! templates. Templates render once per request on the generator's hot path, which is
//! why headroom compiles its own small template language instead of using a general
//! engine.
//!
//! Run with `cargo run --release --example template_bench`; prints ns/render for both.

use std::cell::RefCell;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use headroom::template::{Escape, RenderContext, Template, Vars};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const ROUNDS: u32 = 200_000;

thread_local! {
    static RNG: RefCell<SmallRng> = RefCell::new(SmallRng::seed_from_u64(1));
}
static SEQ: AtomicU64 = AtomicU64::new(0);

struct Case {
    label: &'static str,
    source: &'static str,
    escape: Escape,
}

const CASES: [Case; 3] = [
    Case {
        label: "path with rand_int",
        source: "/api/tasks?limit=50&offset={{ rand_int(0, 100000) }}",
        escape: Escape::None,
    },
    Case {
        label: "flow path with a variable",
        source: "/api/tasks/{{ id }}/runs/{{ seq() }}",
        escape: Escape::None,
    },
    Case {
        label: "JSON body, 3 placeholders",
        source: r#"{"name":"task-{{ seq() }}","owner":"{{ id }}","priority":{{ rand_int(1, 5) }},"tags":["a","b"]}"#,
        escape: Escape::Json,
    },
];

fn ns_per_render(mut render: impl FnMut(&mut Vec<u8>)) -> f64 {
    let mut out = Vec::with_capacity(256);
    for _ in 0..ROUNDS / 10 {
        out.clear();
        render(&mut out);
    }
    let start = Instant::now();
    for _ in 0..ROUNDS {
        out.clear();
        render(&mut out);
        black_box(&out);
    }
    start.elapsed().as_nanos() as f64 / f64::from(ROUNDS)
}

fn main() {
    let mut env = minijinja::Environment::new();
    env.add_function("rand_int", |lo: i64, hi: i64| {
        RNG.with(|r| r.borrow_mut().random_range(lo..=hi))
    });
    env.add_function("seq", || SEQ.fetch_add(1, Ordering::Relaxed));
    for (i, case) in CASES.iter().enumerate() {
        env.add_template_owned(format!("t{i}"), case.source.to_string())
            .expect("the benchmark templates are valid minijinja");
    }
    let ctx = minijinja::context! { id => "42" };

    let mut vars = Vars::default();
    vars.set("id", "42".to_string());
    let mut rng = SmallRng::seed_from_u64(1);

    println!(
        "{:<28} {:>14} {:>14} {:>8}",
        "template", "headroom ns", "minijinja ns", "ratio"
    );
    for (i, case) in CASES.iter().enumerate() {
        let ours = Template::compile(case.source, case.escape).expect("valid template");
        let theirs = env
            .get_template(&format!("t{i}"))
            .expect("registered above");
        let a = ns_per_render(|out| {
            ours.render(
                &mut RenderContext {
                    rng: &mut rng,
                    vars: &vars,
                    user: 1,
                    iteration: 0,
                },
                out,
            )
        });
        let b = ns_per_render(|out| {
            let text = theirs.render(ctx.clone()).expect("renders");
            out.extend_from_slice(text.as_bytes());
        });
        println!("{:<28} {:>14.1} {:>14.1} {:>7.1}x", case.label, a, b, b / a);
    }
}

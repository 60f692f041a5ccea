//! `headroom sink`: the delivery sink on its own. It answers deliveries as the
//! scenario's `sink:` would, prints a line a second (deliveries, duplicates, refusals,
//! rejected), and at Ctrl-C or after `--duration` a summary table (and `--out` JSON).
//! Nothing registers ids here, so every id is tracked when first delivered: latency
//! from send is not known, duplicates are.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;

use crate::cli::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK};
use crate::scenario::parse_duration;
use crate::sink::{self, Correlate, Fail, SinkLatency, SinkOptions, Tracker};

/// Flags of `headroom sink`.
#[derive(Debug, Args, Clone)]
pub struct SinkArgs {
    /// Address to listen on (loopback only; port 0 picks one, printed at start).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: std::net::SocketAddr,
    /// Wait before answering each delivery: `100ms`, or a range `50ms..150ms`.
    #[arg(long, default_value = "0ms")]
    pub latency: String,
    /// Status of an accepted delivery.
    #[arg(long, default_value_t = 200)]
    pub status: u16,
    /// Share of distinct ids refused (exactly ⌊n·share⌋ of n), 0..=1.
    #[arg(long, default_value_t = 0.0)]
    pub fail_share: f64,
    /// Status of a refused delivery.
    #[arg(long, default_value_t = 503)]
    pub fail_status: u16,
    /// Refuse every attempt for a chosen id (default: its first attempt only).
    #[arg(long)]
    pub fail_every_attempt: bool,
    /// JSONPath of the id in the JSON body (the target's scheduler delivers the task,
    /// whose `id` is `$.id`).
    #[arg(long, default_value = "$.id", conflicts_with = "id_header")]
    pub id_json_path: String,
    /// Take the id from this header instead.
    #[arg(long)]
    pub id_header: Option<String>,
    /// Largest delivery body read (bytes); larger ones get 413 and are counted.
    #[arg(long, default_value_t = sink::DEFAULT_MAX_BODY)]
    pub max_body: usize,
    /// Most ids tracked at once.
    #[arg(long, default_value_t = sink::DEFAULT_MAX_IDS)]
    pub max_ids: usize,
    /// Stop after this long (default: at Ctrl-C).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Write the summary JSON (the `delivery` object) to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

fn options(args: &SinkArgs) -> Result<SinkOptions, String> {
    let d = |s: &str| parse_duration(s.trim()).map_err(|e| e.to_string());
    let latency = match args.latency.split_once("..") {
        Some((lo, hi)) => SinkLatency::Range(d(lo)?, d(hi)?),
        None => SinkLatency::Fixed(d(&args.latency)?),
    };
    let correlate = match &args.id_header {
        Some(h) => Correlate::Header(h.to_ascii_lowercase()),
        None => Correlate::json_path(&args.id_json_path).map_err(|e| e.to_string())?,
    };
    let fail = (args.fail_share > 0.0).then_some(Fail {
        share: args.fail_share,
        status: args.fail_status,
        every_attempt: args.fail_every_attempt,
    });
    let opts = SinkOptions {
        listen: args.listen,
        latency,
        status: args.status,
        fail,
        correlate,
        max_ids: args.max_ids,
        max_body: args.max_body,
    };
    opts.validate().map_err(|e| e.to_string())?;
    Ok(opts)
}

/// Runs `headroom sink` and returns the exit code.
pub fn run(args: &SinkArgs) -> i32 {
    let opts = match options(args) {
        Ok(opts) => opts,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let start = Instant::now();
    let tracker = Arc::new(Tracker::new(start, opts.max_ids, opts.fail, true));
    let running = match sink::spawn(opts, tracker.clone()) {
        Ok(running) => running,
        Err(e) => {
            eprintln!("error: {e:#}");
            return EXIT_FAILURE;
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    if let Err(e) = ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed)) {
        eprintln!("warning: cannot handle Ctrl-C ({e})");
    }
    // The listening line is what scripts wait for.
    println!("headroom sink listening on {}", running.url());
    let end = args.duration.map(|d| start + d);
    let mut second = 1u64;
    let mut before = tracker.summary(Duration::ZERO);
    while !stop.load(Ordering::Relaxed) && end.is_none_or(|e| Instant::now() < e) {
        // Short sleeps so Ctrl-C and --duration end the wait promptly.
        std::thread::sleep(Duration::from_millis(50));
        if start.elapsed() < Duration::from_secs(second) {
            continue;
        }
        let now = tracker.summary(Duration::ZERO);
        let rejected = |s: &sink::DeliverySummary| s.no_id + s.bad_body + s.too_large;
        println!(
            "{second:>4}s  delivered {:>6} (total {:>8})  duplicated {:>5}  refused {:>5}  rejected {:>5}",
            now.delivered - before.delivered,
            now.delivered,
            now.duplicated - before.duplicated,
            now.refused - before.refused,
            rejected(&now) - rejected(&before),
        );
        before = now;
        second += 1;
    }
    running.shutdown();
    let summary = tracker.summary(Duration::ZERO);
    println!("\n{}", summary.table());
    if let Some(path) = &args.out {
        let json = serde_json::to_string_pretty(&summary).unwrap_or_default();
        if let Err(e) = std::fs::write(path, json) {
            eprintln!("error: writing {}: {e}", path.display());
            return EXIT_FAILURE;
        }
    }
    EXIT_OK
}

//! Live progress while a run goes: the engine's [`Live`] figures go to
//! [`Progress::update`] (about once a second) and calls [`Progress::finish`] at the end.
//!
//! On a terminal the progress is an indicatif bar redrawn in place; otherwise (CI logs,
//! a pipe) it is plain lines, at most one per reporting interval of run time, so a log
//! stays readable. Everything goes to stderr: stdout is kept for the summary.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::engine::Live;
use crate::report::units::{clock, latency, percent, share};

/// Formats the figures as one line, e.g.
/// `[  5s/10s] 1999 req/s  p95 1.20ms  errors 0 (0.00%)  dropped 0  in flight 3`,
/// followed by `  users N` in the closed model. The elapsed time is padded to the width
/// of the total so that successive lines align.
/// The rate and p95 are those of the last whole second.
pub fn format_line(s: &Live) -> String {
    let total = clock(s.total);
    let elapsed = clock(s.elapsed);
    let p95 = if s.requests > 0 {
        latency(s.last.p95_ms)
    } else {
        "-".to_string()
    };
    let rate = s.last.requests;
    let mut line = format!(
        "[{elapsed:>width$}/{total}] {rate} req/s  p95 {p95}  errors {} ({})  dropped {}  \
         in flight {}",
        s.errors,
        percent(share(s.errors, s.requests)),
        s.dropped,
        s.in_flight,
        width = total.len(),
    );
    if let Some(users) = s.users {
        line.push_str(&format!("  users {users}"));
    }
    line
}

/// How often plain lines are printed, in run time: every second for runs up to a
/// minute, every 5 s up to ten minutes, every 10 s beyond.
fn interval_for(total: Duration) -> Duration {
    match total.as_secs() {
        0..=60 => Duration::from_secs(1),
        61..=600 => Duration::from_secs(5),
        _ => Duration::from_secs(10),
    }
}

enum Output {
    Bar(ProgressBar),
    Lines {
        writer: Box<dyn Write + Send>,
        /// Run time at which the next line is due.
        next_at: Duration,
        /// The latest figures not yet printed, shown by `finish` (boxed: `Live` holds
        /// the second's histogram).
        pending: Option<Box<Live>>,
    },
}

/// The live progress display of one run. Not shared: the thread that receives the
/// engine's figures owns it. Write errors on the output are ignored (progress is best effort).
pub struct Progress {
    label: String,
    output: Output,
}

impl Progress {
    /// A display for the run called `label`: a progress bar when stderr is a terminal,
    /// plain periodic lines on stderr otherwise.
    pub fn new(label: &str) -> Progress {
        if std::io::stderr().is_terminal() {
            Progress::bar(label, ProgressDrawTarget::stderr())
        } else {
            Progress::plain(label, Box::new(std::io::stderr()))
        }
    }

    /// A progress bar, `LABEL [====>   ] [elapsed/total] ...`, drawn on `target`.
    fn bar(label: &str, target: ProgressDrawTarget) -> Progress {
        let style = ProgressStyle::with_template("{prefix} [{bar:20}] {msg}")
            .expect("the progress template is valid")
            .progress_chars("=> ");
        let bar = ProgressBar::with_draw_target(Some(0), target)
            .with_style(style)
            .with_prefix(label.to_string());
        Progress {
            label: label.to_string(),
            output: Output::Bar(bar),
        }
    }

    /// A display that writes plain lines, `LABEL [elapsed/total] ...`, to `writer`: at
    /// most one per reporting interval of run time, however often `update` is called.
    pub fn plain(label: &str, writer: Box<dyn Write + Send>) -> Progress {
        let output = Output::Lines {
            writer,
            next_at: Duration::ZERO,
            pending: None,
        };
        Progress {
            label: label.to_string(),
            output,
        }
    }

    /// Shows the latest figures (they must come in order of `elapsed`).
    pub fn update(&mut self, live: &Live) {
        match &mut self.output {
            Output::Bar(bar) => {
                bar.set_length(live.total.as_millis() as u64);
                bar.set_position(live.elapsed.as_millis() as u64);
                bar.set_message(format_line(live));
            }
            Output::Lines {
                writer,
                next_at,
                pending,
            } => {
                if live.elapsed < *next_at {
                    *pending = Some(Box::new(live.clone()));
                    return;
                }
                let every = interval_for(live.total);
                // The next line is due at the next multiple of the interval, so lines
                // land on round times even if updates arrive late.
                let due = (live.elapsed.as_millis() / every.as_millis() + 1) as u32;
                *next_at = every * due;
                *pending = None;
                let _ = writeln!(writer, "{} {}", self.label, format_line(live));
            }
        }
    }

    /// Ends the display: the bar is cleared, so the summary that follows stands alone;
    /// in plain mode the last figures are printed if they were held back.
    pub fn finish(&mut self) {
        match &mut self.output {
            Output::Bar(bar) => bar.finish_and_clear(),
            Output::Lines {
                writer, pending, ..
            } => {
                if let Some(live) = pending.take() {
                    let _ = writeln!(writer, "{} {}", self.label, format_line(&live));
                }
                let _ = writer.flush();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::summary::Second;
    use std::sync::{Arc, Mutex};

    fn snapshot(elapsed_ms: u64, total_s: u64) -> Live {
        Live {
            elapsed: Duration::from_millis(elapsed_ms),
            total: Duration::from_secs(total_s),
            requests: 9_995,
            errors: 5,
            dropped: 2,
            in_flight: 3,
            users: None,
            last: Second {
                requests: 1999,
                p95_ms: 1.2,
                ..Second::default()
            },
            ..Live::default()
        }
    }

    #[test]
    fn format_line_shows_every_figure() {
        let s = snapshot(5_000, 10);
        assert_eq!(
            format_line(&s),
            "[ 5s/10s] 1999 req/s  p95 1.20ms  errors 5 (0.05%)  dropped 2  in flight 3"
        );
        let closed = Live {
            users: Some(50),
            elapsed: Duration::from_secs(65),
            ..s
        };
        let closed = Live {
            total: Duration::from_secs(600),
            ..closed
        };
        assert_eq!(
            format_line(&closed),
            "[ 1m05s/10m00s] 1999 req/s  p95 1.20ms  errors 5 (0.05%)  dropped 2  in flight 3  \
             users 50"
        );
    }

    #[test]
    fn format_line_before_any_request() {
        let s = Live {
            total: Duration::from_secs(30),
            ..Live::default()
        };
        assert_eq!(
            format_line(&s),
            "[ 0s/30s] 0 req/s  p95 -  errors 0 (0.00%)  dropped 0  in flight 0"
        );
    }

    /// A writer the test can read back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn elapsed_of_lines(&self) -> Vec<String> {
            let text = String::from_utf8(self.0.lock().unwrap().clone()).unwrap();
            let elapsed = |line: &str| line.split(['[', '/']).nth(1).unwrap().trim().to_string();
            text.lines().map(elapsed).collect()
        }
    }

    #[test]
    fn plain_lines_come_once_per_interval_and_finish_prints_the_last() {
        let out = Shared::default();
        let mut progress = Progress::plain("run", Box::new(out.clone()));
        // Updates four times a second over 2.5 s of a 10 s run: one line per second.
        for ms in (0..=2_500).step_by(250) {
            progress.update(&snapshot(ms, 10));
        }
        assert_eq!(out.elapsed_of_lines(), ["0s", "1s", "2s"]);
        progress.finish();
        assert_eq!(out.elapsed_of_lines(), ["0s", "1s", "2s", "2s"]);
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert!(text.starts_with("run [ 0s/10s] 1999 req/s"), "{text}");
    }

    #[test]
    fn plain_lines_thin_out_on_long_runs() {
        let out = Shared::default();
        let mut progress = Progress::plain("soak", Box::new(out.clone()));
        for s in 0..=20 {
            progress.update(&snapshot(s * 1_000, 300));
        }
        progress.finish();
        assert_eq!(out.elapsed_of_lines(), ["0s", "5s", "10s", "15s", "20s"]);
    }

    /// A terminal that keeps what is on its one line, for checking the bar.
    #[derive(Debug, Default, Clone)]
    struct Screen(Arc<Mutex<String>>);

    impl indicatif::TermLike for Screen {
        fn width(&self) -> u16 {
            120
        }
        fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.write_str(s)
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            self.0.lock().unwrap().push_str(s);
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            self.0.lock().unwrap().clear();
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn bar_shows_position_and_line_then_clears() {
        let screen = Screen::default();
        let target = ProgressDrawTarget::term_like(Box::new(screen.clone()));
        let mut progress = Progress::bar("checkout", target);
        progress.update(&snapshot(5_000, 10));
        let Output::Bar(bar) = &progress.output else {
            panic!("not a bar")
        };
        bar.force_draw();
        let drawn = screen.0.lock().unwrap().clone();
        let want = format!(
            "checkout [==========>         ] {}",
            format_line(&snapshot(5_000, 10))
        );
        assert_eq!(drawn.trim_end(), want);
        progress.finish();
        assert_eq!(screen.0.lock().unwrap().trim(), "");
    }
}

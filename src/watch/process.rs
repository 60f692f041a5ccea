//! `pid:N` and `process:NAME`: CPU (cores), resident memory, threads and open file
//! descriptors beside their soft limit, read from `/proc` with `procfs`.
//!
//! A name is resolved again at every sample, so a restarted process is followed; the
//! figures of every matching process are summed, except the file descriptors, which
//! are those of the process nearest its own limit (a limit is per process).

use std::collections::HashMap;

use procfs::process::{LimitValue, Process};
use serde::{Deserialize, Serialize};

use super::sampler::{Finished, Sampler};
use super::summary::{mib, round3, AvgMax, Detail, Max};
use crate::metrics::summary::Summary;

/// Share of the fd soft limit at which a warning is raised.
pub const FD_WARN_SHARE: f64 = 0.8;

/// Figures of a `process` watch.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ProcessSummary {
    /// CPU in cores (1.0 = one core busy), per sample.
    pub cpu_cores: AvgMax,
    /// Resident memory, MiB.
    pub rss_mb: Max,
    /// Threads.
    pub threads: Max,
    /// Open file descriptors at most, and the soft limit of that process.
    pub fds: FdUse,
    /// Most processes matched at once.
    pub processes: usize,
    /// One entry per successful sample.
    pub samples: Vec<ProcessSample>,
}

/// Open file descriptors and their soft limit (`None`: unlimited or unreadable).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Default)]
pub struct FdUse {
    /// Largest count seen.
    pub max: u64,
    /// `RLIMIT_NOFILE` soft limit of the process that had it.
    pub limit: Option<u64>,
}

/// One sample of a `process` watch.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProcessSample {
    /// Seconds since the watches started.
    pub t: f64,
    /// CPU over the last interval, cores (absent on the first sample of a process).
    pub cpu_cores: Option<f64>,
    /// Resident memory, MiB.
    pub rss_mb: f64,
    /// Threads.
    pub threads: u64,
    /// Open fds of the process nearest its limit.
    pub fds: u64,
    /// That process's soft fd limit.
    pub fd_limit: Option<u64>,
}

/// Which processes a watch follows.
#[derive(Debug, Clone)]
pub(crate) enum Which {
    /// One process id.
    Pid(u32),
    /// Every process with this command or executable name.
    Name(String),
}

/// Samples one process or a group of same-named ones.
pub(crate) struct ProcessSampler {
    which: Which,
    ticks_per_s: f64,
    page: u64,
    /// CPU ticks per (pid, start time) at the previous sample, so a reused pid is a new process.
    prev: HashMap<(i32, u64), u64>,
    prev_t: f64,
    samples: Vec<ProcessSample>,
    processes: usize,
}

impl ProcessSampler {
    /// Checks that the process (or at least one of the name) exists now and takes the
    /// baseline for the first CPU figure.
    pub(crate) fn start(which: Which) -> Result<ProcessSampler, String> {
        let mut s = ProcessSampler {
            which,
            ticks_per_s: procfs::ticks_per_second().max(1) as f64,
            page: procfs::page_size(),
            prev: HashMap::new(),
            prev_t: 0.0,
            samples: Vec::new(),
            processes: 0,
        };
        let procs = s.resolve()?;
        for p in &procs {
            if let Ok(stat) = p.stat() {
                s.prev
                    .insert((p.pid, stat.starttime), stat.utime + stat.stime);
            }
        }
        Ok(s)
    }

    fn resolve(&self) -> Result<Vec<Process>, String> {
        match &self.which {
            Which::Pid(pid) => {
                let p = Process::new(*pid as i32).map_err(|_| format!("process {pid} is gone"))?;
                // A zombie has exited but not yet been reaped: it is gone for our purpose.
                match p.stat() {
                    Ok(stat) if stat.state != 'Z' && stat.state != 'X' => Ok(vec![p]),
                    _ => Err(format!("process {pid} is gone")),
                }
            }
            Which::Name(name) => {
                let found = by_name(name);
                if found.is_empty() {
                    Err(format!("no process named {name:?}"))
                } else {
                    Ok(found)
                }
            }
        }
    }
}

/// Running processes whose `comm` (the kernel truncates it to 15 bytes) or executable
/// file name is `name`.
fn by_name(name: &str) -> Vec<Process> {
    let short: String = name.chars().take(15).collect();
    let Ok(all) = procfs::process::all_processes() else {
        return Vec::new();
    };
    all.filter_map(Result::ok)
        .filter(|p| {
            let comm_matches = p.stat().is_ok_and(|s| s.comm == short && s.state != 'Z');
            comm_matches
                || p.exe()
                    .ok()
                    .and_then(|e| e.file_name().map(|f| f == name))
                    .unwrap_or(false)
        })
        .collect()
}

impl ProcessSampler {
    /// Takes one sample, keeps it, and returns it.
    pub(crate) fn sample_one(&mut self, t: f64) -> Result<ProcessSample, String> {
        let procs = self.resolve()?;
        let dt = (t - self.prev_t).max(1e-3);
        let mut next = HashMap::new();
        let (mut cpu, mut have_cpu, mut rss, mut threads) = (0u64, false, 0u64, 0u64);
        let (mut fds, mut fd_limit, mut worst) = (0u64, None, -1.0f64);
        for p in &procs {
            let Ok(stat) = p.stat() else { continue };
            let used = stat.utime + stat.stime;
            if let Some(before) = self.prev.get(&(p.pid, stat.starttime)) {
                cpu += used.saturating_sub(*before);
                have_cpu = true;
            }
            next.insert((p.pid, stat.starttime), used);
            rss += stat.rss * self.page;
            threads += u64::try_from(stat.num_threads).unwrap_or(0);
            let open = p.fd_count().map_or(0, |n| n as u64);
            let limit = p
                .limits()
                .ok()
                .and_then(|l| match l.max_open_files.soft_limit {
                    LimitValue::Value(v) => Some(v),
                    LimitValue::Unlimited => None,
                });
            let share = limit.map_or(0.0, |l| open as f64 / l.max(1) as f64);
            if share > worst {
                (worst, fds, fd_limit) = (share, open, limit);
            }
        }
        if next.is_empty() {
            return Err(format!("{:?}: no readable process", self.which));
        }
        self.processes = self.processes.max(next.len());
        self.prev = next;
        self.prev_t = t;
        let sample = ProcessSample {
            t: round3(t),
            cpu_cores: have_cpu.then(|| round3(cpu as f64 / self.ticks_per_s / dt)),
            rss_mb: mib(rss),
            threads,
            fds,
            fd_limit,
        };
        self.samples.push(sample.clone());
        Ok(sample)
    }
}

impl Sampler for ProcessSampler {
    fn sample(&mut self, t: f64) -> Result<(), String> {
        self.sample_one(t).map(|_| ())
    }

    fn finish(self: Box<Self>, _run: Option<&Summary>) -> Finished {
        let s = &self.samples;
        let peak = s
            .iter()
            .max_by(|a, b| fd_share(a).total_cmp(&fd_share(b)).then(a.fds.cmp(&b.fds)));
        let fds = FdUse {
            max: s.iter().map(|x| x.fds).max().unwrap_or(0),
            limit: peak.and_then(|p| p.fd_limit),
        };
        let warnings = peak
            .filter(|p| fd_share(p) >= FD_WARN_SHARE)
            .map(|p| {
                format!(
                    "open file descriptors reached {} of the soft limit {} ({:.0}%): raise it \
                     (`ulimit -n`, LimitNOFILE=) before reading this run's errors as capacity",
                    p.fds,
                    p.fd_limit.unwrap_or(0),
                    fd_share(p) * 100.0
                )
            })
            .into_iter()
            .collect();
        let summary = ProcessSummary {
            cpu_cores: AvgMax::of(s.iter().filter_map(|x| x.cpu_cores)),
            rss_mb: Max::of(s.iter().map(|x| x.rss_mb)),
            threads: Max::of(s.iter().map(|x| x.threads as f64)),
            fds,
            processes: self.processes,
            samples: self.samples,
        };
        Finished {
            detail: Detail::Process(summary),
            warnings,
            notices: Vec::new(),
        }
    }
}

fn fd_share(s: &ProcessSample) -> f64 {
    s.fd_limit.map_or(0.0, |l| s.fds as f64 / l.max(1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn busy(ms: u64) {
        let start = std::time::Instant::now();
        let mut x = 1u64;
        while start.elapsed() < std::time::Duration::from_millis(ms) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
    }

    #[test]
    fn own_process_shows_cpu_memory_threads_and_fds() {
        let me = std::process::id();
        let mut s = Box::new(ProcessSampler::start(Which::Pid(me)).unwrap());
        let start = std::time::Instant::now();
        busy(300);
        s.sample(start.elapsed().as_secs_f64()).unwrap();
        let sample = s.samples[0].clone();
        assert!(sample.cpu_cores.unwrap() > 0.2, "{sample:?}");
        assert!(sample.rss_mb > 1.0 && sample.threads >= 1 && sample.fds >= 3);
        assert!(sample.fd_limit.is_some_and(|l| l >= sample.fds));
        let f = s.finish(None);
        let Detail::Process(p) = f.detail else {
            panic!("not a process summary")
        };
        assert_eq!(p.processes, 1);
        assert!(p.cpu_cores.max > 0.2);
    }

    #[test]
    fn a_missing_pid_fails_at_start_and_an_unknown_name_too() {
        // Pid numbers stop well below this on Linux (pid_max is at most 2^22).
        assert!(ProcessSampler::start(Which::Pid(u32::MAX - 1))
            .err()
            .unwrap()
            .contains("is gone"));
        assert!(
            ProcessSampler::start(Which::Name("no-such-proc-xyz".into()))
                .err()
                .unwrap()
                .contains("no process named")
        );
    }

    #[test]
    fn fd_warning_at_80_percent_of_the_limit() {
        let sample = |fds| ProcessSample {
            t: 1.0,
            cpu_cores: Some(0.0),
            rss_mb: 1.0,
            threads: 1,
            fds,
            fd_limit: Some(64),
        };
        let mut s = ProcessSampler::start(Which::Pid(std::process::id())).unwrap();
        s.samples = vec![sample(10), sample(52), sample(20)];
        let f = Box::new(s).finish(None);
        assert_eq!(f.warnings.len(), 1, "{:?}", f.warnings);
        assert!(
            f.warnings[0].contains("52 of the soft limit 64"),
            "{}",
            f.warnings[0]
        );
        let mut s = ProcessSampler::start(Which::Pid(std::process::id())).unwrap();
        s.samples = vec![sample(51)];
        assert!(Box::new(s).finish(None).warnings.is_empty());
    }
}

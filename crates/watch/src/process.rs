//! `pid:N` and `process:NAME`: CPU (cores), resident memory, threads and open file
//! descriptors beside their soft limit, read from `/proc` with `procfs`.
//!
//! A pid covers the process and all its descendants, found again at every sample (a
//! master such as nginx's, PostgreSQL's postmaster or gunicorn's does little itself;
//! its workers do the serving, and they come and go). A name is resolved again at every
//! sample, so a restarted process is followed. The figures of every member are summed,
//! except the file descriptors, which are those of the process nearest its own limit
//! (a limit is per process). How CPU of members that exit between samples is kept is
//! told in `ledger`.

mod ledger;

use std::collections::HashMap;

use procfs::process::{LimitValue, Process, Stat};
use procfs::Current;

use super::error::ProbeError;
use super::kept::{Kept, Running};
use super::live::LiveSample;
use super::sampler::{Finished, RunView, Sampler};
use super::samples::{BusiestProcess, ProcessSample};
use super::summary::{mib, round3, Detail};
pub use super::summary::{FdUse, ProcessSummary};
use ledger::{Ledger, Reading};

/// Share of the fd soft limit at which a warning is raised.
pub const FD_WARN_SHARE: f64 = 0.8;

impl ProcessSummary {
    /// What was watched, in words: `nginx + 4 descendants`, `3 processes`.
    pub fn members(&self) -> String {
        let plural =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        match &self.command {
            Some(name) if self.processes > 1 => format!(
                "{name} + {}",
                plural(self.processes - 1, "descendant", "descendants")
            ),
            Some(name) => name.clone(),
            None => plural(self.processes, "process", "processes"),
        }
    }
}

/// Which processes a watch follows.
#[derive(Debug, Clone)]
pub(crate) enum Which {
    /// One process id and its descendants.
    Pid(u32),
    /// Every process with this command or executable name.
    Name(String),
}

/// A member at one sample.
struct Member {
    proc: Process,
    stat: Stat,
}

impl Member {
    fn reading(&self) -> Reading {
        let s = &self.stat;
        let reaped = u64::try_from(s.cutime.saturating_add(s.cstime)).unwrap_or(0);
        Reading {
            key: (self.proc.pid, s.starttime),
            ppid: s.ppid,
            own: s.utime.saturating_add(s.stime),
            reaped,
        }
    }

    /// Exited, not yet reaped: its CPU counters are final and it holds nothing else.
    fn zombie(&self) -> bool {
        matches!(self.stat.state, 'Z' | 'X')
    }
}

/// Samples one process tree or a group of same-named processes.
pub(crate) struct ProcessSampler {
    which: Which,
    /// Start time of the watched pid, so a reused pid is not mistaken for it.
    root_start: Option<u64>,
    command: Option<String>,
    ticks_per_s: f64,
    page: u64,
    ledger: Ledger,
    prev_t: f64,
    samples: Kept<ProcessSample>,
    /// Exact figures over every sample (the kept ones are thinned on long runs).
    cpu: Running,
    rss: Running,
    threads: Running,
    /// The sample nearest its fd limit (most fds when no limit is known).
    fd_peak: Option<ProcessSample>,
    fds_max: u64,
    processes: usize,
    /// Each member's own CPU ticks at the previous sample, for the busiest member.
    prev_own: HashMap<ledger::Key, u64>,
    /// The busiest member at the previous sample and its run-queue delay then, ns.
    prev_delay: Option<(ledger::Key, u64)>,
}

impl ProcessSampler {
    /// Checks that the process (or at least one of the name) exists now and takes the
    /// baseline for the first CPU figure.
    pub(crate) fn start(which: Which) -> Result<ProcessSampler, ProbeError> {
        let mut s = ProcessSampler {
            which,
            root_start: None,
            command: None,
            ticks_per_s: procfs::ticks_per_second().max(1) as f64,
            page: procfs::page_size(),
            ledger: Ledger::default(),
            prev_t: 0.0,
            samples: Kept::default(),
            cpu: Running::default(),
            rss: Running::default(),
            threads: Running::default(),
            fd_peak: None,
            fds_max: 0,
            processes: 0,
            prev_own: HashMap::new(),
            prev_delay: None,
        };
        let uptime = s.uptime_ticks();
        let members = s.resolve()?;
        if let Which::Pid(_) = s.which {
            s.root_start = Some(members[0].stat.starttime);
            s.command = Some(members[0].stat.comm.clone());
        }
        let readings: Vec<Reading> = members.iter().map(Member::reading).collect();
        s.ledger = Ledger::start(&readings, uptime);
        s.prev_own = readings.iter().map(|r| (r.key, r.own)).collect();
        Ok(s)
    }

    /// Clock ticks since boot, the unit of a process's start time.
    fn uptime_ticks(&self) -> u64 {
        procfs::Uptime::current().map_or(0, |u| (u.uptime * self.ticks_per_s) as u64)
    }

    /// The members now; for a pid, the watched process first.
    fn resolve(&self) -> Result<Vec<Member>, ProbeError> {
        match &self.which {
            Which::Pid(pid) => self.tree(*pid),
            Which::Name(name) => {
                let found = by_name(name);
                if found.is_empty() {
                    Err(ProbeError::NoProcessNamed { name: name.clone() })
                } else {
                    Ok(found)
                }
            }
        }
    }

    /// `pid` and its descendants, from one scan of `/proc`.
    fn tree(&self, pid: u32) -> Result<Vec<Member>, ProbeError> {
        let gone = || ProbeError::ProcessGone { pid };
        let root = i32::try_from(pid).map_err(|_| gone())?;
        let mut all: Vec<Member> = all_members();
        let at = all
            .iter()
            .position(|m| m.proc.pid == root)
            .ok_or_else(gone)?;
        let r = all.swap_remove(at);
        // A zombie has exited but not yet been reaped: it is gone for our purpose.
        if r.zombie() || self.root_start.is_some_and(|s| s != r.stat.starttime) {
            return Err(gone());
        }
        let mut children: HashMap<i32, Vec<Member>> = HashMap::new();
        for m in all {
            children.entry(m.stat.ppid).or_default().push(m);
        }
        let mut tree = vec![r];
        let mut next = 0;
        // Breadth first; each process has one parent, so none is visited twice.
        while next < tree.len() {
            let pid = tree[next].proc.pid;
            tree.extend(children.remove(&pid).unwrap_or_default());
            next += 1;
        }
        Ok(tree)
    }
}

/// Every process readable now, with its stat.
fn all_members() -> Vec<Member> {
    let Ok(all) = procfs::process::all_processes() else {
        return Vec::new();
    };
    all.filter_map(Result::ok)
        .filter_map(|proc| {
            Some(Member {
                stat: proc.stat().ok()?,
                proc,
            })
        })
        .collect()
}

/// Running processes whose `comm` (the kernel truncates it to 15 bytes) or executable
/// file name is `name`.
fn by_name(name: &str) -> Vec<Member> {
    let short: String = name.chars().take(15).collect();
    all_members()
        .into_iter()
        .filter(|m| {
            !m.zombie()
                && (m.stat.comm == short
                    || m.proc
                        .exe()
                        .ok()
                        .and_then(|e| e.file_name().map(|f| f == name))
                        .unwrap_or(false))
        })
        .collect()
}

impl ProcessSampler {
    /// Takes one sample and returns it without keeping it (the generator watch keeps
    /// its own figures, so the process's would be kept twice).
    pub(crate) fn measure(&mut self, t: f64) -> Result<ProcessSample, ProbeError> {
        // Uptime before the scan: a process born after this moment is new at the next sample.
        let uptime = self.uptime_ticks();
        let members = self.resolve()?;
        let dt = (t - self.prev_t).max(1e-3);
        let (mut rss, mut threads, mut alive) = (0u64, 0u64, 0usize);
        let (mut fds, mut fd_limit, mut worst) = (0u64, None, -1.0f64);
        for m in members.iter().filter(|m| !m.zombie()) {
            alive += 1;
            rss += m.stat.rss * self.page;
            threads += u64::try_from(m.stat.num_threads).unwrap_or(0);
            let open = m.proc.fd_count().map_or(0, |n| n as u64);
            let limit = m
                .proc
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
        if alive == 0 {
            return Err(match &self.which {
                Which::Pid(pid) => ProbeError::NoReadablePid { pid: *pid },
                Which::Name(name) => ProbeError::NoReadableName { name: name.clone() },
            });
        }
        let had_baseline = self.ledger.has_baseline();
        let readings: Vec<Reading> = members.iter().map(Member::reading).collect();
        let busiest = self.busiest(&members, &readings, dt);
        let ticks = self.ledger.advance(&readings, uptime);
        self.processes = self.processes.max(alive);
        self.prev_t = t;
        let sample = ProcessSample {
            t: round3(t),
            cpu_cores: had_baseline.then(|| round3(ticks as f64 / self.ticks_per_s / dt)),
            rss_mb: mib(rss),
            threads,
            fds,
            fd_limit,
            processes: alive,
            busiest,
        };
        Ok(sample)
    }

    /// Takes one sample, keeps it, and returns it.
    #[cfg(test)]
    pub(crate) fn sample_one(&mut self, t: f64) -> Result<ProcessSample, ProbeError> {
        let sample = self.measure(t)?;
        self.keep(sample.clone());
        Ok(sample)
    }

    /// Adds a sample to the exact figures and the kept (thinned) samples.
    fn keep(&mut self, sample: ProcessSample) {
        if let Some(cores) = sample.cpu_cores {
            self.cpu.add(cores);
        }
        self.rss.add(sample.rss_mb);
        self.threads.add(sample.threads as f64);
        self.fds_max = self.fds_max.max(sample.fds);
        let peak = self.fd_peak.as_ref();
        if peak.is_none_or(|p| fd_order(&sample, p).is_gt()) {
            self.fd_peak = Some(sample.clone());
        }
        self.samples.push(sample);
    }
}

impl ProcessSampler {
    /// The member whose own CPU grew most since the previous sample (members present
    /// at both), with the cores it can use; remembers every member's CPU for the next.
    fn busiest(
        &mut self,
        members: &[Member],
        readings: &[Reading],
        dt: f64,
    ) -> Option<BusiestProcess> {
        let top = readings
            .iter()
            .enumerate()
            .filter(|(i, _)| !members[*i].zombie())
            .filter_map(|(i, r)| Some((i, r.own.checked_sub(*self.prev_own.get(&r.key)?)?)))
            .max_by_key(|&(_, ticks)| ticks);
        self.prev_own = readings.iter().map(|r| (r.key, r.own)).collect();
        let (at, ticks) = top?;
        let m = &members[at];
        let threads = u64::try_from(m.stat.num_threads).unwrap_or(1).max(1);
        // A single-threaded process's schedstat is its one thread's: the time it was
        // runnable but not running, which a shared core hides from its CPU figure.
        let key = readings[at].key;
        let delay = (threads == 1)
            .then(|| m.proc.schedstat().ok().map(|s| s.run_delay))
            .flatten();
        let wait_cores = match (self.prev_delay, delay) {
            (Some((k, before)), Some(now)) if k == key => {
                Some(round3(now.saturating_sub(before) as f64 / 1e9 / dt))
            }
            _ => None,
        };
        self.prev_delay = delay.map(|d| (key, d));
        let cpus = m
            .proc
            .status()
            .ok()
            .and_then(|s| s.cpus_allowed_list)
            .map(|ranges| {
                ranges
                    .iter()
                    .map(|(a, b)| u64::from(b.saturating_sub(*a)) + 1)
                    .sum()
            })
            .unwrap_or_else(host_cpus);
        Some(BusiestProcess {
            pid: u32::try_from(m.proc.pid).unwrap_or(0),
            command: m.stat.comm.clone(),
            cpu_cores: round3(ticks as f64 / self.ticks_per_s / dt),
            wait_cores,
            threads,
            cpu_cap_cores: threads.min(cpus.max(1)) as f64,
        })
    }
}

/// CPUs this machine offers (1 when unknown).
fn host_cpus() -> u64 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u64)
}

impl Sampler for ProcessSampler {
    fn sample(&mut self, t: f64) -> Result<(), ProbeError> {
        let sample = self.measure(t)?;
        self.keep(sample);
        Ok(())
    }

    fn latest(&self) -> Option<LiveSample> {
        self.samples.newest().cloned().map(LiveSample::Process)
    }

    fn finish(self: Box<Self>, _run: Option<&dyn RunView>) -> Finished {
        let peak = self.fd_peak.as_ref();
        let fds = FdUse {
            max: self.fds_max,
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
            cpu_cores: self.cpu.avg_max(),
            rss_mb: self.rss.max(),
            threads: self.threads.max(),
            fds,
            processes: self.processes,
            processes_seen: self.ledger.seen(),
            samples: self.samples.into_vec(),
            command: self.command,
        };
        let notices = match self.ledger.uncollected() {
            0 => Vec::new(),
            n => vec![format!(
                "{n} watched process(es) exited without a watched parent collecting their CPU                  time; the CPU each used after the sample before its exit is missing"
            )],
        };
        Finished {
            detail: Detail::Process(summary),
            warnings,
            notices,
        }
    }
}

/// How two samples compare for the fd peak: nearer its limit first, then more fds.
fn fd_order(a: &ProcessSample, b: &ProcessSample) -> std::cmp::Ordering {
    fd_share(a).total_cmp(&fd_share(b)).then(a.fds.cmp(&b.fds))
}

fn fd_share(s: &ProcessSample) -> f64 {
    s.fd_limit.map_or(0.0, |l| s.fds as f64 / l.max(1) as f64)
}

#[cfg(test)]
mod tests;

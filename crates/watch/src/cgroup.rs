//! `cgroup:PATH` (and `docker:NAME`, resolved to a path by `docker`): what `docker
//! stats` reads, from cgroup v2 files — `cpu.stat` `usage_usec` deltas as cores,
//! `memory.current` — with the caps beside them: `cpu.max` (quota / period, in cores)
//! and `memory.max` — and, where the cpu controller is enabled, the share of periods
//! the quota throttled (`nr_throttled` / `nr_periods`, `throttled_usec`). Files a hierarchy does not offer (memory on a host whose memory
//! controller is on cgroup v1) leave their figures out rather than failing the watch.

use std::path::{Path, PathBuf};

use super::error::ProbeError;
use super::kept::{Kept, Running};
use super::live::LiveSample;
use super::sampler::{Finished, RunView, Sampler};
use super::samples::CgroupSample;
pub use super::summary::CgroupSummary;
use super::summary::{mib, round3, Detail};

/// Samples one cgroup v2 directory.
pub(crate) struct CgroupSampler {
    dir: PathBuf,
    /// `cpu.stat` at the previous sample; its `usage_usec` is always there (a sample
    /// without it fails).
    prev_stat: CpuStat,
    prev_t: f64,
    cpu_cap: Option<f64>,
    memory_cap: Option<u64>,
    /// Thinned on long runs; `cpu` and `memory` keep exact figures.
    samples: Kept<CgroupSample>,
    cpu: Running,
    memory: Running,
}

/// The cgroup v2 mount point, from `/proc/self/mountinfo` (`/sys/fs/cgroup` on a
/// unified host, `/sys/fs/cgroup/unified` on a hybrid one).
pub(crate) fn cgroup2_mount() -> Option<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        let fstype = after.split_whitespace().next()?;
        let mount_point = before.split_whitespace().nth(4)?;
        (fstype == "cgroup2").then(|| PathBuf::from(mount_point))
    })
}

/// The cgroup v2 path of a process, from `/proc/PID/cgroup` (`0::/path`).
pub(crate) fn cgroup_of(pid: u32) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(String::from)
}

impl CgroupSampler {
    /// Finds `path` under the cgroup2 mount (or takes it as is when it already lies
    /// under it), reads the caps and the CPU baseline.
    pub(crate) fn start(path: &str) -> Result<CgroupSampler, ProbeError> {
        let mount = cgroup2_mount().ok_or(ProbeError::NoCgroup2)?;
        let given = Path::new(path);
        let dir = if given.starts_with(&mount) {
            given.to_path_buf()
        } else {
            mount.join(path.trim_start_matches('/'))
        };
        let prev_stat = cpu_stat(&dir).map_err(|e| ProbeError::Cgroup {
            dir: dir.clone(),
            source: Box::new(e),
        })?;
        if prev_stat.usage_usec.is_none() {
            return Err(ProbeError::Cgroup {
                dir,
                source: Box::new(ProbeError::NoUsage),
            });
        }
        Ok(CgroupSampler {
            prev_stat,
            cpu_cap: cpu_max(&dir),
            memory_cap: read_u64(&dir.join("memory.max")),
            dir,
            prev_t: 0.0,
            samples: Kept::default(),
            cpu: Running::default(),
            memory: Running::default(),
        })
    }
}

/// The counters of `cpu.stat` a sample reads; the throttling ones exist only where
/// the cpu controller is enabled.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct CpuStat {
    usage_usec: Option<u64>,
    nr_periods: Option<u64>,
    nr_throttled: Option<u64>,
    throttled_usec: Option<u64>,
}

fn cpu_stat(dir: &Path) -> Result<CpuStat, ProbeError> {
    let text = std::fs::read_to_string(dir.join("cpu.stat")).map_err(ProbeError::CpuStat)?;
    Ok(parse_cpu_stat(&text))
}

fn parse_cpu_stat(text: &str) -> CpuStat {
    let mut s = CpuStat::default();
    for line in text.lines() {
        let Some((key, v)) = line.split_once(' ') else {
            continue;
        };
        let v = v.trim().parse().ok();
        match key {
            "usage_usec" => s.usage_usec = v,
            "nr_periods" => s.nr_periods = v,
            "nr_throttled" => s.nr_throttled = v,
            "throttled_usec" => s.throttled_usec = v,
            _ => {}
        }
    }
    s
}

/// Share of the interval's periods that were throttled, and ms throttled per second.
fn throttling(before: &CpuStat, now: &CpuStat, dt: f64) -> (Option<f64>, Option<f64>) {
    let delta = |a: Option<u64>, b: Option<u64>| b?.checked_sub(a?);
    let periods = delta(before.nr_periods, now.nr_periods).filter(|&p| p > 0);
    let share = periods.and_then(|p| {
        let throttled = delta(before.nr_throttled, now.nr_throttled)?;
        Some(round3(throttled as f64 / p as f64))
    });
    let ms = periods.and_then(|_| {
        let usec = delta(before.throttled_usec, now.throttled_usec)?;
        Some(round3(usec as f64 / 1000.0 / dt))
    });
    (share, ms)
}

/// A file holding one number; `None` when missing or `max`.
fn read_u64(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// `cpu.max` is `QUOTA PERIOD` in µs, or `max PERIOD` for no cap.
fn cpu_max(dir: &Path) -> Option<f64> {
    parse_cpu_max(&std::fs::read_to_string(dir.join("cpu.max")).ok()?)
}

fn parse_cpu_max(text: &str) -> Option<f64> {
    let mut parts = text.split_whitespace();
    let quota: f64 = parts.next()?.parse().ok()?;
    let period: f64 = parts.next()?.parse().ok()?;
    (period > 0.0).then(|| round3(quota / period))
}

impl Sampler for CgroupSampler {
    fn sample(&mut self, t: f64) -> Result<(), ProbeError> {
        let stat = cpu_stat(&self.dir)?;
        let usec = stat.usage_usec.ok_or(ProbeError::NoUsage)?;
        let dt = (t - self.prev_t).max(1e-3);
        let before = self.prev_stat.usage_usec.unwrap_or(usec);
        let cores = usec.saturating_sub(before) as f64 / 1e6 / dt;
        let (throttled_share, throttled_ms_per_s) = throttling(&self.prev_stat, &stat, dt);
        self.prev_stat = stat;
        self.prev_t = t;
        let sample = CgroupSample {
            t: round3(t),
            cpu_cores: round3(cores),
            memory_mb: read_u64(&self.dir.join("memory.current")).map(mib),
            throttled_share,
            throttled_ms_per_s,
        };
        self.cpu.add(sample.cpu_cores);
        if let Some(mb) = sample.memory_mb {
            self.memory.add(mb);
        }
        self.samples.push(sample);
        Ok(())
    }

    fn latest(&self) -> Option<LiveSample> {
        Some(LiveSample::Cgroup {
            sample: self.samples.newest()?.clone(),
            cpu_cap_cores: self.cpu_cap,
            memory_cap_mb: self.memory_cap.map(mib),
        })
    }

    fn finish(self: Box<Self>, _run: Option<&dyn RunView>) -> Finished {
        let summary = CgroupSummary {
            path: self.dir.display().to_string(),
            cpu_cores: self.cpu.avg_max(),
            cpu_cap_cores: self.cpu_cap,
            memory_mb: (!self.memory.is_empty()).then(|| self.memory.max()),
            memory_cap_mb: self.memory_cap.map(mib),
            samples: self.samples.into_vec(),
        };
        let mut notices = Vec::new();
        if summary.memory_mb.is_none() {
            notices.push(format!(
                "no memory.current under {}: the memory controller is not enabled on this \
                 cgroup v2 hierarchy",
                summary.path
            ));
        }
        Finished {
            detail: Detail::Cgroup(summary),
            warnings: Vec::new(),
            notices,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_require::machine_feature;

    #[test]
    fn cpu_max_is_quota_over_period() {
        assert_eq!(parse_cpu_max("200000 100000\n"), Some(2.0));
        assert_eq!(parse_cpu_max("150000 100000"), Some(1.5));
        assert_eq!(parse_cpu_max("max 100000\n"), None);
    }

    #[test]
    fn throttling_is_the_share_of_throttled_periods() {
        let before =
            parse_cpu_stat("usage_usec 100\nnr_periods 10\nnr_throttled 2\nthrottled_usec 5000\n");
        let now = parse_cpu_stat(
            "usage_usec 900\nnr_periods 20\nnr_throttled 10\nthrottled_usec 405000\n",
        );
        assert_eq!(now.usage_usec, Some(900));
        assert_eq!(throttling(&before, &now, 2.0), (Some(0.8), Some(200.0)));
        // No cpu controller: no throttling counters, no figure.
        let plain = parse_cpu_stat("usage_usec 5\nuser_usec 3\n");
        assert_eq!(throttling(&plain, &plain, 1.0), (None, None));
        // No period elapsed: no share to speak of.
        assert_eq!(throttling(&before, &before, 1.0), (None, None));
    }

    #[test]
    fn own_cgroup_is_read_when_cgroup_v2_is_mounted() {
        let found = cgroup2_mount().and(cgroup_of(std::process::id())).ok_or(
            "no cgroup2 file system in /proc/self/mountinfo, or no 0:: line in /proc/self/cgroup",
        );
        let Some(path) = machine_feature("cgroup v2", found) else {
            return;
        };
        let mut s = CgroupSampler::start(&path).unwrap();
        s.sample(0.2).unwrap();
        assert_eq!(s.samples.iter().count(), 1);
        assert!(CgroupSampler::start("/no/such/cgroup-xyz")
            .err()
            .unwrap()
            .to_string()
            .contains("cpu.stat"));
    }
}

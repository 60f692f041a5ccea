//! Sizing, in the shape of a hand-kept VPS sizing table: from the resource profile of
//! a search's ceiling step, what each watched part needs for a target load and which
//! part runs out first. [`Sizing::of`] reads the profile; [`Sizing::blocks`] writes
//! the section for the terminal and the reports.
//!
//! The model is linear in the load, from the ceiling step alone: a part that used
//! `c` cores at its largest sample while the target took load `C` needs `c × L / C`
//! cores at load `L` (CPU from the largest sample, because bursts are what a cap
//! throttles). Memory scales the same way but never below what it held at the
//! ceiling: most memory is held whatever the load, so less load frees little of it.
//! A part runs out at the load where a need reaches its cap.

use super::blocks::{Block, Grid};
use super::profile::{cores, mib};
use super::view::SearchView;
use crate::search::result::value;
use crate::watch::{Detail, WatchSummary};

/// One watched part's use at the ceiling.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// What was watched.
    pub what: String,
    /// The generator (headroom itself): shown, but not part of the target's total.
    pub generator: bool,
    /// Largest CPU sample at the ceiling, cores.
    pub cpu: f64,
    /// Largest memory at the ceiling, MiB (`None`: not measured).
    pub mem_mb: Option<f64>,
    /// CPU cap, cores.
    pub cpu_cap: Option<f64>,
    /// Memory cap, MiB.
    pub mem_cap_mb: Option<f64>,
}

impl Part {
    /// Cores needed at `load` for a ceiling of `ceiling`.
    pub fn cpu_at(&self, load: f64, ceiling: f64) -> f64 {
        self.cpu * load / ceiling
    }

    /// MiB needed at `load` (never less than at the ceiling).
    pub fn mem_at(&self, load: f64, ceiling: f64) -> Option<f64> {
        self.mem_mb.map(|m| m * (load / ceiling).max(1.0))
    }

    /// The load at which this part reaches a cap, and which one: `(load, "CPU")`.
    pub fn runs_out(&self, ceiling: f64) -> Option<(f64, &'static str)> {
        let cpu = self
            .cpu_cap
            .filter(|_| self.cpu > 0.0)
            .map(|cap| (cap / self.cpu * ceiling, "CPU"));
        let mem = match (self.mem_cap_mb, self.mem_mb) {
            (Some(cap), Some(m)) if m > 0.0 => Some((cap / m * ceiling, "memory")),
            _ => None,
        };
        [cpu, mem]
            .into_iter()
            .flatten()
            .min_by(|a, b| a.0.total_cmp(&b.0))
    }
}

/// What each part needs at given loads, from a search's ceiling step.
#[derive(Debug, Clone, PartialEq)]
pub struct Sizing {
    /// `req/s` or `users`.
    pub unit: &'static str,
    /// The ceiling the profile was taken at.
    pub ceiling: f64,
    /// The loads to size for.
    pub loads: Vec<f64>,
    /// The watched parts that measure CPU and memory.
    pub parts: Vec<Part>,
}

impl Sizing {
    /// The sizing of `view` for `loads` (the ceiling and twice it when empty); `None`
    /// without a ceiling or without a watch beyond the generator.
    pub fn of(view: &SearchView<'_>, loads: &[f64]) -> Option<Sizing> {
        let step = view.ceiling_step()?;
        let parts: Vec<Part> = step.summary.watches.iter().filter_map(part).collect();
        if !parts.iter().any(|p| !p.generator) || step.value <= 0.0 {
            return None;
        }
        let loads = if loads.is_empty() {
            vec![step.value, 2.0 * step.value]
        } else {
            loads.to_vec()
        };
        Some(Sizing {
            unit: view.unit,
            ceiling: step.value,
            loads,
            parts,
        })
    }

    /// The part that reaches a cap at the lowest load, with that load and the resource.
    pub fn first_out(&self) -> Option<(&Part, f64, &'static str)> {
        self.parts
            .iter()
            .filter(|p| !p.generator)
            .filter_map(|p| p.runs_out(self.ceiling).map(|(l, r)| (p, l, r)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// The section: the table and which part runs out first.
    pub fn blocks(&self) -> Vec<Block> {
        let u = self.unit;
        let c = self.ceiling;
        let mut header = vec!["part".to_string()];
        for &l in &self.loads {
            let tag = if l == c { " (ceiling)" } else { "" };
            header.push(format!("at {} {u}{tag}", value(l)));
        }
        header.extend(["cap".into(), "runs out at".into()]);
        let mut g = Grid::new(header);
        let need = |cpu: f64, mem: Option<f64>| match mem {
            Some(m) => format!("{} cores, {}", cores(cpu), mib(m)),
            None => format!("{} cores", cores(cpu)),
        };
        for p in &self.parts {
            let mut row = vec![if p.generator {
                format!("{} (not the target)", p.what)
            } else {
                p.what.clone()
            }];
            for &l in &self.loads {
                row.push(need(p.cpu_at(l, c), p.mem_at(l, c)));
            }
            let cap = match (p.cpu_cap, p.mem_cap_mb) {
                (None, None) => "-".to_string(),
                (cpu, mem) => format!(
                    "{} cores, {}",
                    cpu.map_or("-".into(), cores),
                    mem.map_or("-".into(), mib)
                ),
            };
            row.push(cap);
            row.push(p.runs_out(c).map_or("-".into(), |(l, r)| {
                format!("{} {u} ({r})", value(l.floor()))
            }));
            g.row(row);
        }
        let target: Vec<&Part> = self.parts.iter().filter(|p| !p.generator).collect();
        if target.len() > 1 {
            let mut row = vec!["all target parts".to_string()];
            for &l in &self.loads {
                let cpu = target.iter().map(|p| p.cpu_at(l, c)).sum();
                let mem = target.iter().filter_map(|p| p.mem_at(l, c)).sum::<f64>();
                row.push(need(cpu, Some(mem)));
            }
            g.row(row);
        }
        let verdict = match self.first_out() {
            Some((p, l, r)) => format!(
                "Runs out first: {} ({r} cap) at about {} {u}.",
                p.what,
                value(l.floor())
            ),
            None => "No watched part has a cap, so none runs out: give each what its row says, plus room for bursts.".into(),
        };
        vec![
            Block::Heading(3, "Sizing".into()),
            Block::Para(format!(
                "What each part needs, scaled linearly from its largest CPU and memory at the ceiling ({} {u}); memory never below what it held there.",
                value(c)
            )),
            Block::Grid(g),
            Block::Para(verdict),
        ]
    }
}

/// The sizing figures of a watch that measures CPU and memory.
fn part(w: &WatchSummary) -> Option<Part> {
    let row = w.profile()?;
    Some(Part {
        what: row.what,
        generator: matches!(w.detail, Detail::Generator(_)),
        cpu: row.cpu.max,
        mem_mb: row.mem_max_mb,
        cpu_cap: row.cpu_cap,
        mem_cap_mb: row.mem_cap_mb,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(what: &str, cpu: f64, mem: f64, caps: (Option<f64>, Option<f64>)) -> Part {
        Part {
            what: what.into(),
            generator: false,
            cpu,
            mem_mb: Some(mem),
            cpu_cap: caps.0,
            mem_cap_mb: caps.1,
        }
    }

    #[test]
    fn needs_scale_with_load_and_the_smallest_headroom_runs_out_first() {
        let s = Sizing {
            unit: "req/s",
            ceiling: 500.0,
            loads: vec![500.0, 1000.0],
            parts: vec![
                part("gateway", 1.45, 167.0, (Some(2.0), Some(512.0))),
                part("postgres", 1.0, 117.0, (Some(4.0), Some(512.0))),
                Part {
                    generator: true,
                    ..part("generator (headroom)", 0.5, 12.0, (None, None))
                },
            ],
        };
        let p = &s.parts[0];
        assert!((p.cpu_at(1000.0, 500.0) - 2.9).abs() < 1e-9);
        assert_eq!(p.mem_at(250.0, 500.0), Some(167.0));
        assert_eq!(p.mem_at(1000.0, 500.0), Some(334.0));
        let (first, load, what) = s.first_out().unwrap();
        assert_eq!((first.what.as_str(), what), ("gateway", "CPU"));
        assert!((load - 2.0 / 1.45 * 500.0).abs() < 1e-9);
        let text = super::super::blocks::text(&s.blocks());
        assert!(text.contains("at 500 req/s (ceiling)"), "{text}");
        assert!(text.contains("2.90 cores, 334 MiB"), "{text}");
        assert!(text.contains("all target parts"), "{text}");
        assert!(text.contains("(not the target)"), "{text}");
        assert!(
            text.contains("Runs out first: gateway (CPU cap) at about 689 req/s"),
            "{text}"
        );
    }
}

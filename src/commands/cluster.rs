//! `headroom cluster`: what a sharded run creates on a cluster, for people who apply
//! manifests themselves. `headroom cluster manifest` prints the Secret, headless
//! Service and Indexed Job of a run ([`crate::cluster::manifest_yaml`]) with a fresh
//! run name and secret.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::cluster::{self, ClusterArgs};
use crate::scenario::{self, parse_duration, Overrides};

use super::error::CommandError;
use super::exit::ExitCode;

/// Flags of `headroom cluster`.
#[derive(Debug, Args, Clone)]
pub struct ClusterCommandArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: ClusterCommand,
}

/// The subcommands of `headroom cluster`.
#[derive(Debug, Subcommand, Clone)]
pub enum ClusterCommand {
    /// Print a run's Kubernetes objects (Secret, headless Service, Indexed Job) as
    /// YAML, for `kubectl apply -f -`. The run's secret is generated fresh.
    Manifest(ManifestArgs),
}

/// Flags of `headroom cluster manifest`. `--cluster` is accepted (the flags are the
/// ones `run` takes) but hidden: a manifest is for Kubernetes whatever it says.
#[derive(Debug, Args, Clone)]
#[command(mut_arg("cluster", |a| a.hide(true)))]
pub struct ManifestArgs {
    /// Scenario file (YAML), checked and stored in the Secret.
    pub scenario: Option<PathBuf>,
    /// Target base URL (replaces the scenario's `target`; without a scenario, the run
    /// is `--url`'s quick mode).
    #[arg(long)]
    pub url: Option<String>,
    /// Number of shards: the Job's pods.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub shards: Option<u32>,
    /// The run's length (replaces the scenario's), for the Job's deadline.
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Run name (default `headroom-` and 8 random hex digits): a DNS-1123 label.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Where the shards run and what they dial.
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// Runs `headroom cluster ...`: prints what it was asked for.
pub fn run(args: &ClusterCommandArgs) -> Result<ExitCode, CommandError> {
    match &args.command {
        ClusterCommand::Manifest(m) => print!("{}", manifest(m)?),
    }
    Ok(ExitCode::OK)
}

/// The manifest text of `args`, or what is wrong with them.
fn manifest(args: &ManifestArgs) -> Result<String, CommandError> {
    let overrides = Overrides {
        url: args.url.clone(),
        duration: args.duration,
        // The load itself reaches the shards from the coordinator; any rate lets a
        // `--url` run compile here for its checks and length.
        fallback_rate: Some(1.0),
        ..Overrides::default()
    };
    let plan = scenario::load(args.scenario.as_deref(), &overrides)?;
    let shards = args
        .shards
        .or(plan.cluster.shards.and_then(|n| u32::try_from(n).ok()))
        .ok_or(CommandError::Flag {
            flag: "--shards",
            reason: "give the number of shards (or `cluster: {shards: N}` in the scenario)",
        })?;
    let defaults = crate::shard::kube::cluster_defaults(&plan.cluster);
    let scenario = match &args.scenario {
        Some(path) => {
            let text =
                std::fs::read_to_string(path).map_err(|source| CommandError::ReadScenario {
                    path: path.clone(),
                    source,
                })?;
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            Some((name.unwrap_or_else(|| "scenario.yaml".into()), text))
        }
        None => None,
    };
    let run = args.name.clone().unwrap_or_else(cluster::new_run_name);
    let spec = args.cluster.spec(
        run,
        shards,
        cluster::new_secret(),
        scenario,
        plan.duration(),
        &defaults,
    )?;
    Ok(cluster::manifest_yaml(&spec))
}

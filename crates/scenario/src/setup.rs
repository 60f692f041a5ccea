//! The second stage of `run` and `find`: a [`Setup`], what the flags and the scenario
//! say, validated and serializable, from which [`Setup::plan`] compiles the [`Plan`].
//!
//! The first stage (clap's flags) stays with the commands; they turn it into a
//! `Setup`, reading the scenario file once. Everything that builds a plan from there
//! — `run`, `find`, and each shard of a sharded run, which receives the coordinator's
//! `Setup` over the wire — goes through [`Setup::plan`], so they cannot disagree.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{compile, read_scenario, Overrides, ScenarioError};
use headroom_metrics::threshold::{Metric, Threshold, ThresholdError};
use headroom_plan::Plan;

/// Thresholds a step of a search must pass when neither the scenario nor
/// `--threshold` gives any.
pub const DEFAULT_THRESHOLDS: [&str; 2] = ["p95 < 500ms", DEFAULT_ERROR_RULE];

/// The error rule a step of a search is judged by when the thresholds given have none.
pub const DEFAULT_ERROR_RULE: &str = "errors < 1%";

/// A scenario file's name (as errors and reports name it) and its text, read once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScenarioText {
    /// The file as given on the command line (`path.display()`).
    pub file: String,
    /// Its content.
    pub text: String,
}

impl ScenarioText {
    /// Reads the file at `path` (up to the size a scenario may have). A file that
    /// cannot be read is a [`ScenarioError`] located at the file, as [`super::load`]'s.
    pub fn read(path: &Path) -> Result<ScenarioText, ScenarioError> {
        let file = path.display().to_string();
        match read_scenario(path) {
            Ok(text) => Ok(ScenarioText { file, text }),
            Err(e) => Err(ScenarioError {
                location: file,
                message: e.to_string(),
            }),
        }
    }
}

/// What the plan is for: it decides what is added to the scenario's own thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Purpose {
    /// `headroom run`: the scenario's thresholds and the flags', nothing more.
    Run,
    /// `headroom find`: [`DEFAULT_THRESHOLDS`] when none is given, and always an
    /// error rule ([`DEFAULT_ERROR_RULE`]).
    Search,
}

/// A run's description, flags parsed and files read: the scenario's text (none for a
/// `--url` run), the command-line overrides, and what the plan is for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Setup {
    /// The scenario file's name and text, or `None` for quick mode (`--url`).
    pub scenario: Option<ScenarioText>,
    /// What the flags say on top of (or instead of) the file.
    pub overrides: Overrides,
    /// Run or search.
    pub purpose: Purpose,
    /// What the scenario's `setup:` steps captured (run once by the command, on the
    /// coordinator of a sharded run), for every user as `{{ setup.NAME }}`.
    #[serde(default)]
    pub setup_values: headroom_plan::journey::SetupValues,
}

/// Why a [`Setup`] does not compile into a plan.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The scenario (or `--url`'s quick scenario) does not load.
    #[error("{0}")]
    Scenario(#[from] ScenarioError),
    /// A search's default threshold does not parse.
    #[error("{0}")]
    Threshold(#[from] ThresholdError),
}

impl Setup {
    /// Compiles the plan: the scenario's text (or quick mode's) with the overrides,
    /// then, for a search, its default thresholds. No I/O but what compiling the
    /// scenario itself does (certificate files of `client:`, a gRPC schema).
    pub fn plan(&self) -> Result<Plan, SetupError> {
        let mut plan = match &self.scenario {
            Some(s) => {
                let search = self.purpose == Purpose::Search;
                compile::from_text_for(&s.file, &s.text, &self.overrides, search)?
            }
            None => compile::quick(&self.overrides)?,
        };
        if self.purpose == Purpose::Search {
            search_thresholds(&mut plan)?;
        }
        plan.journey.setup_values = self.setup_values.clone();
        Ok(plan)
    }
}

/// A search's thresholds: the defaults when none is given, and an error rule always.
fn search_thresholds(plan: &mut Plan) -> Result<(), ThresholdError> {
    if plan.thresholds.is_empty() {
        plan.thresholds = DEFAULT_THRESHOLDS
            .iter()
            .map(|t| Threshold::parse(t))
            .collect::<Result<_, _>>()?;
    }
    // Fast failures would otherwise let a latency rule pass a step where most requests
    // were turned away (a limiter's quick 503s): an error rule is always judged.
    if !plan
        .thresholds
        .iter()
        .any(|t| t.metric == Metric::ErrorPercent && t.scope.is_none())
    {
        plan.thresholds.push(Threshold::parse(DEFAULT_ERROR_RULE)?);
    }
    Ok(())
}

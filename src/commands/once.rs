//! The scenario's `setup:` and `teardown:` steps around a run's load: run once by the
//! command (on the coordinator of a sharded run), said on stderr, a failure ending the
//! command with exit 1 and the step's name.

use std::sync::Arc;

use super::error::CommandError;
use crate::engine::{run_once, Phase};
use crate::plan::journey::SetupValues;
use crate::plan::Plan;

/// Runs `setup:` and returns what it captured (nothing without one).
pub fn setup(plan: &Plan, quiet: bool) -> Result<SetupValues, CommandError> {
    if plan.journey.setup.is_empty() {
        return Ok(Vec::new());
    }
    let values = run_once(&Arc::new(plan.clone()), Phase::Setup)?;
    if !quiet {
        let names: Vec<&str> = values.iter().map(|(n, _, _)| n.as_str()).collect();
        eprintln!(
            "setup: done{}",
            if names.is_empty() {
                String::new()
            } else {
                format!(", captured {}", names.join(", "))
            }
        );
    }
    Ok(values)
}

/// Runs `teardown:` (nothing without one).
pub fn teardown(plan: &Arc<Plan>, quiet: bool) -> Result<(), CommandError> {
    if plan.journey.teardown.is_empty() {
        return Ok(());
    }
    run_once(plan, Phase::Teardown)?;
    if !quiet {
        eprintln!("teardown: done");
    }
    Ok(())
}

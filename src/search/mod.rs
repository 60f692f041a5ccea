//! Ceiling search (`headroom find`): steps over the engine with isolation between them.
//!
//! [`driver::search`] drives it: the [`strategy::Strategy`] picks each step's rate (or
//! user count) — grow ×2, bisect, confirm — and [`step::run_step`] runs it (warm-up,
//! then a measured window judged by the plan's thresholds and by whether the target
//! kept up, [`keepup`]). Between steps,
//! [`isolation`] waits out a cooldown and, if need be, for free local ports toward the target, and
//! [`hooks`] runs the scenario's shell commands. The outcome is a
//! [`result::SearchResult`] with every step's summary, the ceiling, the [`knee`] and
//! why the search stopped, and the [`model`] fitted to its steps (the Universal
//! Scalability Law, with the peak it predicts); [`text`] prints it. With `--hold`, the driver then runs the
//! answer for that long and [`hold`] judges whether it held (its latency [`trend`]).
//! [`bottleneck`] names the watched resource that ran out between the last passing
//! and the first failing step.

pub mod bottleneck;
pub mod conclude;
pub mod driver;
pub mod estimate;
pub mod hold;
pub mod hooks;
pub mod interval;
pub mod isolation;
pub mod keepup;
pub mod knee;
pub mod limited;
pub mod model;
pub mod noise;
pub mod result;
pub mod step;
pub mod strategy;
pub mod text;
pub mod trend;
pub mod trials;
pub mod words;

pub use bottleneck::Bottleneck;
pub use driver::{search, Event, SearchOptions};
pub use hold::Hold;
pub use isolation::{IsolationOptions, PortRule, PortRuleError};
pub use model::Model;
pub use result::{LimitedBy, SearchResult};
pub use step::{StepRecord, StepTiming, Unit};
pub use strategy::{Order, Range, RangeError};
pub use trials::{Trials, TrialsError};

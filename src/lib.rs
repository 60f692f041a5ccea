//! headroom: drive load at a rate or a number of users, hold it to thresholds, find the
//! ceiling, watch the system under test and the generator, keep each run, and write
//! the report.
//!
//! The binary is a thin shell over [`cli::main`]. Data flows as ARCHITECTURE.md (at the root
//! of the repository) draws it:
//! [`scenario`] parses and validates a file into a [`plan::Plan`]; the [`engine`] runs
//! it on one thread per core, each with its own [`client`] connections and
//! [`metrics::recorder::Recorder`]; recorders merge into a
//! [`metrics::summary::Summary`] that [`metrics::threshold`]s judge and [`report`]s print.

pub mod cli;
pub use headroom_client as client;
pub use headroom_cluster as cluster;
pub mod commands;
pub mod convert;
pub mod dashboard;
pub use headroom_engine as engine;
pub use headroom_metrics as metrics;
pub mod otlp;
pub use headroom_plan as plan;
pub mod report;
pub use headroom_scenario as scenario;
pub mod search;
pub mod shard;
pub use headroom_sink as sink;
pub use headroom_store as store;
pub use headroom_template as template;
pub use headroom_testbed as target;
pub use headroom_watch as watch;

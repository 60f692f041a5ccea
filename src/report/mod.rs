//! Human-readable output. [`text::render`] turns a finished run's summary into the
//! end-of-run text printed on stdout, with [`profile::render`]'s resource profile
//! when something was watched; [`progress::Progress`] shows the run as it goes,
//! on stderr so stdout stays clean for the summary. [`timing`] is the timing breakdown
//! both the text and the Markdown report show. Both format figures with
//! [`units`] and lay out columns with [`table::Table`].
//!
//! Reports of stored runs: [`markdown`], [`html`] (with [`charts`] as inline SVG),
//! [`junit`] and [`json`], each rendering a [`crate::store::StoredRun`]; a search's
//! steps are drawn by [`capacity`] and [`step_charts`], read through [`view`], with
//! [`limits`] (what limited the ceiling) and [`sizing`] written as [`blocks`] that the
//! terminal and the reports share. [`rounds`] is the round-over-round page of several
//! stored runs; [`csv`] writes a run's summary and timeline as CSV.

pub mod blocks;
pub mod capacity;
pub mod capacity_chart;
pub mod charts;
pub mod csv;
pub mod escape;
pub mod html;
pub mod json;
pub mod junit;
pub mod limits;
pub mod markdown;
pub mod noise;
pub mod profile;
pub mod progress;
pub mod rounds;
pub mod shards;
pub mod sizing;
pub mod step_charts;
pub mod streams;
pub use headroom_format::table;
pub mod text;
pub mod timing;
pub use headroom_format::units;
pub mod view;
pub mod workloads;

//! The load engine.

//! The built-in target service.

//! HTTP client connections.

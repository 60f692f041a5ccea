//! [`ConvertError`]: why a curl command or a HAR recording could not be converted,
//! with [`CurlError`], [`HarError`] and [`ExchangeError`] for what is wrong in each.

use super::{MAX_BODY, MAX_INPUT, MAX_REQUESTS};
use crate::scenario::QuickError;

/// Why an input could not be converted.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    /// The input is larger than [`MAX_INPUT`].
    #[error("the input is larger than {} MiB", MAX_INPUT >> 20)]
    TooLarge,
    /// The input could not be read.
    #[error("cannot read the input: {0}")]
    Read(#[from] std::io::Error),
    /// The curl command line is not one headroom can convert.
    #[error("curl: {0}")]
    Curl(#[from] CurlError),
    /// The HAR file is not valid or holds nothing to convert.
    #[error("HAR: {0}")]
    Har(#[from] HarError),
    /// A k6 script, OpenAPI document, Postman collection or `.http` file could not be
    /// converted (its own message names the file, line and column).
    #[error(transparent)]
    Front(#[from] headroom_convert::ConvertError),
    /// A file a conversion reads beside its input (a Postman environment, a `.http`
    /// file's `http-client.env.json`) is not what it should be.
    #[error("{file}: {reason}")]
    Beside {
        /// The file.
        file: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// A curl command line headroom cannot convert.
#[derive(Debug, thiserror::Error)]
pub enum CurlError {
    /// A quote is not closed.
    #[error("unbalanced quotes in the command")]
    Quotes,
    /// Two URLs.
    #[error("more than one URL: convert one request at a time")]
    ManyUrls,
    /// An option without its value.
    #[error("{option} needs a value")]
    NoValue {
        /// The option.
        option: String,
    },
    /// A header without a colon.
    #[error("header {header:?}: expected `Name: value`")]
    Header {
        /// The header as given.
        header: String,
    },
    /// A body read from a file (`-d @FILE`).
    #[error("{option} {value}: a body read from a file is not converted; give it inline")]
    BodyFile {
        /// The option.
        option: String,
        /// Its value.
        value: String,
    },
    /// An option that does not shape the request, or that headroom does not know.
    #[error("option {option} is not converted (only options that shape the request are)")]
    Option {
        /// The option as written.
        option: String,
    },
    /// No URL.
    #[error("no URL in the command")]
    NoUrl,
    /// The request cannot be written as a scenario.
    #[error(transparent)]
    Exchange(#[from] ExchangeError),
}

/// A HAR recording headroom cannot convert.
#[derive(Debug, thiserror::Error)]
pub enum HarError {
    /// Not JSON in the HAR shape.
    #[error("not a HAR file: {0}")]
    NotHar(#[source] serde_json::Error),
    /// More than [`MAX_REQUESTS`] requests.
    #[error("more than {} requests; cut the recording down", MAX_REQUESTS)]
    TooMany,
    /// A body recorded without its text.
    #[error("entry {entry}: a body without text (binary or form parts) is not converted")]
    BinaryBody {
        /// The entry, from 1.
        entry: usize,
    },
    /// No http(s) request.
    #[error("no http(s) request in the recording")]
    NoRequest,
    /// The requests cannot be written as a scenario.
    #[error(transparent)]
    Exchange(#[from] ExchangeError),
}

/// Requests that cannot be written as a scenario.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    /// No request at all.
    #[error("no HTTP request to convert")]
    Empty,
    /// The first request's URL is not http(s).
    #[error("not an http(s) URL: {url:?}")]
    NotHttp {
        /// The URL.
        url: String,
    },
    /// A request's method or headers would not compile.
    #[error("request {request}: {source}")]
    Request {
        /// The request, from 1.
        request: usize,
        /// What is wrong.
        #[source]
        source: QuickError,
    },
    /// A request holds `{{`, which a scenario reads as a template.
    #[error("request {request}: holds `{{{{`, which a scenario reads as the start of a template")]
    Braces {
        /// The request, from 1.
        request: usize,
    },
    /// A request's body is above [`MAX_BODY`].
    #[error("request {request}: body larger than {} KiB", MAX_BODY >> 10)]
    BodyTooLarge {
        /// The request, from 1.
        request: usize,
    },
}

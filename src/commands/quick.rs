//! Quick mode's request flags as curl, hey and oha spell them, shared by `run` and
//! `find`: `-X/--method`, `-H/--header` (repeatable), `--body`, `--json`,
//! `--body-file`. [`RequestFlags::request`] reads them into the scenario layer's
//! [`QuickRequest`] (reading the body file, within [`MAX_BODY_FILE`]).

use std::io::Read;
use std::path::PathBuf;

use clap::Args;

use crate::scenario::{QuickBody, QuickRequest};

use super::values::ValueError;

/// The largest `--body-file` read, bytes: one request body, held in memory and sent
/// with every request.
pub const MAX_BODY_FILE: u64 = 16 << 20;

/// The request flags of quick mode (`--url` without a scenario file).
#[derive(Debug, Args, Clone, Default)]
pub struct RequestFlags {
    /// Quick mode: the HTTP method (default GET, or POST with a body).
    #[arg(short = 'X', long, value_name = "METHOD")]
    pub method: Option<String>,
    /// Quick mode: a request header, `NAME: VALUE` (repeatable).
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE", value_parser = parse_header)]
    pub headers: Vec<(String, String)>,
    /// Quick mode: the request body, as given (templates as in --url).
    #[arg(long, value_name = "TEXT", group = "request_body")]
    pub body: Option<String>,
    /// Quick mode: a JSON body; also sets `content-type` and `accept` to
    /// `application/json` unless -H gives them.
    #[arg(long, value_name = "JSON", group = "request_body")]
    pub json: Option<String>,
    /// Quick mode: the request body from this file, sent byte for byte.
    #[arg(long, value_name = "FILE", group = "request_body")]
    pub body_file: Option<PathBuf>,
}

/// Parses curl's `Name: value` (the value may be empty; surrounding spaces go).
pub fn parse_header(text: &str) -> Result<(String, String), ValueError> {
    match text.split_once(':') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_string(), value.trim().to_string()))
        }
        _ => Err(ValueError::new("`Name: value`", text)),
    }
}

/// Why `--body-file` cannot be sent as a request body; the file is named.
#[derive(Debug, thiserror::Error)]
pub enum BodyFileError {
    /// It cannot be opened or read.
    #[error("--body-file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It is larger than [`MAX_BODY_FILE`].
    #[error("--body-file {}: larger than {} MiB", path.display(), MAX_BODY_FILE >> 20)]
    TooLarge {
        /// The file.
        path: PathBuf,
    },
    /// It is not UTF-8 text.
    #[error("--body-file {}: not UTF-8 text (byte {valid_up_to})", path.display())]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// How many bytes from the start are valid UTF-8.
        valid_up_to: usize,
    },
}

impl RequestFlags {
    /// The flags as the scenario layer takes them; the body file is read here. An
    /// unreadable, too large or non-UTF-8 file is an error naming it.
    pub fn request(&self) -> Result<QuickRequest, BodyFileError> {
        let body = match (&self.body, &self.json, &self.body_file) {
            (Some(text), _, _) => Some(QuickBody::Text(text.clone())),
            (_, Some(json), _) => Some(QuickBody::Json(json.clone())),
            (_, _, Some(path)) => Some(QuickBody::File(read_body(path)?)),
            _ => None,
        };
        Ok(QuickRequest {
            method: self.method.clone(),
            headers: self.headers.clone(),
            body,
        })
    }
}

fn read_body(path: &std::path::Path) -> Result<String, BodyFileError> {
    let cannot = |source| BodyFileError::Read {
        path: path.to_owned(),
        source,
    };
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .map_err(cannot)?
        .take(MAX_BODY_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_BODY_FILE {
        return Err(BodyFileError::TooLarge {
            path: path.to_owned(),
        });
    }
    String::from_utf8(bytes).map_err(|e| BodyFileError::NotUtf8 {
        path: path.to_owned(),
        valid_up_to: e.utf8_error().valid_up_to(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_split_on_the_first_colon() {
        assert_eq!(
            parse_header("Authorization: Bearer a:b").unwrap(),
            ("Authorization".into(), "Bearer a:b".into())
        );
        assert_eq!(
            parse_header("X-Empty:").unwrap(),
            ("X-Empty".into(), "".into())
        );
        assert!(parse_header("no colon").is_err());
        assert!(parse_header(": v").is_err());
    }

    #[test]
    fn a_body_file_is_read_within_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.json");
        std::fs::write(&path, "{\"a\": 1}").unwrap();
        let flags = RequestFlags {
            body_file: Some(path.clone()),
            ..RequestFlags::default()
        };
        assert_eq!(
            flags.request().unwrap().body,
            Some(QuickBody::File("{\"a\": 1}".into()))
        );
        std::fs::write(&path, [0xff, 0xfe]).unwrap();
        assert!(flags
            .request()
            .unwrap_err()
            .to_string()
            .contains("not UTF-8"));
        let big = std::fs::File::create(&path).unwrap();
        big.set_len(MAX_BODY_FILE + 1).unwrap();
        assert!(flags
            .request()
            .unwrap_err()
            .to_string()
            .contains("larger than 16 MiB"));
        let missing = RequestFlags {
            body_file: Some(dir.path().join("none")),
            ..RequestFlags::default()
        };
        assert!(missing
            .request()
            .unwrap_err()
            .to_string()
            .starts_with("--body-file"));
    }
}

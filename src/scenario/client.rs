//! The `client:` block and the connection flags into a [`ClientPlan`]: `--resolve`
//! entries, and for an `https://` target the TLS configuration, built here once so a
//! bad certificate file is bad input before anything is sent.

use std::path::{Path, PathBuf};

use serde_saphyr::Spanned;

use super::errors::{ScenarioError, Source};
use super::format::ClientSpec;
use super::Overrides;
use crate::client::connect::Resolve;
use crate::client::tls::{client_config, TlsOptions};
use crate::plan::{ClientPlan, Target};

/// Merges the file's `client:` block (if any) with the flags, flags winning: a flag's
/// file replaces the block's, `--insecure` turns verification off whatever the block
/// says, and `--resolve` entries come before the block's (the first match is used).
/// Paths in the block are relative to the scenario file's directory.
pub(crate) fn build(
    file: Option<(Source<'_>, Option<&Spanned<ClientSpec>>)>,
    overrides: &Overrides,
    target: &Target,
) -> Result<ClientPlan, ScenarioError> {
    let flags = &overrides.client;
    let mut resolve = flags.resolve.clone();
    let mut options = TlsOptions {
        insecure: flags.insecure,
        cacert: flags.cacert.clone(),
        cert: flags.cert.clone(),
        key: flags.key.clone(),
    };
    let mut block = None;
    if let Some((src, Some(spec))) = file {
        let dir = Path::new(src.file).parent().unwrap_or(Path::new(""));
        let local = |p: &Option<String>| p.as_ref().map(|p| dir.join(p));
        let c = &spec.value;
        for (i, entry) in c.resolve.iter().enumerate() {
            let parsed: Resolve = entry
                .value
                .parse()
                .map_err(|e| src.of(entry, &format!("client.resolve[{i}]"), e))?;
            resolve.push(parsed);
        }
        options.insecure |= c.insecure;
        options.cacert = options.cacert.or_else(|| local(&c.cacert));
        if options.cert.is_none() && options.key.is_none() {
            (options.cert, options.key) = (local(&c.cert), local(&c.key));
        }
        block = Some((src, spec));
    }
    let tls = if target.scheme == "https" {
        if let Err(e) = rustls::pki_types::ServerName::try_from(target.host.as_str()) {
            let message = format!("{:?} is not a valid TLS server name: {e}", target.host);
            return Err(match file {
                Some((src, _)) => ScenarioError {
                    location: src.file.to_string(),
                    message,
                },
                None => ScenarioError::command_line(message),
            });
        }
        let config = client_config(&options).map_err(|e| {
            let from_flags = |p: &Option<PathBuf>| p.is_some();
            let flagged =
                from_flags(&flags.cacert) || from_flags(&flags.cert) || from_flags(&flags.key);
            match block {
                Some((src, spec)) if !flagged => src.of(spec, "client", e),
                _ => ScenarioError::command_line(e.to_string()),
            }
        })?;
        Some(config)
    } else {
        None
    };
    Ok(ClientPlan { resolve, tls })
}

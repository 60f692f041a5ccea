//! The `client:` block and the connection flags into a [`ClientPlan`]: `--resolve`
//! entries, the protocol, streams and connection model (also keys of `defaults:`), and
//! for an `https://` target the TLS configuration, built here once so a bad
//! certificate file is bad input before anything is sent.

use std::path::{Path, PathBuf};

use serde_saphyr::Spanned;

use super::errors::{ScenarioError, Source};
use super::format::{ClientSpec, Defaults, Node};
use super::values::{at_most, positive_int, MAX_CONCURRENCY};
use super::{ClientFlags, Overrides};
use headroom_client::connect::Resolve;
use headroom_client::tls::{client_config, TlsOptions};
use headroom_client::{ConnectionModel, Protocol};
use headroom_plan::{ClientPlan, Load, Target};

/// A scenario file's `client:` and `defaults:` blocks, as given.
pub(crate) type FileBlocks<'a> = (
    Source<'a>,
    Option<&'a Spanned<ClientSpec>>,
    Option<&'a Defaults>,
);

/// Merges the file's `client:` block (if any) with the flags, flags winning: a flag's
/// file replaces the block's, `--insecure` turns verification off whatever the block
/// says, and `--resolve` entries come before the block's (the first match is used).
/// Paths in the block are relative to the scenario file's directory.
///
/// `load` and `pool` (`--connections` or `load.connections`) decide the connection
/// model's default and the shared pool's size; see [`connections`].
pub(crate) fn build(
    file: Option<FileBlocks<'_>>,
    overrides: &Overrides,
    target: &Target,
    load: &Load,
    pool: Option<usize>,
) -> Result<ClientPlan, ScenarioError> {
    let flags = &overrides.client;
    let file_keys = file.map(|(src, spec, defaults)| (src, spec.map(|s| &s.value), defaults));
    let (protocol, streams, connection) =
        connections(file_keys, flags, load, pool, &target.scheme)?;
    let file = file.map(|(src, spec, _)| (src, spec));
    let mut resolve = flags.resolve.clone();
    let mut options = TlsOptions {
        insecure: flags.insecure,
        cacert: flags.cacert.clone(),
        cert: flags.cert.clone(),
        key: flags.key.clone(),
        http2: protocol == Protocol::Http2,
        http3: protocol == Protocol::Http3,
        h3_resume: flags.h3_resume,
        h3_0rtt: flags.h3_0rtt,
    };
    if (flags.h3_resume || flags.h3_0rtt) && protocol != Protocol::Http3 {
        let flag = if flags.h3_0rtt {
            "--h3-0rtt"
        } else {
            "--h3-resume"
        };
        return Err(ScenarioError::command_line(format!(
            "{flag} applies to HTTP/3: add --http3 (or `http3: true`)"
        )));
    }
    let mut block = None;
    let mut cookies = true;
    let mut redirects = headroom_plan::journey::DEFAULT_REDIRECTS;
    if let Some((src, Some(spec))) = file {
        if let Some(c) = &spec.value.cookies {
            cookies = c.value;
        }
        if let Some(node) = &spec.value.redirects {
            redirects = super::journey::redirects(src, node, "client.redirects")?;
        }
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
    // A plain target's run may still open streams to `wss://` or `https://` URLs; the
    // TLS flags it was given (`--cacert`, `--insecure`, a client certificate) are for
    // those too, as curl applies them to whatever URL it fetches.
    let given = options.cacert.is_some() || options.insecure || options.cert.is_some();
    // Other origins (redirects, streams) go over TCP: an HTTP/3 run's QUIC
    // configuration (ALPN `h3`, TLS 1.3 only) is not theirs.
    let other_origins = match &tls {
        Some(config) if protocol != Protocol::Http3 => Some(config.clone()),
        _ if given || tls.is_some() => {
            let tcp = TlsOptions {
                http3: false,
                ..options.clone()
            };
            Some(client_config(&tcp).map_err(|e| ScenarioError::command_line(e.to_string()))?)
        }
        _ => None,
    };
    let cacert = other_origins.as_ref().and(options.cacert);
    Ok(ClientPlan {
        resolve,
        tls,
        other_origins,
        cacert,
        protocol,
        streams,
        connection,
        cookies,
        redirects,
    })
}

/// The protocol, streams per HTTP/2 connection and connection model, from the flags,
/// else the `client:` block, else `defaults:`, else the load model's default:
/// `per-user` for users, `shared` for arrivals. `pool` (`--connections N`, or the
/// arrival-rate model's `load.connections`) sizes a shared pool, and alone chooses one.
fn connections(
    file: Option<(Source<'_>, Option<&ClientSpec>, Option<&Defaults>)>,
    flags: &ClientFlags,
    load: &Load,
    pool: Option<usize>,
    scheme: &str,
) -> Result<(Protocol, u32, ConnectionModel), ScenarioError> {
    let (src, client, defaults) = match file {
        Some((src, c, d)) => (Some(src), c, d),
        None => (None, None, None),
    };
    // The first of `client.KEY` and `defaults.KEY` that is there, with its path.
    fn key<'a, T>(
        client: Option<&'a ClientSpec>,
        defaults: Option<&'a Defaults>,
        name: &str,
        pick_c: impl Fn(&'a ClientSpec) -> Option<&'a T>,
        pick_d: impl Fn(&'a Defaults) -> Option<&'a T>,
    ) -> Option<(&'a T, String)> {
        client
            .and_then(pick_c)
            .map(|v| (v, format!("client.{name}")))
            .or_else(|| {
                defaults
                    .and_then(pick_d)
                    .map(|v| (v, format!("defaults.{name}")))
            })
    }
    let asked = |flag: bool,
                 name: &str,
                 pick_c: fn(&ClientSpec) -> Option<&Spanned<bool>>,
                 pick_d: fn(&Defaults) -> Option<&Spanned<bool>>| {
        if flag {
            return Some((None, format!("--{name}")));
        }
        key(client, defaults, name, pick_c, pick_d)
            .filter(|(v, _)| v.value)
            .map(|(v, path)| (Some(v), path))
    };
    let http2 = asked(
        flags.http2,
        "http2",
        |c| c.http2.as_ref(),
        |d| d.http2.as_ref(),
    );
    let http3 = asked(
        flags.http3,
        "http3",
        |c| c.http3.as_ref(),
        |d| d.http3.as_ref(),
    );
    let protocol = match (&http2, &http3) {
        (Some((_, two)), Some((node, three))) => {
            let message = format!("{two} and {three} ask for two protocols: choose one");
            return Err(match (node, src) {
                (Some(node), Some(src)) => src.of(*node, three, message),
                _ => ScenarioError::command_line(message),
            });
        }
        (Some(_), None) => Protocol::Http2,
        (None, Some((node, path))) if scheme != "https" => {
            let message = format!(
                "HTTP/3 runs over QUIC, which is always TLS: the target must be https://, \
                 not {scheme}://"
            );
            return Err(match (node, src) {
                (Some(node), Some(src)) => src.of(*node, path, message),
                _ => ScenarioError::command_line(format!("{path}: {message}")),
            });
        }
        (None, Some(_)) => Protocol::Http3,
        (None, None) => Protocol::Http1,
    };

    let file_streams = key(
        client,
        defaults,
        "streams",
        |c| c.streams.as_ref(),
        |d| d.streams.as_ref(),
    );
    let streams = match (flags.streams, &file_streams, src) {
        (Some(0), _, _) => {
            return Err(ScenarioError::command_line(
                "--streams: expected a positive integer, found 0",
            ))
        }
        (Some(n), _, _) => Some(u64::from(n)),
        (None, Some((node, path)), Some(src)) => Some(count(src, node, path, "streams")?),
        _ => None,
    };
    if streams.is_some() && protocol == Protocol::Http1 {
        let message = "streams apply to HTTP/2 and HTTP/3 connections: add --http2 or --http3 \
                       (or `http2: true`, `http3: true`)";
        return Err(match (flags.streams, file_streams, src) {
            (None, Some((node, path)), Some(src)) => src.of(node, &path, message),
            _ => ScenarioError::command_line(format!("--streams: {message}")),
        });
    }
    let streams = match streams {
        Some(n) => {
            at_most(n as f64, f64::from(i32::MAX as u32), "streams")
                .map_err(|e| ScenarioError::command_line(format!("--streams: {e}")))?;
            n as u32
        }
        None => ClientPlan::DEFAULT_STREAMS,
    };

    let users = matches!(load, Load::Users { .. });
    let file_model = key(
        client,
        defaults,
        "connection",
        |c| c.connection.as_ref(),
        |d| d.connection.as_ref(),
    );
    let (model, from) = match (flags.connection, file_model, src) {
        (Some(m), _, _) => (Some(m), "--connection".to_string()),
        (None, Some((node, path)), Some(src)) => (Some(model(src, node, &path)?), path),
        _ => (None, String::new()),
    };
    let model = match (model, pool) {
        (None, None) if users => ConnectionModel::PerUser,
        (None, n) => ConnectionModel::Shared(n),
        (Some(ConnectionModel::Shared(_)), Some(n)) => ConnectionModel::Shared(Some(n)),
        (Some(m), Some(_)) if m != ConnectionModel::Shared(None) => {
            return Err(ScenarioError::command_line(format!(
                "--connections sizes a shared pool; {from} is {m}, which opens its own connections"
            )))
        }
        (Some(m), _) => m,
    };
    if model == ConnectionModel::PerUser && !users {
        return Err(ScenarioError::command_line(format!(
            "{from}: per-user needs the users model (each user owns its connections); \
             the arrival-rate model has no users: use shared or per-request"
        )));
    }
    Ok((protocol, streams, model))
}

/// A positive count at most [`MAX_CONCURRENCY`].
fn count(src: Source<'_>, node: &Node, path: &str, what: &str) -> Result<u64, ScenarioError> {
    let n = positive_int(src, node, path)?;
    at_most(n as f64, MAX_CONCURRENCY as f64, what).map_err(|e| src.of(node, path, e))?;
    Ok(n)
}

/// `per-user`, `shared`, `per-request`, or `{shared: N}`.
fn model(src: Source<'_>, node: &Node, path: &str) -> Result<ConnectionModel, ScenarioError> {
    let expected = || {
        src.of(
            node,
            path,
            format!(
                "expected per-user, shared, {{shared: N}} or per-request, found {}",
                super::errors::found(&node.value)
            ),
        )
    };
    match &node.value {
        serde_json::Value::String(text) => text
            .parse()
            .map_err(|e: headroom_client::ConnectionModelError| src.of(node, path, e)),
        serde_json::Value::Object(map) if map.len() == 1 => {
            let n = map.get("shared").ok_or_else(expected)?;
            match n.as_u64() {
                Some(n) if n > 0 && n <= MAX_CONCURRENCY => {
                    Ok(ConnectionModel::Shared(Some(n as usize)))
                }
                _ => Err(src.of(
                    node,
                    &format!("{path}.shared"),
                    format!(
                        "expected a positive integer at most {MAX_CONCURRENCY}, found {}",
                        super::errors::found(n)
                    ),
                )),
            }
        }
        _ => Err(expected()),
    }
}

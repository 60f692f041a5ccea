//! The gRPC part of a `grpc:` flow step: `proto:` (a file or a list, relative to the
//! scenario file, or `{files, import_paths}`; `--proto-path` adds import paths to every
//! step) compiled at load time, `call: package.Service/Method` looked up in it,
//! `message:` checked against the method's input type (when it has no placeholders) and
//! compiled as a JSON template, `metadata:` as header templates. Every error names the
//! scenario file, line and column, and the proto file and reason where it is theirs.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::errors::{found, ScenarioError, Source};
use super::fields::template;
use super::format::StreamSpec;
use super::requests;
use headroom_client::grpc::Schema;
use headroom_plan::GrpcCall;
use headroom_template::Escape;

/// Most proto files one step may list.
const MAX_FILES: usize = 64;
/// Most import paths one step may list.
const MAX_IMPORT_PATHS: usize = 64;

/// Compiles the call of `s` (at `path`, `flows[0].steps[1].grpc`): `None` for a step
/// without `call:` (one that expects on or closes a server stream opened earlier).
/// `proto_paths` (`--proto-path`) are searched for imports after the step's own.
pub(crate) fn compile(
    src: Source<'_>,
    s: &StreamSpec,
    path: &str,
    vars: Option<&[String]>,
    proto_paths: &[PathBuf],
) -> Result<Option<GrpcCall>, ScenarioError> {
    if let Some(url) = &s.url {
        return Err(src.of(
            url,
            &format!("{path}.url"),
            "a `grpc:` step makes a call: give `call` and `proto` (the target is the run's), not `url`",
        ));
    }
    if let Some(send) = &s.send {
        return Err(src.of(
            send,
            &format!("{path}.send"),
            "a `grpc:` step sends its request as `message`; `send` is for `ws:`",
        ));
    }
    let Some(call) = &s.call else {
        for (key, at) in [
            ("proto", s.proto.as_ref().map(|n| n.referenced)),
            ("message", s.message.as_ref().map(|n| n.referenced)),
        ] {
            if let Some(at) = at {
                return Err(src.at(
                    at,
                    &format!("{path}.{key}"),
                    format!("`{key}` goes with `call`"),
                ));
            }
        }
        if let Some((name, value)) = s.metadata.iter().next() {
            return Err(src.of(
                value,
                &format!("{path}.metadata.{name}"),
                "`metadata` goes with `call`",
            ));
        }
        return Ok(None);
    };
    let Some(proto) = &s.proto else {
        return Err(src.of(
            call,
            &format!("{path}.call"),
            "`call` needs `proto`: the .proto file(s) that define the service",
        ));
    };
    let base = Path::new(src.file)
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let (files, own) =
        proto_tree(&proto.value).map_err(|e| src.of(proto, &format!("{path}.proto"), e))?;
    // The step's import paths are relative to the scenario's directory, as its files
    // are; `--proto-path` ones are as given (relative to where headroom runs, as
    // protoc's -I and every other file flag).
    let imports: Vec<PathBuf> = own
        .iter()
        .map(|p| base.join(p))
        .chain(proto_paths.iter().cloned())
        .collect();
    let schema = Schema::compile_with_imports(base, &files, &imports)
        .map_err(|e| src.of(proto, &format!("{path}.proto"), e))?;
    let method = schema
        .method(&call.value)
        .map_err(|e| src.of(call, &format!("{path}.call"), e))?;
    let message_path = format!("{path}.message");
    let json = s
        .message
        .as_ref()
        .map_or(Value::Object(Default::default()), |m| m.value.clone());
    let text = serde_json::to_string(&json).map_err(|e| src.at(proto.referenced, path, e))?;
    let at = s.message.as_ref().map_or(call.referenced, |m| m.referenced);
    if !text.contains("{{") {
        // No placeholders: the message is known now, so a misfit is bad input now.
        method
            .encode(&json)
            .map_err(|e| src.at(at, &message_path, e))?;
    }
    let message = match &s.message {
        Some(node) => template(src, node, &message_path, &text, Escape::Json, vars)?,
        None => template(src, call, &message_path, &text, Escape::Json, vars)?,
    };
    let mut metadata = Vec::new();
    for (name, value) in &s.metadata {
        let at = format!("{path}.metadata.{name}");
        metadata.push((
            name.to_ascii_lowercase(),
            requests::header(src, name, value, &at, vars)?,
        ));
    }
    Ok(Some(GrpcCall {
        method,
        message,
        metadata,
    }))
}

/// What is wrong with a `proto:` key as written.
#[derive(Debug, thiserror::Error)]
enum ProtoKeyError {
    #[error("unknown key {0:?}: `proto` as a map takes `files` and `import_paths`")]
    UnknownKey(String),
    #[error("`proto` as a map needs `files`: the .proto file(s)")]
    NoFiles,
    #[error("files: {0}")]
    Files(Box<ProtoKeyError>),
    #[error("import_paths: expected a list of directories")]
    ImportPathNames,
    #[error("import_paths: expected a list of up to {MAX_IMPORT_PATHS} directories, found {0}")]
    ImportPaths(String),
    #[error("expected a list of .proto file names")]
    FileNames,
    #[error("expected a .proto file or a list of 1 to {MAX_FILES}, found {0}")]
    FileList(String),
}

/// `proto:` as written: a file, a list of files, or `{files: …, import_paths: […]}`;
/// the files and the step's own import paths (as written), or what is wrong.
fn proto_tree(value: &Value) -> Result<(Vec<String>, Vec<String>), ProtoKeyError> {
    let Value::Object(map) = value else {
        return Ok((file_list(value)?, Vec::new()));
    };
    if let Some(key) = map.keys().find(|k| *k != "files" && *k != "import_paths") {
        return Err(ProtoKeyError::UnknownKey(key.clone()));
    }
    let files = match map.get("files") {
        Some(files) => file_list(files).map_err(|e| ProtoKeyError::Files(Box::new(e)))?,
        None => return Err(ProtoKeyError::NoFiles),
    };
    let imports = match map.get("import_paths") {
        None => Vec::new(),
        Some(Value::Array(items)) if items.len() <= MAX_IMPORT_PATHS => items
            .iter()
            .map(|v| v.as_str().filter(|s| !s.is_empty()).map(str::to_string))
            .collect::<Option<_>>()
            .ok_or(ProtoKeyError::ImportPathNames)?,
        Some(other) => return Err(ProtoKeyError::ImportPaths(found(other))),
    };
    Ok((files, imports))
}

/// A `.proto` file or a list of 1 to [`MAX_FILES`].
fn file_list(value: &Value) -> Result<Vec<String>, ProtoKeyError> {
    match value {
        Value::String(f) => Ok(vec![f.clone()]),
        Value::Array(items) if !items.is_empty() && items.len() <= MAX_FILES => items
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<_>>()
            .ok_or(ProtoKeyError::FileNames),
        other => Err(ProtoKeyError::FileList(found(other))),
    }
}

//! The front ends of the `headroom-convert` crate as the commands use them: each reads
//! its input file (bounded, `-` for standard input), gathers what the conversion needs
//! from beside it (the process environment for a k6 script's `__ENV`, a Postman
//! environment export, a `.http` file's `http-client.env.json`) and returns the
//! scenario with its translation report.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use headroom_convert::{http_file, k6, openapi, postman, Converted, Source};

use super::{read_limited, ConvertError};

/// The file extensions `run` and `find` read as a k6 script instead of a scenario.
const SCRIPT_EXTENSIONS: &[&str] = &["js", "mjs", "cjs", "ts"];

/// Whether `path` names a k6 script (`.js`, `.mjs`, `.cjs`, `.ts`).
pub fn is_k6_script(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| SCRIPT_EXTENSIONS.iter().any(|s| e.eq_ignore_ascii_case(s)))
}

/// A file's text (`-`: standard input), at most [`super::MAX_INPUT`] bytes.
pub fn read_input(path: &Path) -> Result<String, ConvertError> {
    if path.as_os_str() == "-" {
        return read_limited(std::io::stdin().lock());
    }
    let file = std::fs::File::open(path).map_err(|e| ConvertError::Beside {
        file: path.display().to_string(),
        reason: format!("cannot read it: {e}"),
    })?;
    read_limited(file)
}

/// The process environment, as a script's `__ENV` sees it, with `-e KEY=VALUE`
/// values on top (k6's own order).
pub fn script_env(extra: &[(String, String)]) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = std::env::vars().collect();
    env.extend(extra.iter().cloned());
    env
}

/// Where the scenario will be read from, against the script's own directory: the
/// prefix a relative `open()` path needs so the scenario's `data:` file resolves from
/// the scenario's directory. `None` when both are the same directory (or the scenario
/// goes to standard output, where it is read as if beside the script).
pub fn data_prefix(script: &Path, output: Option<&Path>) -> Option<PathBuf> {
    let output = output?;
    let script_dir = absolute_dir(script)?;
    let output_dir = absolute_dir(output)?;
    (script_dir != output_dir).then_some(script_dir)
}

/// The absolute directory a file is in.
fn absolute_dir(file: &Path) -> Option<PathBuf> {
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = dir.map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    std::path::absolute(dir).ok()
}

/// A k6 script as a scenario.
pub fn k6(
    script: &Path,
    env: &[(String, String)],
    output: Option<&Path>,
) -> Result<Converted, ConvertError> {
    let text = read_input(script)?;
    let file = script.display().to_string();
    let options = k6::Options {
        env: script_env(env),
        data_prefix: data_prefix(script, output),
    };
    Ok(k6::convert(
        Source {
            file: &file,
            text: &text,
        },
        &options,
    )?)
}

/// An OpenAPI document as a scenario.
pub fn openapi(
    spec: &Path,
    operations: &[String],
    server: Option<&str>,
) -> Result<Converted, ConvertError> {
    let text = read_input(spec)?;
    let file = spec.display().to_string();
    let options = openapi::Options {
        operations: operations.to_vec(),
        server: server.map(str::to_string),
    };
    Ok(openapi::convert(
        Source {
            file: &file,
            text: &text,
        },
        &options,
    )?)
}

/// A Postman collection (with an environment export, when given) as a scenario.
pub fn postman(collection: &Path, environment: Option<&Path>) -> Result<Converted, ConvertError> {
    let text = read_input(collection)?;
    let file = collection.display().to_string();
    let env_text = environment.map(read_input).transpose()?;
    let env_file = environment.map(|p| p.display().to_string());
    let options = postman::Options {
        environment: env_text
            .as_deref()
            .zip(env_file.as_deref())
            .map(|(text, file)| Source { file, text }),
    };
    Ok(postman::convert(
        Source {
            file: &file,
            text: &text,
        },
        &options,
    )?)
}

/// A `.http` file as a scenario; with `env`, the variables of that environment in
/// `http-client.env.json` (and `http-client.private.env.json`) beside the file.
pub fn http(path: &Path, env: Option<&str>) -> Result<Converted, ConvertError> {
    let text = read_input(path)?;
    let file = path.display().to_string();
    let base_dir = (path.as_os_str() != "-").then(|| {
        path.parent()
            .filter(|d| !d.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    });
    let env_vars = match (env, &base_dir) {
        (Some(name), Some(dir)) => http_env(dir, name)?,
        (Some(_), None) => {
            return Err(ConvertError::Beside {
                file,
                reason: "--env needs a .http file, not standard input, to find http-client.env.json beside it".into(),
            })
        }
        (None, _) => BTreeMap::new(),
    };
    let options = http_file::Options { base_dir, env_vars };
    Ok(http_file::convert(
        Source {
            file: &file,
            text: &text,
        },
        &options,
    )?)
}

/// The variables of environment `name` in `dir/http-client.env.json`, with those of
/// `http-client.private.env.json` on top (JetBrains' files; the private one is
/// optional). Values that are not strings are written as JSON.
fn http_env(dir: &Path, name: &str) -> Result<BTreeMap<String, String>, ConvertError> {
    let mut vars = BTreeMap::new();
    let mut found = false;
    for (file, required) in [
        ("http-client.env.json", true),
        ("http-client.private.env.json", false),
    ] {
        let path = dir.join(file);
        if !path.exists() {
            if required {
                return Err(ConvertError::Beside {
                    file: path.display().to_string(),
                    reason: format!("--env {name} needs this file, and it does not exist"),
                });
            }
            continue;
        }
        let text = read_input(&path)?;
        let beside = |reason: String| ConvertError::Beside {
            file: path.display().to_string(),
            reason,
        };
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| beside(format!("not JSON: {e}")))?;
        let Some(env) = value.get(name) else { continue };
        let env = env
            .as_object()
            .ok_or_else(|| beside(format!("environment `{name}` is not an object")))?;
        found = true;
        for (k, v) in env {
            let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
            vars.insert(k.clone(), v);
        }
    }
    if !found {
        return Err(ConvertError::Beside {
            file: dir.join("http-client.env.json").display().to_string(),
            reason: format!("no environment `{name}` in it"),
        });
    }
    Ok(vars)
}

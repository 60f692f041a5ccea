//! Compiling `secrets:`: header names checked as HTTP tokens, and values that name
//! something the scenario has (a data column, a `setup:` capture, a flow's capture) or
//! an environment variable, read now like a template's `env.NAME`.

use headroom_plan::Secrets;

use super::errors::{ScenarioError, Source};
use super::format::SecretsSpec;
use super::requests::check_header;

/// The plan's [`Secrets`] from `spec`; `user_vars` are the `data.` and `setup.` names,
/// `captured` every flow's captures.
pub(crate) fn build(
    src: Source<'_>,
    spec: Option<&SecretsSpec>,
    user_vars: &[String],
    captured: &[String],
) -> Result<Secrets, ScenarioError> {
    let mut secrets = Secrets::default();
    let Some(spec) = spec else {
        return Ok(secrets);
    };
    for (i, node) in spec.headers.iter().enumerate() {
        let name = node.value.trim();
        check_header(name, "").map_err(|e| src.of(node, &format!("secrets.headers[{i}]"), e))?;
        secrets.headers.push(name.to_ascii_lowercase());
    }
    for (i, node) in spec.values.iter().enumerate() {
        let path = format!("secrets.values[{i}]");
        let name = node.value.trim();
        if let Some(var) = name.strip_prefix("env.") {
            let value = std::env::var(var).map_err(|_| {
                src.of(
                    node,
                    &path,
                    format!("environment variable {var} is not set"),
                )
            })?;
            secrets.literals.push(value);
            continue;
        }
        let known = user_vars.iter().chain(captured).any(|v| v == name);
        if !known {
            let what = match name.split('.').next() {
                Some("data") if name.contains('.') => {
                    "no data column of that name (expected data.SET.COLUMN of a file under `data:`)"
                }
                Some("setup") if name.contains('.') => "no `setup:` step captures that name",
                _ => {
                    "expected data.SET.COLUMN, setup.NAME, env.NAME or the name of a variable \
                     a flow step captures"
                }
            };
            return Err(src.of(node, &path, format!("{name:?}: {what}")));
        }
        secrets.vars.push(name.to_string());
    }
    Ok(secrets)
}

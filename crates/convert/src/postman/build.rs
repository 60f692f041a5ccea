//! The collection converted: its text parsed and recognised as a v2 collection, the
//! collection's variables and the environment's read, its items walked into flows
//! ([`super::walk`]), and the scenario written ([`super::step`], [`super::scenario`]).

use std::path::Path;

use serde_json::Value;

use super::spans;
use super::step::Writer;
use super::vars::Vars;
use super::walk;
use super::{parse_json, Options};
use crate::{ConvertError, Converted, Source};

/// Converts a collection (on the big stack).
pub(super) fn convert(
    source: Source<'_>,
    options: &Options<'_>,
) -> Result<Converted, ConvertError> {
    let root = parse_json(&source)?;
    let Value::Object(top) = &root else {
        return Err(source.unusable(
            0,
            "not a Postman collection: the top level is not an object",
        ));
    };
    let schema = top
        .get("info")
        .and_then(|i| i.get("schema"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    if schema.contains("v1.") || (!top.contains_key("item") && top.contains_key("requests")) {
        return Err(source.unusable(
            0,
            "a Postman v1 collection: export it again as Collection v2.1 (Export, then v2.1)",
        ));
    }
    let Some(Value::Array(items)) = top.get("item") else {
        return Err(source.unusable(0, "not a Postman collection: no `item` list of requests"));
    };
    let spans = spans::locate(source.text);
    let name = top
        .get("info")
        .and_then(|i| i.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("postman")
        .to_string();

    let mut vars = Vars::default();
    for (k, v) in variables(top.get("variable"), "disabled", true) {
        vars.values.insert(k, v);
    }
    if let Some(env) = &options.environment {
        let env_root = parse_json(env)?;
        for (k, v) in variables(env_root.get("values"), "enabled", false) {
            vars.values.insert(k, v);
        }
    }

    let (flows, left_out) = walk::flows(&source, &spans, top, items, &name)?;
    if flows.is_empty() {
        return Err(source.unusable(0, "the collection holds no request"));
    }
    let dir = Path::new(source.file)
        .parent()
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let mut writer = Writer::new(&source, &spans, vars, dir);
    for (offset, construct, outcome) in left_out {
        writer.push(offset, &construct, outcome);
    }
    writer.write(&name, &flows)
}

/// `{key, value}` pairs of a variable list, skipping disabled ones (`flag` is the
/// field that says so, `on` whether true means enabled).
fn variables(list: Option<&Value>, flag: &str, disabled_when_true: bool) -> Vec<(String, String)> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| match v.get(flag).and_then(Value::as_bool) {
            Some(b) => b != disabled_when_true,
            None => true,
        })
        .filter_map(|v| {
            let key = v.get("key").and_then(Value::as_str)?;
            let value = match v.get("value") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            Some((key.to_string(), value))
        })
        .collect()
}

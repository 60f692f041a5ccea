//! A request's auth in force (inherited already) as what it sends: bearer and basic
//! as an `Authorization` header, an API key as a header or a query parameter; other
//! auth types are reported.

use serde_json::Value;

use super::vars::{Note, Overflow, Vars};
use crate::tpl::Tpl;
use crate::{Outcome, Yaml};

/// A parameter of an auth block: v2.1 lists `[{key, value}]`, v2.0 objects.
fn auth_param(auth: &Value, kind: &str, key: &str) -> Option<String> {
    let params = auth.get(kind)?;
    let value = match params {
        Value::Array(list) => list
            .iter()
            .find(|p| p.get("key").and_then(Value::as_str) == Some(key))?
            .get("value")?,
        Value::Object(map) => map.get(key)?,
        _ => return None,
    };
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// Adds the auth in force as a header or a query parameter.
pub(super) fn auth(
    auth: &Value,
    vars: &mut Vars,
    headers: &mut Yaml,
    query: &mut Vec<(String, String)>,
    notes: &mut Vec<Note>,
) -> Result<(), Overflow> {
    let kind = auth.get("type").and_then(Value::as_str).unwrap_or("noauth");
    match kind {
        "noauth" => {}
        "bearer" => {
            let token = auth_param(auth, "bearer", "token").unwrap_or_default();
            let token = vars.translate(&token, notes)?;
            headers.set("Authorization", format!("Bearer {token}"));
        }
        "basic" => {
            let user = auth_param(auth, "basic", "username").unwrap_or_default();
            let pass = auth_param(auth, "basic", "password").unwrap_or_default();
            let pair = vars.translate(&format!("{user}:{pass}"), notes)?;
            if pair.contains("{{") {
                notes.push((
                    "auth basic".into(),
                    Outcome::LeftOut(
                        "a user or password known only at run time: write the Authorization \
                         header with base64() yourself"
                            .into(),
                    ),
                ));
            } else {
                let mut t = Tpl::new();
                t.lit("Basic ");
                t.expr(&format!("base64({})", crate::tpl::quoted(&pair)));
                headers.set("Authorization", t.finish());
            }
        }
        "apikey" => {
            let key = auth_param(auth, "apikey", "key").unwrap_or_default();
            let value = auth_param(auth, "apikey", "value").unwrap_or_default();
            let value = vars.translate(&value, notes)?;
            match auth_param(auth, "apikey", "in").as_deref() {
                Some("query") => query.push((key, value)),
                _ => headers.set(&key, value),
            }
        }
        other => notes.push((
            format!("auth {other}"),
            Outcome::LeftOut(format!(
                "{other} auth is not translated: set the header it sends in defaults.headers"
            )),
        )),
    }
    Ok(())
}

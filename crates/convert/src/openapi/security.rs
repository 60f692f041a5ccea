//! Security requirements as headers, query parameters and cookies whose secrets come
//! from the environment (`{{ env.NAME }}`, read when the scenario loads, an error
//! when unset): the operation's `security` (else the document's), its first
//! requirement, every scheme of it. `NAME` is the scheme's name in
//! SCREAMING_SNAKE_CASE (`bearerAuth` → `BEARER_AUTH`).

use super::node::Node;
use super::params::{is_token, Parts};
use super::refs::{Doc, Problem};
use super::text::{render, Enc, Piece};

/// Adds the credentials `op` needs to `parts`; returns the environment variables
/// they read.
pub(crate) fn apply(doc: &Doc<'_>, op: &Node, parts: &mut Parts) -> Result<Vec<String>, Problem> {
    let Some(requirements) = op.get("security").or_else(|| doc.root.get("security")) else {
        return Ok(Vec::new());
    };
    // The first requirement is what a client sends; `{}` there means none is needed.
    let Some(first) = requirements.items().first() else {
        return Ok(Vec::new());
    };
    let mut env = Vec::new();
    for scheme_name in first.entries() {
        let name = scheme_name.key.as_str();
        let scheme = doc
            .root
            .get("components")
            .and_then(|c| c.get("securitySchemes"))
            .and_then(|s| s.get(name))
            .ok_or_else(|| {
                Problem::new(
                    scheme_name.at,
                    format!("security scheme `{name}` is not in components.securitySchemes"),
                )
            })?;
        let scheme = doc.resolve(scheme)?.node;
        let var = env_name(name);
        let secret = format!("{{{{ env.{var} }}}}");
        match (
            scheme.str_of("type").unwrap_or(""),
            scheme.str_of("scheme").map(str::to_ascii_lowercase),
        ) {
            ("http", Some(s)) if s == "bearer" => {
                parts
                    .headers
                    .push(("Authorization".into(), format!("Bearer {secret}")));
            }
            ("http", Some(s)) if s == "basic" => {
                parts.notes.push(format!(
                    "`{name}`: env.{var} holds `user:password`, sent base64-encoded"
                ));
                parts.headers.push((
                    "Authorization".into(),
                    format!("Basic {{{{ base64(env.{var}) }}}}"),
                ));
            }
            ("http", other) => {
                let other = other.unwrap_or_default();
                parts.notes.push(format!("`{name}`: HTTP `{other}` authentication is not computed; env.{var} is sent as its credentials"));
                // The header carries the scheme as the document spells it (`Digest`).
                let written = scheme.str_of("scheme").unwrap_or_default();
                let scheme_word: String = written
                    .chars()
                    .filter(|c| c.is_ascii_alphanumeric())
                    .collect();
                parts
                    .headers
                    .push(("Authorization".into(), format!("{scheme_word} {secret}")));
            }
            ("apiKey", _) => {
                let key = scheme.str_of("name").unwrap_or(name);
                match scheme.str_of("in").unwrap_or("header") {
                    "query" => parts.query.push(render(
                        &[
                            Piece::Lit(key.into()),
                            Piece::Raw("="),
                            Piece::Expr(format!("env.{var}")),
                        ],
                        Enc::Url,
                    )),
                    "cookie" => parts.cookies.push(render(
                        &[
                            Piece::Lit(key.into()),
                            Piece::Raw("="),
                            Piece::Expr(format!("env.{var}")),
                        ],
                        Enc::Url,
                    )),
                    _ if is_token(key) => parts.headers.push((key.to_string(), secret)),
                    _ => {
                        return Err(Problem::new(
                            scheme.at,
                            format!("API key header `{key}` is not a valid header name"),
                        ))
                    }
                }
            }
            ("oauth2" | "openIdConnect", _) => {
                parts.notes.push(format!("`{name}`: the OAuth2 flow is not run; env.{var} holds an access token, sent as a bearer token"));
                parts
                    .headers
                    .push(("Authorization".into(), format!("Bearer {secret}")));
            }
            ("mutualTLS", _) => {
                parts.notes.push(format!(
                    "`{name}`: mutual TLS needs `client: {{cert, key}}` in the scenario"
                ));
                continue;
            }
            (other, _) => {
                return Err(Problem::new(
                    scheme.at,
                    format!("security scheme `{name}` has an unknown type `{other}`"),
                ));
            }
        }
        env.push(var);
    }
    Ok(env)
}

/// A scheme's name as an environment variable: words split at case changes and at
/// anything not a letter or digit, upper case, joined by `_`, never starting with a
/// digit.
pub(crate) fn env_name(scheme: &str) -> String {
    let chars: Vec<char> = scheme.chars().collect();
    let mut out = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_ascii_alphanumeric() {
            if !out.is_empty() && !out.ends_with('_') {
                out.push('_');
            }
            continue;
        }
        let prev = i.checked_sub(1).and_then(|p| chars.get(p)).copied();
        let next = chars.get(i + 1).copied();
        let boundary = c.is_ascii_uppercase()
            && match prev {
                Some(p) if p.is_ascii_lowercase() || p.is_ascii_digit() => true,
                Some(p) if p.is_ascii_uppercase() => next.is_some_and(|n| n.is_ascii_lowercase()),
                _ => false,
            };
        if boundary && !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    let out = out.trim_end_matches('_').to_string();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        format!("API_{out}")
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheme_names_become_screaming_snake_case() {
        for (scheme, var) in [
            ("bearerAuth", "BEARER_AUTH"),
            ("api_key", "API_KEY"),
            ("APIKey", "API_KEY"),
            ("petstore-auth", "PETSTORE_AUTH"),
            ("OAuth2", "O_AUTH2"),
            ("basic", "BASIC"),
            ("2fa token", "API_2FA_TOKEN"),
            ("ÜberKey", "BER_KEY"),
        ] {
            assert_eq!(env_name(scheme), var, "{scheme}");
        }
        assert_eq!(env_name("!!!"), "API_");
    }
}

//! Keeping secrets out of the store and the reports. Header values of
//! [`SECRET_HEADERS`] are never written; a stored command line has them masked, as
//! well as passwords in URLs and values of flags whose names say they are secret.

pub use headroom_template::secret::{is_secret_header, is_secret_header_in, MASK, SECRET_HEADERS};

/// Words that make a flag's value secret (`--token`, `--api-key`, `--password`).
const SECRET_FLAG_WORDS: &[&str] = &["token", "secret", "password", "key", "auth", "cookie"];

/// `Name: value` with the value masked when the header is secret: a credential
/// header, or one of `marked` (a scenario's `secrets.headers`).
pub fn header(spec: &str, marked: &[String]) -> String {
    match spec.split_once(':') {
        Some((name, _)) if is_secret_header_in(name, marked) => format!("{name}: {MASK}"),
        _ => spec.to_string(),
    }
}

/// Masks the password of a URL's userinfo (`http://user:pw@host` → `http://user:***@host`).
pub fn url(text: &str) -> String {
    let Some(scheme_end) = text.find("://") else {
        return text.to_string();
    };
    let rest = &text[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return text.to_string();
    };
    let userinfo = &rest[..at];
    let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
    format!("{}{user}:{MASK}{}", &text[..scheme_end + 3], &rest[at..])
}

fn secret_flag(flag: &str) -> bool {
    let name = flag.trim_start_matches('-').to_ascii_lowercase();
    SECRET_FLAG_WORDS.iter().any(|w| name.contains(w))
}

fn is_header_flag(flag: &str) -> bool {
    matches!(flag, "--header" | "-H")
}

/// The command line to store: arguments joined by spaces (quoted when they hold
/// spaces), with secret header values, URL passwords and secret flag values masked.
pub fn command_line(args: &[String], marked: &[String]) -> String {
    let mut out = Vec::with_capacity(args.len());
    let mut next_is = None::<&str>;
    for arg in args {
        let masked = match next_is.take() {
            Some("header") => header(arg, marked),
            Some(_) => MASK.to_string(),
            None => match arg.split_once('=') {
                Some((flag, value)) if flag.starts_with("--") && is_header_flag(flag) => {
                    format!("{flag}={}", header(value, marked))
                }
                Some((flag, _)) if flag.starts_with("--") && secret_flag(flag) => {
                    format!("{flag}={MASK}")
                }
                _ => {
                    if is_header_flag(arg) {
                        next_is = Some("header");
                    } else if arg.starts_with("--") && secret_flag(arg) {
                        next_is = Some("secret");
                    }
                    url(arg)
                }
            },
        };
        out.push(quote(&url(&masked)));
    }
    out.join(" ")
}

fn quote(arg: &str) -> String {
    if arg.is_empty() || arg.contains(|c: char| c.is_whitespace() || "'\"\\$`".contains(c)) {
        format!("'{}'", arg.replace('\'', r"'\''"))
    } else {
        arg.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(args: &[&str]) -> String {
        command_line(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>(), &[])
    }

    #[test]
    fn secret_header_values_are_masked_in_every_spelling() {
        let l = line(&[
            "headroom",
            "run",
            "--header",
            "Authorization: Bearer abc123",
            "-H",
            "cookie: sid=s3cr3t",
            "--header=X-Api-Key: k-999",
            "--header",
            "Accept: text/plain",
        ]);
        for secret in ["abc123", "s3cr3t", "k-999"] {
            assert!(!l.contains(secret), "{secret} in {l}");
        }
        assert!(l.contains("'Authorization: ***'"), "{l}");
        assert!(l.contains("'Accept: text/plain'"), "{l}");
    }

    #[test]
    fn a_header_the_scenario_marks_secret_is_masked_too() {
        let args: Vec<String> = [
            "headroom",
            "run",
            "s.yaml",
            "-H",
            "X-Session: s-42",
            "-H",
            "X-Other: v",
        ]
        .map(String::from)
        .to_vec();
        let l = command_line(&args, &["x-session".into()]);
        assert!(
            l.contains("X-Session: ***") && l.contains("X-Other: v"),
            "{l}"
        );
        assert!(command_line(&args, &[]).contains("s-42"));
    }

    #[test]
    fn url_passwords_and_secret_flags_are_masked() {
        let l = line(&[
            "headroom",
            "run",
            "--url",
            "http://bob:hunter2@127.0.0.1:8080/x",
            "--api-token",
            "tok",
            "--password=pw",
            "--label",
            "round=6",
        ]);
        assert_eq!(
            l,
            "headroom run --url http://bob:***@127.0.0.1:8080/x --api-token *** \
             --password=*** --label round=6"
        );
    }

    #[test]
    fn header_names_are_matched_without_regard_to_case() {
        assert!(is_secret_header("Proxy-Authorization"));
        assert!(is_secret_header(" X-API-KEY "));
        assert!(!is_secret_header("x-request-id"));
    }
}

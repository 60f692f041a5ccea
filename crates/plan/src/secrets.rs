//! What a scenario marks secret (`secrets:`) beside the headers that are secret by
//! nature ([`headroom_template::secret::SECRET_HEADERS`]), and the values a message
//! is scrubbed of before it leaves the process.

use headroom_template::secret::{credential_parts, is_secret_header_in, scrub};
use headroom_template::{RenderContext, Template};

/// A scenario's `secrets:`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Secrets {
    /// Header names marked secret, lower-case (`secrets.headers`).
    pub headers: Vec<String>,
    /// Variables whose values are secret (`secrets.values`: `data.SET.COLUMN`,
    /// `setup.NAME`, a captured variable).
    pub vars: Vec<String>,
    /// Values known at load (`env.NAME` in `secrets.values`, read when compiled).
    pub literals: Vec<String>,
}

impl Secrets {
    /// Whether a header's value is secret: one of the credential headers, or marked.
    pub fn is_header(&self, name: &str) -> bool {
        is_secret_header_in(name, &self.headers)
    }

    /// `text` with every secret value a request could have put in it masked: the
    /// request's secret headers as rendered for this user (the whole value, and the
    /// token after an auth scheme or each cookie's value), the user's secret
    /// variables, and the literals. Called where a message is kept, never per request.
    pub fn scrub(
        &self,
        text: &str,
        headers: &[(String, Template)],
        ctx: &mut RenderContext<'_>,
    ) -> String {
        let mut rendered = Vec::new();
        for (name, value) in headers {
            if self.is_header(name) {
                let mut out = Vec::new();
                value.render(ctx, &mut out);
                rendered.push(String::from_utf8_lossy(&out).into_owned());
            }
        }
        let mut values: Vec<&str> = rendered.iter().flat_map(|v| credential_parts(v)).collect();
        values.extend(self.vars.iter().filter_map(|v| ctx.vars.get(v)));
        values.extend(self.literals.iter().map(String::as_str));
        scrub(text, values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use headroom_template::{Escape, Vars};
    use rand::SeedableRng as _;

    #[test]
    fn a_message_loses_the_rendered_secret_headers_vars_and_literals_only() {
        let secrets = Secrets {
            headers: vec!["x-session".into()],
            vars: vec!["data.users.password".into()],
            literals: vec!["literal-secret".into()],
        };
        assert!(secrets.is_header("Authorization") && secrets.is_header("X-Session "));
        assert!(!secrets.is_header("x-request-id"));
        let t = |s: &str| Template::compile(s, Escape::None).unwrap();
        let headers = vec![
            ("Authorization".to_string(), t("Bearer {{ token }}")),
            ("X-Session".to_string(), t("sess-{{ user() }}-abc")),
            ("X-Request-Id".to_string(), t("req-visible")),
        ];
        let mut vars = Vars::default();
        vars.set("token", "tok-12345".into());
        vars.set("data.users.password", "hunter22".into());
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        let mut ctx = RenderContext {
            rng: &mut rng,
            vars: &vars,
            user: 7,
            iteration: 0,
        };
        let message = "refused tok-12345 for sess-7-abc (hunter22, literal-secret), req-visible";
        assert_eq!(
            secrets.scrub(message, &headers, &mut ctx),
            "refused *** for *** (***, ***), req-visible"
        );
    }
}

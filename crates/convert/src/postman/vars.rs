//! Postman variables (`{{name}}`) as template text: a captured value, a value the
//! collection or the environment gives (a default, expanded in place), a dynamic
//! variable (`{{$guid}}`) as a template function, or, defined nowhere, an environment
//! variable read when the scenario loads.

use std::collections::{BTreeMap, HashMap};

use crate::tpl::{identifier, pieces, Piece, Tpl};
use crate::Outcome;

/// How deep variable values may refer to other variables.
const MAX_NESTING: usize = 16;
/// How many bytes variable expansion may add to one text: values that refer to each
/// other (`a = {{b}}{{b}}`, `b = {{c}}{{c}}`...) grow exponentially, so growth is
/// bounded, not only depth.
pub(super) const MAX_EXPANSION: usize = 1 << 20;
/// How many placeholders one conversion may resolve, nested ones included: values that
/// refer twice to a value that is empty grow no text but double the work per level.
pub(super) const MAX_RESOLUTIONS: usize = 10_000_000;

/// Where a captured variable is read from at a given request.
#[derive(Debug, Clone)]
pub(super) enum Avail {
    /// Captured earlier in the same flow: `{{ name }}`.
    Flow(String),
    /// Captured by a `setup:` step: `{{ setup.name }}`.
    Setup(String),
}

/// The variables in force, and what was reported of them.
#[derive(Debug, Default)]
pub(super) struct Vars {
    /// Name → Postman text (the environment's values over the collection's, and
    /// constants a script set).
    pub(super) values: BTreeMap<String, String>,
    /// Name → where its captured value is read, at the request being converted.
    pub(super) captured: HashMap<String, Avail>,
    /// Names defined nowhere → the environment variable read instead.
    pub(super) undefined: BTreeMap<String, String>,
    /// Placeholders resolved so far (bounded by [`MAX_RESOLUTIONS`]).
    pub(super) work: usize,
}

/// Expansion went past [`MAX_EXPANSION`] or [`MAX_RESOLUTIONS`].
#[derive(Debug)]
pub(super) struct Overflow;

/// One construct found while translating a text, for the report.
pub(super) type Note = (String, Outcome);

impl Vars {
    /// `text` (Postman syntax) as template text; what is not translated as it is goes
    /// to `notes`.
    pub(super) fn translate(
        &mut self,
        text: &str,
        notes: &mut Vec<Note>,
    ) -> Result<String, Overflow> {
        let mut out = Tpl::new();
        let budget = text.len().saturating_add(MAX_EXPANSION);
        self.expand(text, &mut out, notes, 0, budget)?;
        Ok(out.finish())
    }

    /// Whether `text` (after expanding values) has a placeholder left: not a literal.
    pub(super) fn is_literal(&mut self, text: &str) -> bool {
        let mut notes = Vec::new();
        match self.translate(text, &mut notes) {
            Ok(t) => !t.contains("{{"),
            Err(Overflow) => false,
        }
    }

    fn expand(
        &mut self,
        text: &str,
        out: &mut Tpl,
        notes: &mut Vec<Note>,
        depth: usize,
        budget: usize,
    ) -> Result<(), Overflow> {
        for piece in pieces(text) {
            let (name, whole) = match piece {
                Piece::Lit(literal) => {
                    out.lit(literal);
                    continue;
                }
                Piece::Var { name, whole } => (name, whole),
            };
            self.work += 1;
            if out.len() > budget || self.work > MAX_RESOLUTIONS {
                return Err(Overflow);
            }
            if let Some(dynamic) = name.strip_prefix('$') {
                if let Some(note) = self::dynamic(dynamic, out) {
                    push_note(notes, whole, note);
                }
                continue;
            }
            if let Some(avail) = self.captured.get(name) {
                match avail {
                    Avail::Flow(id) => out.expr(id),
                    Avail::Setup(id) => out.expr(&format!("setup.{id}")),
                }
                continue;
            }
            if let Some(value) = self.values.get(name).cloned() {
                if depth >= MAX_NESTING {
                    let why = format!(
                        "variables refer to each other deeper than {MAX_NESTING}: sent as written"
                    );
                    push_note(notes, whole, Outcome::LeftOut(why));
                    out.lit(whole);
                } else {
                    self.expand(&value, out, notes, depth + 1, budget)?;
                }
                continue;
            }
            let env = identifier(name);
            out.expr(&format!("env.{env}"));
            if !self.undefined.contains_key(name) {
                self.undefined.insert(name.to_string(), env.clone());
                notes.push((
                    whole.to_string(),
                    Outcome::Approximated(format!(
                        "defined in neither the collection nor the environment: read from \
                         the environment variable {env} when the scenario loads (set it)"
                    )),
                ));
            }
        }
        if out.len() > budget {
            return Err(Overflow);
        }
        Ok(())
    }
}

/// The most notes one text gives (a value used thousands of times over is reported
/// once per text, not once per use).
const MAX_NOTES: usize = 100;

/// Adds a note unless the same construct was noted already or there are too many.
fn push_note(notes: &mut Vec<Note>, construct: &str, outcome: Outcome) {
    if notes.len() < MAX_NOTES && !notes.iter().any(|(c, o)| c == construct && *o == outcome) {
        notes.push((construct.to_string(), outcome));
    }
}

/// First names `{{$randomFirstName}}` and the like pick from.
const FIRST_NAMES: &str = "'Alice', 'Bob', 'Carol', 'Dave', 'Erin', 'Frank'";
/// Last names likewise.
const LAST_NAMES: &str = "'Smith', 'Jones', 'Brown', 'Garcia', 'Miller', 'Davis'";
/// Words likewise.
const WORDS: &str = "'alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot'";

/// Writes Postman's dynamic variable `$name` as template text; returns what the
/// report says of it (None: the same meaning).
fn dynamic(name: &str, out: &mut Tpl) -> Option<Outcome> {
    let approx = |note: &str| Some(Outcome::Approximated(note.to_string()));
    match name {
        "guid" | "randomUUID" => {
            out.expr("uuid()");
            None
        }
        "timestamp" => {
            out.expr("now_unix()");
            None
        }
        "isoTimestamp" => {
            out.expr("now_iso()");
            approx("now_iso(): RFC 3339 to the second, where Postman gives milliseconds")
        }
        "randomInt" => {
            out.expr("rand_int(0, 1000)");
            None
        }
        "randomBoolean" => {
            out.expr("rand_choice('true', 'false')");
            None
        }
        "randomAlphaNumeric" => {
            out.expr("rand_string(1)");
            approx("rand_string(1): one random character, from rand_string's alphabet")
        }
        "randomPassword" => {
            out.expr("rand_string(15)");
            approx("rand_string(15): random letters and digits")
        }
        "randomFirstName" => {
            out.expr(&format!("rand_choice({FIRST_NAMES})"));
            approx("one of six fixed first names")
        }
        "randomLastName" => {
            out.expr(&format!("rand_choice({LAST_NAMES})"));
            approx("one of six fixed last names")
        }
        "randomFullName" => {
            out.expr(&format!("rand_choice({FIRST_NAMES})"));
            out.lit(" ");
            out.expr(&format!("rand_choice({LAST_NAMES})"));
            approx("two of six fixed names")
        }
        "randomUserName" => {
            out.lit("user");
            out.expr("rand_int(0, 999999)");
            approx("user followed by a random number")
        }
        "randomEmail" | "randomExampleEmail" => {
            out.lit("user");
            out.expr("rand_int(0, 999999)");
            out.lit("@example.com");
            approx("userN@example.com with a random N")
        }
        "randomPhoneNumber" => {
            out.lit("555-");
            out.expr("rand_int(100, 999)");
            out.lit("-");
            out.expr("rand_int(1000, 9999)");
            approx("555-NNN-NNNN with random digits")
        }
        "randomWord" | "randomNoun" | "randomVerb" | "randomAdjective" | "randomLoremWord" => {
            out.expr(&format!("rand_choice({WORDS})"));
            approx("one of six fixed words")
        }
        "randomIP" => {
            for i in 0..4 {
                if i > 0 {
                    out.lit(".");
                }
                out.expr("rand_int(1, 254)");
            }
            approx("four random numbers from 1 to 254")
        }
        "randomPrice" => {
            out.expr("rand_float(1, 1000)");
            approx("rand_float(1, 1000): not rounded to cents")
        }
        _ => {
            out.lit(&format!("{{{{${name}}}}}"));
            Some(Outcome::LeftOut(format!(
                "no template function like Postman's ${name}: sent as the literal text"
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_captures_dynamics_and_undefined_names() {
        let mut vars = Vars::default();
        vars.values
            .insert("base".into(), "http://h:1/{{ver}}".into());
        vars.values.insert("ver".into(), "v2".into());
        vars.captured
            .insert("token".into(), Avail::Flow("token".into()));
        vars.captured
            .insert("sid".into(), Avail::Setup("sid".into()));
        let mut notes = Vec::new();
        let text = vars
            .translate(
                "{{base}}/x?t={{token}}&s={{sid}}&id={{$guid}}&k={{api-key}}&e={{$randomEmail}}",
                &mut notes,
            )
            .unwrap();
        assert_eq!(
            text,
            "http://h:1/v2/x?t={{ token }}&s={{ setup.sid }}&id={{ uuid() }}&k={{ env.api_key }}\
             &e=user{{ rand_int(0, 999999) }}@example.com"
        );
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert_eq!(notes[0].0, "{{api-key}}");
        assert!(matches!(notes[1].1, Outcome::Approximated(_)));
        assert_eq!(vars.undefined["api-key"], "api_key");
        // An unknown dynamic variable stays literal text, escaped.
        let text = vars
            .translate("{{$randomBankAccount}}", &mut notes)
            .unwrap();
        assert_eq!(text, "{{ '{' }}{$randomBankAccount}}");
    }

    #[test]
    fn exponential_values_are_refused() {
        let mut vars = Vars::default();
        for i in 0..40 {
            vars.values.insert(
                format!("v{i}"),
                format!("{{{{v{n}}}}}", n = i + 1).repeat(4),
            );
        }
        vars.values.insert("v40".into(), "x".repeat(1000));
        assert!(vars.translate("{{v0}}", &mut Vec::new()).is_err());
        // Empty at the bottom: no text grows, the work is bounded all the same.
        vars.values.insert("v40".into(), String::new());
        let refs = "{{v0}}".repeat(1000);
        assert!(vars.translate(&refs, &mut Vec::new()).is_err());
        // A cycle stops at the nesting bound, reported.
        let mut vars = Vars::default();
        vars.values.insert("a".into(), "{{b}}".into());
        vars.values.insert("b".into(), "{{a}}".into());
        let mut notes = Vec::new();
        let text = vars.translate("{{a}}", &mut notes).unwrap();
        assert!(
            text.contains("{{ '{' }}{a}}") || text.contains("{{ '{' }}{b}}"),
            "{text}"
        );
        assert!(matches!(notes[0].1, Outcome::LeftOut(_)));
    }
}

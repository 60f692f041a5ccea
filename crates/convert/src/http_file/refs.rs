//! `{{…}}` in a `.http` file as template text: file and environment variables
//! expanded in place, system variables (`{{$guid}}`, `{{$randomInt 1 100}}`...) as
//! template functions, references to named requests' responses as captures.

use std::collections::{BTreeMap, HashSet};

use crate::tpl::{identifier, pieces, Piece, Tpl};
use crate::Outcome;

/// How many bytes expansion may add to one text.
pub(super) const MAX_EXPANSION: usize = 1 << 20;
/// How deep variables may refer to each other.
const MAX_NESTING: usize = 16;
/// How many placeholders one conversion may resolve, nested ones included.
const MAX_RESOLUTIONS: usize = 10_000_000;

/// A construct for the report: offset (`usize::MAX`: the request's own), text, outcome.
pub(super) type Note = (usize, String, Outcome);

/// Expansion went past a bound.
#[derive(Debug)]
pub(super) struct Overflow;

/// The variables in force.
pub(super) struct Refs {
    file: BTreeMap<String, String>,
    env: BTreeMap<String, String>,
    /// Names a response handler set (read as captured variables).
    pub(super) captured: HashSet<String>,
    /// Requests seen so far, by name.
    pub(super) named: HashSet<String>,
    /// Names defined nowhere → the environment variable read instead.
    pub(super) undefined: BTreeMap<String, String>,
    /// Captures references asked for: request name, variable, source.
    captures: Vec<(String, String, String)>,
    /// Every capture made: (request, source) → variable.
    made: BTreeMap<(String, String), String>,
    work: usize,
}

impl Refs {
    /// The file's variables (the last definition of a name wins) and the caller's.
    pub(super) fn new(file: &[(usize, String, String)], env: &BTreeMap<String, String>) -> Refs {
        Refs {
            file: file
                .iter()
                .map(|(_, k, v)| (k.clone(), v.clone()))
                .collect(),
            env: env.clone(),
            captured: HashSet::new(),
            named: HashSet::new(),
            undefined: BTreeMap::new(),
            captures: Vec::new(),
            made: BTreeMap::new(),
            work: 0,
        }
    }

    /// The captures references asked for since the last call.
    pub(super) fn take_captures(&mut self) -> Vec<(String, String, String)> {
        std::mem::take(&mut self.captures)
    }

    /// Nothing left to report at the end (undefined names are reported where met).
    pub(super) fn unresolved(&self) -> Vec<(Option<usize>, String, Outcome)> {
        Vec::new()
    }

    /// `text` as template text.
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

    fn expand(
        &mut self,
        text: &str,
        out: &mut Tpl,
        notes: &mut Vec<Note>,
        depth: usize,
        budget: usize,
    ) -> Result<(), Overflow> {
        for piece in pieces(text) {
            let (inner, whole) = match piece {
                Piece::Lit(literal) => {
                    out.lit(literal);
                    continue;
                }
                Piece::Var { name, whole } => (name, whole.to_string()),
            };
            self.work += 1;
            if out.len() > budget || self.work > MAX_RESOLUTIONS {
                return Err(Overflow);
            }
            if let Some(system) = inner.strip_prefix('$') {
                if let Some(outcome) = self.system(system, out) {
                    notes.push((usize::MAX, whole, outcome));
                }
                continue;
            }
            if let Some((request, rest)) = inner.split_once(".response.") {
                self.reference(request, rest, &whole, out, notes);
                continue;
            }
            if self.captured.contains(inner) {
                out.expr(&identifier(inner));
                continue;
            }
            if let Some(value) = self.file.get(inner).cloned() {
                if depth >= MAX_NESTING {
                    out.lit(&whole);
                    notes.push((
                        usize::MAX,
                        whole,
                        Outcome::LeftOut(format!(
                            "variables nested deeper than {MAX_NESTING}: sent as written"
                        )),
                    ));
                } else {
                    self.expand(&value, out, notes, depth + 1, budget)?;
                }
                continue;
            }
            if let Some(value) = self.env.get(inner) {
                out.lit(value);
                continue;
            }
            let env = identifier(inner);
            out.expr(&format!("env.{env}"));
            if self
                .undefined
                .insert(inner.to_string(), env.clone())
                .is_none()
            {
                notes.push((
                    usize::MAX,
                    whole,
                    Outcome::Approximated(format!(
                        "defined neither in the file nor in the environment given: read from the \
                     environment variable {env} when the scenario loads (set it)"
                    )),
                ));
            }
        }
        if out.len() > budget {
            return Err(Overflow);
        }
        Ok(())
    }

    /// `{{login.response.body.$.token}}` / `{{login.response.headers.X-Token}}`.
    fn reference(
        &mut self,
        request: &str,
        rest: &str,
        whole: &str,
        out: &mut Tpl,
        notes: &mut Vec<Note>,
    ) {
        let source = if let Some(path) = rest.strip_prefix("body.") {
            path.starts_with('$').then(|| path.to_string())
        } else {
            rest.strip_prefix("headers.").map(|h| format!("header:{h}"))
        };
        let Some(source) = source.filter(|_| self.named.contains(request)) else {
            out.lit(whole);
            let why = if self.named.contains(request) {
                "only body JSONPath ($...) and header references are translated: sent as written"
            } else {
                "no request of that name before this one: sent as written"
            };
            notes.push((usize::MAX, whole.to_string(), Outcome::LeftOut(why.into())));
            return;
        };
        let key = (request.to_string(), source.clone());
        let var = match self.made.get(&key) {
            Some(v) => v.clone(),
            None => {
                let last = source.rsplit(['.', ':', '[']).next().unwrap_or("value");
                let mut var = identifier(&format!("{request}_{last}"));
                while self.made.values().any(|v| *v == var) {
                    var.push('_');
                }
                self.made.insert(key, var.clone());
                self.captures
                    .push((request.to_string(), var.clone(), source));
                var
            }
        };
        out.expr(&var);
    }

    /// A system variable; returns what the report says (None: the same meaning).
    fn system(&mut self, text: &str, out: &mut Tpl) -> Option<Outcome> {
        let mut words = text.split_whitespace();
        let name = words.next().unwrap_or_default();
        let args: Vec<&str> = words.collect();
        match (name, args.as_slice()) {
            ("guid" | "uuid" | "random.uuid", []) => out.expr("uuid()"),
            ("randomInt", []) => out.expr("rand_int(0, 1000)"),
            ("randomInt", [lo, hi]) => match (lo.parse::<i64>(), hi.parse::<i64>()) {
                // VS Code's upper bound is exclusive; rand_int's inclusive.
                (Ok(lo), Ok(hi)) if lo < hi => out.expr(&format!("rand_int({lo}, {})", hi - 1)),
                _ => return self.leave(text, out),
            },
            ("timestamp", []) => out.expr("now_unix()"),
            ("timestamp", _) => {
                out.expr("now_unix()");
                return Some(Outcome::Approximated(
                    "the offset is dropped: the current time".into(),
                ));
            }
            ("isoTimestamp", []) | ("datetime", ["iso8601"]) => out.expr("now_iso()"),
            ("datetime", ["rfc1123"]) => out.expr("now_format('%a, %d %b %Y %H:%M:%S GMT')"),
            ("localDatetime", ["iso8601"]) => {
                out.expr("now_iso()");
                return Some(Outcome::Approximated("UTC, not the local time".into()));
            }
            ("processEnv", [var]) if !var.starts_with('%') => {
                out.expr(&format!("env.{}", identifier(var)))
            }
            ("dotenv", [var]) => {
                out.expr(&format!("env.{}", identifier(var)));
                return Some(Outcome::Approximated(format!(
                    "read from the process environment ({}), not from the .env file",
                    identifier(var)
                )));
            }
            _ => return self.leave(text, out),
        }
        None
    }

    fn leave(&mut self, text: &str, out: &mut Tpl) -> Option<Outcome> {
        out.lit(&format!("{{{{${text}}}}}"));
        Some(Outcome::LeftOut(
            "a system variable with no template function: sent as written".into(),
        ))
    }
}

//! What a translated script yields, shared by the script translation (`script`, with
//! its matchers and captures) and the scenario writer: the event a script runs at,
//! the checks its assertions became, the variables it sets, and every statement met
//! with what became of it. A leaf: it imports no other module of the converter.

use crate::{Outcome, Yaml};

/// Which event a script runs at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Listen {
    /// `listen: test`, after the response.
    Test,
    /// `listen: prerequest`, before the request.
    PreRequest,
}

/// The checks a script's assertions became (one of each matcher, as `check:` has).
#[derive(Debug, Default, Clone)]
pub(super) struct Checks {
    /// `status:`.
    pub(super) status: Option<Yaml>,
    /// `body_contains:`.
    pub(super) body_contains: Option<String>,
    /// `json:` entries, JSONPath → value.
    pub(super) json: Vec<(String, Yaml)>,
    /// `json_path:` (a path that must match).
    pub(super) json_path: Option<String>,
    /// `duration:` (`<500ms`).
    pub(super) duration: Option<String>,
}

impl Checks {
    /// Whether no check was made.
    pub(super) fn is_empty(&self) -> bool {
        self.status.is_none()
            && self.body_contains.is_none()
            && self.json.is_empty()
            && self.json_path.is_none()
            && self.duration.is_none()
    }

    /// Adds the checks of `other` that do not conflict with these.
    pub(super) fn merge(&mut self, other: &Checks) {
        if self.status.is_none() {
            self.status.clone_from(&other.status);
        }
        if self.body_contains.is_none() {
            self.body_contains.clone_from(&other.body_contains);
        }
        if self.json_path.is_none() {
            self.json_path.clone_from(&other.json_path);
        }
        if self.duration.is_none() {
            self.duration.clone_from(&other.duration);
        }
        for (path, value) in &other.json {
            if !self.json.iter().any(|(p, _)| p == path) {
                self.json.push((path.clone(), value.clone()));
            }
        }
    }

    /// The `check:` mapping.
    pub(super) fn to_yaml(&self) -> Yaml {
        let mut map = Yaml::map();
        if let Some(status) = &self.status {
            map.set("status", status.clone());
        }
        if let Some(text) = &self.body_contains {
            map.set("body_contains", text.as_str());
        }
        if let Some(path) = &self.json_path {
            map.set("json_path", path.as_str());
        }
        if !self.json.is_empty() {
            map.set("json", Yaml::Map(self.json.clone()));
        }
        if let Some(d) = &self.duration {
            map.set("duration", d.as_str());
        }
        map
    }
}

/// What a script does that the scenario keeps.
#[derive(Debug, Default, Clone)]
pub(super) struct Effects {
    /// Its assertions.
    pub(super) checks: Checks,
    /// Variables set from the response: Postman name → capture source (`$.token`,
    /// `header:X`, `status`, `cookie:X`).
    pub(super) captures: Vec<(String, String)>,
    /// Variables set to constants: name → value.
    pub(super) constants: Vec<(String, String)>,
}

/// One statement met: where in the script (0-based line of the joined `exec`, byte
/// column in that line), as the script spells it, and what became of it.
#[derive(Debug, Clone)]
pub(super) struct Met {
    /// 0-based line in the script.
    pub(super) line: usize,
    /// Byte column in that line.
    pub(super) column: usize,
    /// The statement, shortened.
    pub(super) construct: String,
    /// What became of it.
    pub(super) outcome: Outcome,
}

/// Why a statement that is not translated is left out.
pub(super) fn not_run() -> String {
    "headroom does not run scripts: only status, body, JSON and time assertions and \
     variables set from the response are translated"
        .into()
}

//! Run references as users write them: `42` (an id), `latest`, `latest~N` (N runs
//! before the latest) and `label:key=value` (the most recent run with that label).

use std::str::FromStr;

use super::{Store, StoreError};

/// A way to name a stored run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunRef {
    /// A run id.
    Id(i64),
    /// The run `n` before the most recent one (`latest` is `Latest(0)`).
    Latest(u64),
    /// The most recent run carrying this label.
    Label(String, String),
}

impl FromStr for RunRef {
    type Err = StoreError;

    fn from_str(text: &str) -> Result<RunRef, StoreError> {
        let bad = || StoreError::BadReference {
            text: text.to_string(),
        };
        let t = text.trim();
        if let Some(rest) = t.strip_prefix("label:") {
            let (key, value) = rest.split_once('=').ok_or_else(bad)?;
            if key.is_empty() {
                return Err(bad());
            }
            return Ok(RunRef::Label(key.to_string(), value.to_string()));
        }
        if t == "latest" {
            return Ok(RunRef::Latest(0));
        }
        if let Some(n) = t.strip_prefix("latest~") {
            return n.parse().map(RunRef::Latest).map_err(|_| bad());
        }
        t.parse().map(RunRef::Id).map_err(|_| bad())
    }
}

impl Store {
    /// The id `reference` names; [`StoreError::NotFound`] when no run matches.
    pub fn resolve(&self, reference: &RunRef) -> Result<i64, StoreError> {
        let conn = self.conn();
        let found = match reference {
            RunRef::Id(id) => conn.query_row("SELECT id FROM runs WHERE id = ?", [id], |r| r.get(0)),
            RunRef::Latest(n) => conn.query_row(
                "SELECT id FROM runs ORDER BY id DESC LIMIT 1 OFFSET ?",
                [*n as i64],
                |r| r.get(0),
            ),
            RunRef::Label(key, value) => conn.query_row(
                "SELECT run_id FROM labels WHERE key = ? AND value = ? ORDER BY run_id DESC LIMIT 1",
                [key, value],
                |r| r.get(0),
            ),
        };
        match found {
            Ok(id) => Ok(id),
            Err(rusqlite::Error::QueryReturnedNoRows) => Err(StoreError::NotFound {
                reference: describe(reference),
            }),
            Err(e) => Err(e.into()),
        }
    }
}

fn describe(reference: &RunRef) -> String {
    match reference {
        RunRef::Id(id) => id.to_string(),
        RunRef::Latest(0) => "latest".to_string(),
        RunRef::Latest(n) => format!("latest~{n}"),
        RunRef::Label(k, v) => format!("label:{k}={v}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RunKind, RunMeta};

    #[test]
    fn references_parse() {
        assert_eq!("42".parse::<RunRef>().unwrap(), RunRef::Id(42));
        assert_eq!("latest".parse::<RunRef>().unwrap(), RunRef::Latest(0));
        assert_eq!("latest~3".parse::<RunRef>().unwrap(), RunRef::Latest(3));
        assert_eq!(
            "label:change=ETS cache".parse::<RunRef>().unwrap(),
            RunRef::Label("change".into(), "ETS cache".into())
        );
        for bad in [
            "",
            "latest~",
            "latest~x",
            "label:novalue",
            "label:=x",
            "run7",
        ] {
            assert!(bad.parse::<RunRef>().is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn references_resolve_against_a_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("h.db")).unwrap();
        let meta = |round: &str| RunMeta {
            kind: RunKind::Run,
            args: vec!["headroom".into(), "run".into()],
            scenario_name: "s".into(),
            scenario_hash: None,
            git_commit: None,
            labels: vec![("round".into(), round.into())],
            note: None,
            secret_headers: Vec::new(),
        };
        let a = store.begin_run(&meta("1")).unwrap().id();
        let b = store.begin_run(&meta("2")).unwrap().id();
        let c = store.begin_run(&meta("1")).unwrap().id();
        assert_eq!(store.resolve(&RunRef::Latest(0)).unwrap(), c);
        assert_eq!(store.resolve(&RunRef::Latest(2)).unwrap(), a);
        assert_eq!(store.resolve(&RunRef::Id(b)).unwrap(), b);
        let round1 = RunRef::Label("round".into(), "1".into());
        assert_eq!(store.resolve(&round1).unwrap(), c);
        assert!(matches!(
            store.resolve(&RunRef::Latest(3)),
            Err(StoreError::NotFound { .. })
        ));
    }
}

//! Issue 12: `headroom schema` validates every scenario in the repository (the
//! examples and the README's scenarios) with a maintained JSON Schema validator, and
//! rejects broken ones as the parser does.

use std::path::Path;
use std::time::Duration;

use crate::support::{assert_exit, run_headroom, stdout};

fn schema() -> jsonschema::Validator {
    let out = run_headroom(["schema"], Duration::from_secs(30));
    assert_exit(&out, 0);
    let schema: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    jsonschema::validator_for(&schema).expect("a valid JSON Schema")
}

fn yaml(text: &str) -> serde_json::Value {
    serde_saphyr::from_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Every scenario of the repository: `examples/*.yaml`, the guide's `docs/examples`,
/// the tests' own, and each ```yaml block of README.md that is a whole scenario (it
/// names a `target`).
fn repository_scenarios() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for dir in ["examples", "docs/examples", "tests", "tests/fixtures"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml")
            ) {
                found.push((
                    path.display().to_string(),
                    std::fs::read_to_string(&path).unwrap(),
                ));
            }
        }
    }
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    for (i, block) in readme.split("```yaml\n").skip(1).enumerate() {
        let block = block.split("```").next().unwrap();
        if block.lines().any(|l| l.starts_with("target:")) {
            found.push((format!("README.md yaml block {}", i + 1), block.to_string()));
        }
    }
    found
}

#[test]
fn the_schema_accepts_every_scenario_in_the_repository() {
    let validator = schema();
    let scenarios = repository_scenarios();
    // The guide's examples alone are more than twenty.
    assert!(scenarios.len() >= 20, "{scenarios:?}");
    for (name, text) in scenarios {
        let instance = yaml(&text);
        let errors: Vec<String> = validator
            .iter_errors(&instance)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:#?}");
    }
}

#[test]
fn the_schema_rejects_what_the_parser_rejects() {
    let validator = schema();
    let good = "target: http://127.0.0.1:8080\nload: {rate: 10, duration: 5s}\nrequests: [{path: /, expect: {status: [200, 2xx]}}]\n";
    assert!(validator.is_valid(&yaml(good)));
    assert!(headroom::scenario::load_text("good", good, &Default::default()).is_ok());
    let counted = "target: http://127.0.0.1:8080\nworkloads:\n  - {name: a, load: {users: 2, iterations: {per_user: 3}}, start: 1s, requests: [{path: /}]}\n";
    assert!(validator.is_valid(&yaml(counted)));
    assert!(headroom::scenario::load_text("counted", counted, &Default::default()).is_ok());
    for broken in [
        // A typo in a key.
        "target: http://127.0.0.1:8080\nrequets: [{path: /}]\n",
        // A rate that is not a number.
        "target: http://127.0.0.1:8080\nload: {rate: fast, duration: 5s}\nrequests: [{path: /}]\n",
        // A status outside 100-599.
        "target: http://127.0.0.1:8080\nrequests: [{path: /, expect: {status: 700}}]\n",
        // An unknown connection model.
        "target: http://127.0.0.1:8080\nclient: {connection: pooled}\nrequests: [{path: /}]\n",
        // Iterations counted both ways, or zero of them.
        "target: http://127.0.0.1:8080\nload: {users: 2, iterations: {per_user: 2, shared: 3}}\nrequests: [{path: /}]\n",
        "target: http://127.0.0.1:8080\nload: {users: 2, iterations: {shared: 0}}\nrequests: [{path: /}]\n",
        // A workload with a key it does not take.
        "target: http://127.0.0.1:8080\nworkloads: [{name: a, load: {rate: 1, duration: 1s}, requests: [{path: /}], weight: 2}]\n",
    ] {
        assert!(
            !validator.is_valid(&yaml(broken)),
            "schema accepted:\n{broken}"
        );
        assert!(
            headroom::scenario::load_text("broken", broken, &Default::default()).is_err(),
            "parser accepted:\n{broken}"
        );
    }
}

//! Validation errors in templates, variables and flow steps.

use super::tests_errors::{assert_error, HEAD};

#[test]
fn templates_env_and_variables() {
    assert_error(
        &format!("{HEAD}requests:\n  - path: \"/a/{{{{ rand_num(1, 2) }}}}\"\n"),
        "4:11",
        &["requests[0].path: `{{ rand_num(1, 2) }}`: unknown function `rand_num`"],
    );
    assert_error(
        &format!("{HEAD}defaults:\n  headers: {{authorization: \"Bearer {{{{ env.HEADROOM_NOT_SET_ANYWHERE }}}}\"}}\nrequests: [{{path: /}}]\n"),
        "4:28",
        &["defaults.headers.authorization:", "environment variable HEADROOM_NOT_SET_ANYWHERE is not set"],
    );
    assert_error(
        &format!("{HEAD}requests:\n  - path: \"/tasks/{{{{ id }}}}\"\n"),
        "4:11",
        &["requests[0].path: `{{ id }}` uses the variable `id`, but only flow steps after a `capture` have variables"],
    );
    assert_error(
        &format!("{HEAD}requests:\n  - {{path: /, json: {{a: \"{{{{ rand_int(2) }}}}\"}}}}\n"),
        "4:21",
        &["requests[0].json: `{{ rand_int(2) }}`: rand_int expects 2 integer arguments"],
    );
    let flow = "flows:\n  - name: f\n    steps:\n      - request: {path: \"/a/{{ id }}\"}\n        capture: {id: \"$.id\"}\n";
    assert_error(
        &format!("{HEAD}{flow}"),
        "6:25",
        &["flows[0].steps[0].request.path: `{{ id }}` uses the variable `id`, which no earlier step captures (captured so far: none)"],
    );
    let flow = "flows:\n  - name: f\n    steps:\n      - request: {path: /a}\n        capture: {id: \"$.id\"}\n      - request: {path: /b, headers: {x: \"{{ ide }}\"}}\n";
    assert_error(
        &format!("{HEAD}{flow}"),
        "8:42",
        &[
            "flows[0].steps[1].request.headers.x:",
            "captured so far: id",
        ],
    );
}

#[test]
fn flow_steps() {
    let flows = |steps: &str| format!("{HEAD}flows:\n  - name: f\n    steps:\n{steps}");
    assert_error(
        &flows("      - {name: x}\n"),
        "6:9",
        &["flows[0].steps[0]: expected a `request`, `think`, `ws`, `sse`, `grpc`, `group` or `parallel` step"],
    );
    assert_error(
        &flows("      - {request: {path: /}, think: 1s}\n"),
        "6:37",
        &[
            "flows[0].steps[0].think: a step is one of",
            "`request` and `think` were both given",
        ],
    );
    assert_error(
        &flows("      - {think: 1s}\n"),
        "4:5",
        &["flows[0].steps: expected at least one `request` or stream step"],
    );
    assert_error(
        &flows("      - {request: {path: /, weight: 2}}\n"),
        "6:37",
        &["flows[0].steps[0].request.weight: not allowed in a flow step"],
    );
    assert_error(
        &flows("      - {request: {path: /}, capture: {env: \"$.x\"}}\n"),
        "6:45",
        &["flows[0].steps[0].capture.env: expected a variable name"],
    );
    assert_error(
        &flows("      - {request: {path: /}, capture: {id: \"id\"}}\n"),
        "6:44",
        &["flows[0].steps[0].capture.id: expected a source such as $.id, header:NAME"],
    );
}

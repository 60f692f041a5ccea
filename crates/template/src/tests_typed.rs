//! Typed JSON values: a JSON string that is exactly one placeholder keeps the
//! expression's type.

use rand::rngs::SmallRng;
use rand::SeedableRng;
use serde_json::{json, Value};

use super::*;

fn body(value: Value, vars: &Vars) -> Value {
    let t = Template::compile(&json_source(&value), Escape::Json).unwrap();
    let mut out = Vec::new();
    let mut rng = SmallRng::seed_from_u64(3);
    t.render(
        &mut RenderContext {
            rng: &mut rng,
            vars,
            user: 1,
            iteration: 0,
        },
        &mut out,
    );
    serde_json::from_slice(&out)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out)))
}

#[test]
fn a_lone_placeholder_keeps_its_type() {
    let v = body(
        json!({
            "offset": "{{ rand_int(5, 5) }}",
            "n": "{{seq()}}",
            "at": "{{ now_unix() }}",
            "id": "{{ uuid() }}",
            "when": "{{ now_iso() }}",
            "pick": "{{ rand_choice(\"a\\\"b\") }}",
            "list": ["{{ rand_int(-3, -3) }}", 1, null, true],
        }),
        &Vars::default(),
    );
    assert_eq!(v["offset"], json!(5));
    assert!(v["n"].is_u64() && v["at"].is_u64(), "{v}");
    assert_eq!(v["id"].as_str().unwrap().len(), 36);
    assert!(v["when"].as_str().unwrap().ends_with('Z'));
    assert_eq!(v["pick"], json!("a\"b"));
    assert_eq!(v["list"], json!([-3, 1, null, true]));
}

#[test]
fn text_around_a_placeholder_keeps_a_string() {
    let v = body(
        json!({"a": "id-{{ rand_int(7, 7) }}", "b": " {{ rand_int(7, 7) }}", "c": "{{ rand_int(1, 1) }}{{ rand_int(2, 2) }}"}),
        &Vars::default(),
    );
    assert_eq!(v, json!({"a": "id-7", "b": " 7", "c": "12"}));
}

#[test]
fn captured_values_keep_the_json_type_they_were_captured_with() {
    let mut vars = Vars::default();
    vars.set_json("num", "42".into());
    vars.set_json("obj", r#"{"k":[1,"x"]}"#.into());
    vars.set_json("flag", "false".into());
    vars.set("text", "say \"hi\"\n".into());
    let v = body(
        json!({"num": "{{ num }}", "obj": "{{ obj }}", "flag": "{{flag}}",
               "text": "{{ text }}", "inside": "n={{ num }} {{ obj }}"}),
        &vars,
    );
    assert_eq!(
        v,
        json!({"num": 42, "obj": {"k": [1, "x"]}, "flag": false,
               "text": "say \"hi\"\n", "inside": "n=42 {\"k\":[1,\"x\"]}"})
    );
}

#[test]
fn env_values_are_strings_and_keys_stay_text() {
    std::env::set_var("HEADROOM_TYPED_TEST", "8\"0");
    let v = body(
        json!({"{{ env.HEADROOM_TYPED_TEST }}": "{{ env.HEADROOM_TYPED_TEST }}"}),
        &Vars::default(),
    );
    assert_eq!(v, json!({"8\"0": "8\"0"}));
}

#[test]
fn the_typed_marker_is_text_outside_json_and_in_user_strings() {
    // A user's own control character is escaped by serde_json (`\u0001`), never a
    // marker: the placeholder is then an unknown expression.
    let src = json_source(&json!({"a": "{{\u{1}rand_int(1, 1)}}x"}));
    assert!(src.contains("\\u0001"), "{src}");
    assert!(Template::compile(&src, Escape::Json).is_err());
    // Outside JSON bodies the marker is not special: the expression is unknown.
    assert!(Template::compile("{{\u{1}rand_int(1, 1)}}", Escape::None).is_err());
    // The typed variable is still reported as used (flows check captures before use).
    let t = Template::compile(&json_source(&json!({"a": "{{ id }}"})), Escape::Json).unwrap();
    assert_eq!(t.variables(), vec!["id"]);
}

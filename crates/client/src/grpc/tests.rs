//! Load-time errors of the gRPC layer: bad proto files, unknown services and methods,
//! messages that do not fit their type, and responses that do not decode.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::proto::{ProtoError, Schema};

/// The repository's test fixtures (the integration tests' `.proto` files), two levels
/// above this crate.
fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

fn route_guide() -> Schema {
    Schema::compile(&fixtures(), &["route_guide.proto".into()]).unwrap()
}

#[test]
fn a_bad_proto_file_is_named_with_line_and_reason() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.proto"),
        "syntax = \"proto3\";\nmessage A {\n  int32 x = ;\n}\n",
    )
    .unwrap();
    let err = Schema::compile(dir.path(), &["bad.proto".into()]).unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, ProtoError::Compile { ref file, .. } if file == "bad.proto"),
        "{text}"
    );
    assert!(text.starts_with("bad.proto: bad.proto:3:13: "), "{text}");
    let missing = Schema::compile(dir.path(), &["nope.proto".into()]).unwrap_err();
    assert!(missing.to_string().contains("nope.proto"), "{missing}");
    std::fs::write(
        dir.path().join("imports.proto"),
        "syntax = \"proto3\";\nimport \"gone.proto\";\n",
    )
    .unwrap();
    let import = Schema::compile(dir.path(), &["imports.proto".into()]).unwrap_err();
    assert!(import.to_string().contains("gone.proto"), "{import}");
}

#[test]
fn unknown_services_methods_and_bad_call_syntax_are_refused() {
    let schema = route_guide();
    for (call, want) in [
        (
            "routeguide.Nope/GetFeature",
            "no service \"routeguide.Nope\"",
        ),
        (
            "routeguide.RouteGuide/Nope",
            "has no method \"Nope\" (it has: GetFeature, ListFeatures",
        ),
        ("routeguide.RouteGuide", "expected package.Service/Method"),
        ("/GetFeature", "expected package.Service/Method"),
        ("a/b/c", "expected package.Service/Method"),
        ("routeguide.RouteGuide/RecordRoute", "client-streaming"),
        ("routeguide.RouteGuide/RouteChat", "client-streaming"),
    ] {
        let err = schema.method(call).unwrap_err().to_string();
        assert!(err.contains(want), "{call}: {err}");
    }
    let m = schema.method("routeguide.RouteGuide/GetFeature").unwrap();
    assert_eq!(m.path, "/routeguide.RouteGuide/GetFeature");
    assert_eq!(m.input_name(), "routeguide.Point");
}

#[test]
fn messages_that_do_not_fit_their_type_are_refused() {
    let m = route_guide()
        .method("routeguide.RouteGuide/ListFeatures")
        .unwrap();
    for bad in [
        json!({"lo": {"latitude": "north"}}),
        json!({"nope": 1}),
        json!({"lo": 5}),
        json!([1, 2]),
        json!({"lo": {"latitude": 1e20}}),
    ] {
        let err = m.encode(&bad).unwrap_err().to_string();
        assert!(
            err.starts_with("message does not fit routeguide.Rectangle"),
            "{bad}: {err}"
        );
    }
    let bytes = m
        .encode(&json!({"lo": {"latitude": 1}, "hi": {"longitude": -2}}))
        .unwrap();
    assert!(!bytes.is_empty());
}

#[test]
fn hostile_response_bytes_fail_to_decode_without_panicking() {
    let m = route_guide()
        .method("routeguide.RouteGuide/GetFeature")
        .unwrap();
    for bad in [
        &[0xff, 0xff, 0xff][..],
        &[0x0a, 0x7f, 0x01], // name: length past the end
        &[
            0x12, 0x0a, 0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
        ], // bad varint
        &[0x0a, 0x02, 0xff, 0xfe], // name: invalid UTF-8
    ] {
        let err = m.decode(bad).unwrap_err().to_string();
        assert!(
            err.starts_with("response is not a valid routeguide.Feature"),
            "{err}"
        );
    }
    assert_eq!(m.decode(&[]).unwrap()["name"], "");
}

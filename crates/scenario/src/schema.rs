//! The JSON Schema of scenario files (`headroom schema`), derived with schemars from
//! the very types [`super::format`] deserializes a file into: unknown keys are refused
//! there (`additionalProperties: false`) as the parser refuses them. Values the parser
//! keeps raw and checks later (durations, rates, status lists...) get the schemas of
//! this module, which state the shapes those checks accept.

use schemars::{json_schema, Schema, SchemaGenerator};

use super::format::ScenarioFile;

/// The scenario format's schema (draft 2020-12) as JSON.
pub fn scenario_schema() -> serde_json::Value {
    let mut schema = schemars::schema_for!(ScenarioFile);
    schema.insert("title".into(), "headroom scenario".into());
    schema.insert(
        "description".into(),
        "A headroom scenario file: target, load, requests or flows, thresholds.".into(),
    );
    schema.to_value()
}

/// A duration with a unit: `500us`, `100ms`, `1.5s`, `2m`, `1m30s`.
pub(crate) fn duration(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "description": "a duration with a unit: 500us, 100ms, 1.5s, 2m, 1m30s"
    })
}

/// A think time: a duration or a range `low..high` of durations.
pub(crate) fn think(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "description": "a duration (1s) or a uniform range of them (500ms..2s)"
    })
}

/// A number ≥ 0 (rates, stage targets).
pub(crate) fn number(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "number", "minimum": 0 })
}

/// An integer ≥ 0 (counts, limits, weights; the parser says which must be positive).
pub(crate) fn integer(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "integer", "minimum": 0 })
}

/// `per-user`, `shared`, `per-request`, or `{shared: N}`.
pub(crate) fn connection(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "oneOf": [
            { "enum": ["per-user", "shared", "per-request"] },
            {
                "type": "object",
                "properties": { "shared": { "type": "integer", "minimum": 1 } },
                "required": ["shared"],
                "additionalProperties": false
            }
        ]
    })
}

/// `{per_user: K}` or `{shared: K}`, K ≥ 1.
pub(crate) fn iterations(_: &mut SchemaGenerator) -> Schema {
    let one = |key: &str| {
        serde_json::json!({
            "type": "object",
            "properties": { key: { "type": "integer", "minimum": 1 } },
            "required": [key],
            "additionalProperties": false
        })
    };
    json_schema!({ "oneOf": [one("per_user"), one("shared")] })
}

/// Accepted statuses: a code, a class such as `2xx`, or a list of them.
pub(crate) fn status(_: &mut SchemaGenerator) -> Schema {
    let one = serde_json::json!({
        "oneOf": [
            { "type": "integer", "minimum": 100, "maximum": 599 },
            { "type": "string", "pattern": "^([1-5][0-9][0-9]|[1-5][xX][xX])$" }
        ]
    });
    json_schema!({
        "oneOf": [one.clone(), { "type": "array", "items": one, "minItems": 1 }]
    })
}

/// The delivery sink: `listen`, `latency`, `status`, `fail`, `id`, `grace`, `settle`,
/// `max_ids`, `max_body` (checked when compiled).
pub(crate) fn sink(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "description": "the delivery sink (webhooks received on loopback)",
        "propertyNames": {
            "enum": ["listen", "latency", "status", "fail", "id", "grace", "settle", "max_ids", "max_body"]
        }
    })
}

/// A stream message: text, or `{text: ...}` / `{json: ...}`.
pub(crate) fn message(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "oneOf": [
            { "type": "string" },
            {
                "type": "object",
                "properties": { "text": { "type": "string" }, "json": true },
                "minProperties": 1,
                "maxProperties": 1,
                "additionalProperties": false
            }
        ]
    })
}

/// A close: a WebSocket close code, or `true` for the protocol's normal close.
pub(crate) fn close(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": ["integer", "boolean"] })
}

/// One `.proto` file, a list of them, or `{files, import_paths}`.
pub(crate) fn proto(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "oneOf": [
            { "type": "string" },
            { "type": "array", "items": { "type": "string" } },
            {
                "type": "object",
                "properties": {
                    "files": {
                        "oneOf": [
                            { "type": "string" },
                            { "type": "array", "items": { "type": "string" } }
                        ]
                    },
                    "import_paths": { "type": "array", "items": { "type": "string" } }
                },
                "required": ["files"],
                "additionalProperties": false
            }
        ]
    })
}

/// Any JSON value (a body, a gRPC message, GraphQL variables).
pub(crate) fn any(_: &mut SchemaGenerator) -> Schema {
    json_schema!(true)
}

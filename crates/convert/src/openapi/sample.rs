//! Values for parameters and bodies: the document's own (`example`, `examples`,
//! `default`, `enum`, `const`) when it gives one, else generated from the schema
//! (`type`, `format`, bounds, `allOf` merged, the first of `oneOf`/`anyOf`).
//!
//! Generation is bounded: a recursive schema stops where it would enter a `$ref` it is
//! already inside (an optional property is omitted, an array is `[]`, a `oneOf` takes
//! its next alternative; a required one with no other way out is a [`Problem`]),
//! nesting stops at [`MAX_DEPTH`], optional properties stop being added once the value
//! holds half of [`MAX_BODY`] (so what is required still fits; a value the schema
//! requires beyond [`MAX_BODY`] is a problem), and generation stops at [`MAX_STEPS`]
//! schema nodes visited, whatever the `$ref`s multiply, and at [`MAX_WORK`] for the
//! whole document.

use super::formats::{count, integer, kind, number, string};
use super::node::{Node, Value};
use super::refs::{Doc, Problem, MAX_WORK};
pub(crate) use super::val::{Val, MAX_GENERATED_LEN};
use crate::MAX_DEPTH;

/// The largest generated (or example) body or parameter value, bytes of JSON.
pub(crate) const MAX_BODY: usize = 64 << 10;
/// The most schema nodes one value's generation visits.
pub(crate) const MAX_STEPS: usize = 100_000;
/// The most optional properties an object gets: enough for a realistic body, few
/// enough that a schema of hundreds of optional fields stays readable.
const MAX_OPTIONAL: usize = 32;
/// Where a value came from, for the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// The document's own example, default, enum or const.
    Given,
    /// Generated from the schema.
    Generated,
}

/// Why generation stopped short.
#[derive(Debug)]
enum Stop {
    /// A `$ref` already being generated was entered again.
    Recursion(String),
    /// Anything else: a bad `$ref`, too large, too deep.
    Problem(Problem),
}

impl From<Problem> for Stop {
    fn from(p: Problem) -> Stop {
        Stop::Problem(p)
    }
}

/// Generates values from schemas of one document.
pub(crate) struct Gen<'d, 'a> {
    doc: &'d Doc<'a>,
    /// `$ref`s being generated, outermost first.
    stack: Vec<&'a str>,
    /// Bytes of JSON produced so far (an estimate that only grows).
    size: usize,
    steps: usize,
    /// Whether optional properties were left out to stay under [`MAX_BODY`].
    pub(crate) trimmed: bool,
    /// Remote `$ref`s met in optional places, left out.
    pub(crate) remote: Vec<Problem>,
}

impl<'d, 'a> Gen<'d, 'a> {
    /// A generator for one value.
    pub(crate) fn new(doc: &'d Doc<'a>) -> Gen<'d, 'a> {
        Gen {
            doc,
            stack: Vec::new(),
            size: 0,
            steps: 0,
            trimmed: false,
            remote: Vec::new(),
        }
    }

    /// The value of a parameter, media type or schema holder: `example`, the first of
    /// `examples` (a map of Example objects, or a 3.1 schema's list), else the schema's
    /// own value. `holder` has `example`/`examples` and, in `schema`, the schema.
    pub(crate) fn value_of(
        &mut self,
        holder: &'a Node,
        schema: Option<&'a Node>,
    ) -> Result<(Val, Origin), Problem> {
        if let Some(v) = self.example(holder)? {
            return Ok((v, Origin::Given));
        }
        match schema {
            Some(schema) => self.schema_value(schema),
            None => Ok((Val::Str("string".into()), Origin::Generated)),
        }
    }

    /// A schema's value: its example, default, enum or const, else generated.
    pub(crate) fn schema_value(&mut self, schema: &'a Node) -> Result<(Val, Origin), Problem> {
        let at = schema.at;
        let resolved = self.doc.resolve(schema)?;
        if let Some(v) = self.given(resolved.node)? {
            return Ok((v, Origin::Given));
        }
        match self.generate(schema, 0) {
            Ok(v) => Ok((v, Origin::Generated)),
            Err(Stop::Problem(p)) => Err(p),
            Err(Stop::Recursion(name)) => Err(Problem::new(
                at,
                format!("the schema `{name}` requires itself, with no way to stop (no base case)"),
            )),
        }
    }

    /// `example` or the first of `examples` of a parameter or media type.
    fn example(&mut self, holder: &'a Node) -> Result<Option<Val>, Problem> {
        if let Some(e) = holder.get("example") {
            return self.literal(e).map(Some);
        }
        let Some(examples) = holder.get("examples") else {
            return Ok(None);
        };
        if let Some(first) = examples.entries().first() {
            let example = self.doc.resolve(&first.value)?.node;
            if let Some(v) = example.get("value") {
                return self.literal(v).map(Some);
            }
            // `externalValue` is a URL: not fetched; the schema gives the value.
        }
        Ok(None)
    }

    /// A schema's own value: `example`, `examples[0]`, `default`, `enum[0]`, `const`.
    fn given(&mut self, schema: &'a Node) -> Result<Option<Val>, Problem> {
        for key in ["example", "examples", "default", "enum", "const"] {
            let Some(v) = schema.get(key) else { continue };
            let v = match (key, &v.value) {
                ("examples" | "enum", Value::Seq(items)) => match items.first() {
                    Some(first) => first,
                    None => continue,
                },
                ("examples" | "enum", _) => continue,
                _ => v,
            };
            return self.literal(v).map(Some);
        }
        Ok(None)
    }

    /// Document data as a value, within [`MAX_BODY`].
    fn literal(&mut self, node: &Node) -> Result<Val, Problem> {
        let v =
            to_val(node, 0).ok_or_else(|| Problem::new(node.at, "an example nested too deep"))?;
        self.grow(node.at, json_len(&v))?;
        Ok(v)
    }

    /// Counts `bytes` more of value; past twice [`MAX_BODY`] a problem (required
    /// content alone is that large).
    fn grow(&mut self, at: usize, bytes: usize) -> Result<(), Problem> {
        self.size += bytes;
        if self.size > MAX_BODY {
            return Err(Problem::new(
                at,
                format!("the value is larger than {} KiB", MAX_BODY >> 10),
            ));
        }
        Ok(())
    }

    fn step(&mut self, at: usize) -> Result<(), Stop> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err(Stop::Problem(Problem::new(
                at,
                format!("the schema takes more than {MAX_STEPS} steps to generate"),
            )));
        }
        if !self.doc.work() {
            return Err(Stop::Problem(Problem::new(
                at,
                format!(
                    "the document's schemas take more than {MAX_WORK} steps in all to generate"
                ),
            )));
        }
        Ok(())
    }

    /// Generates a value of `schema` (which may be a `$ref`).
    fn generate(&mut self, schema: &'a Node, depth: usize) -> Result<Val, Stop> {
        self.step(schema.at)?;
        if depth > MAX_DEPTH {
            return Err(Stop::Problem(Problem::new(
                schema.at,
                format!("the schema nests deeper than {MAX_DEPTH}"),
            )));
        }
        let resolved = self.doc.resolve(schema)?;
        if let Some(name) = resolved.via {
            if self.stack.contains(&name) {
                return Err(Stop::Recursion(name.to_string()));
            }
            self.stack.push(name);
            let v = self.generate_resolved(resolved.node, depth);
            self.stack.pop();
            return v;
        }
        self.generate_resolved(resolved.node, depth)
    }

    fn generate_resolved(&mut self, s: &'a Node, depth: usize) -> Result<Val, Stop> {
        if let Some(v) = self.given(s)? {
            return Ok(v);
        }
        if let Some(all) = s.get("allOf") {
            return self.all_of(s, all, depth);
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(options) = s.get(key) {
                return self.first_of(options, depth);
            }
        }
        // Containers count their punctuation here and their leaves as they are made,
        // so the size grows by what is added, never twice.
        let v = match kind(s) {
            "array" => {
                self.grow(s.at, 2)?;
                return self.array(s, depth);
            }
            "object" => {
                self.grow(s.at, 2)?;
                return self.object(s, depth);
            }
            "null" => Val::Null,
            "boolean" => Val::Bool(true),
            "integer" => Val::Int(integer(s)),
            "number" => number(s),
            _ => string(s),
        };
        self.grow(s.at, json_len(&v))?;
        Ok(v)
    }

    /// `allOf`: each member's value merged into one object (the schema's own
    /// properties too); a member that is not an object gives the value if none is.
    fn all_of(&mut self, s: &'a Node, all: &'a Node, depth: usize) -> Result<Val, Stop> {
        let mut merged: Vec<(String, Val)> = Vec::new();
        let mut other = None;
        let own = s.get("properties").is_some();
        let members = all.items().iter().map(|m| (m, depth + 1));
        let mut parts = Vec::new();
        for (member, d) in members {
            parts.push(self.generate(member, d)?);
        }
        if own {
            parts.push(self.object(s, depth)?);
        }
        for part in parts {
            match part {
                Val::Map(entries) => {
                    for (k, v) in entries {
                        match merged.iter_mut().find(|(m, _)| *m == k) {
                            Some((_, slot)) => *slot = v,
                            None => merged.push((k, v)),
                        }
                    }
                }
                v => {
                    other.get_or_insert(v);
                }
            }
        }
        Ok(match other {
            Some(v) if merged.is_empty() => v,
            _ => Val::Map(merged),
        })
    }

    /// `oneOf`/`anyOf`: the first member that can be generated (a recursive first
    /// member gives way to the next, which is often the base case).
    fn first_of(&mut self, options: &'a Node, depth: usize) -> Result<Val, Stop> {
        let mut last = None;
        for option in options.items() {
            match self.generate(option, depth + 1) {
                Err(Stop::Recursion(name)) => last = Some(Stop::Recursion(name)),
                other => return other,
            }
        }
        Err(last
            .unwrap_or_else(|| Stop::Problem(Problem::new(options.at, "an empty `oneOf`/`anyOf`"))))
    }

    fn array(&mut self, s: &'a Node, depth: usize) -> Result<Val, Stop> {
        let Some(items) = s.get("items") else {
            return Ok(Val::Seq(vec![]));
        };
        let min = count(s, "minItems").unwrap_or(0);
        let max = count(s, "maxItems").unwrap_or(usize::MAX);
        let n = min.max(1).min(max).min(MAX_GENERATED_LEN);
        let mut out = Vec::new();
        for _ in 0..n {
            match self.generate(items, depth + 1) {
                Ok(v) => out.push(v),
                // An array of the schema being generated: empty, the natural leaf of
                // a tree, unless the schema requires items.
                Err(Stop::Recursion(_)) if min == 0 => return Ok(Val::Seq(vec![])),
                Err(Stop::Problem(p)) if p.remote && min == 0 => {
                    self.remote.push(p);
                    return Ok(Val::Seq(vec![]));
                }
                Err(e) => return Err(e),
            }
        }
        Ok(Val::Seq(out))
    }

    fn object(&mut self, s: &'a Node, depth: usize) -> Result<Val, Stop> {
        let required: Vec<&str> = s
            .get("required")
            .map(|r| r.items().iter().filter_map(Node::as_str).collect())
            .unwrap_or_default();
        let mut out = Vec::new();
        let mut optional = 0;
        for property in s.get("properties").map_or(&[][..], Node::entries) {
            let name = property.key.as_str();
            let is_required = required.contains(&name);
            let target = match self.doc.resolve(&property.value) {
                Ok(t) => t.node,
                Err(p) if p.remote && !is_required => {
                    self.remote.push(p);
                    continue;
                }
                Err(p) => return Err(p.into()),
            };
            // A request never sends what the server alone writes.
            if target.flag("readOnly") {
                continue;
            }
            if !is_required {
                if optional >= MAX_OPTIONAL || self.size > MAX_BODY / 2 {
                    self.trimmed |= self.size > MAX_BODY / 2;
                    continue;
                }
                optional += 1;
            }
            match self.generate(&property.value, depth + 1) {
                Ok(v) => {
                    self.grow(property.at, name.len() + 4)?;
                    out.push((name.to_string(), v));
                }
                Err(Stop::Recursion(_)) if !is_required => {}
                Err(Stop::Problem(p)) if p.remote && !is_required => self.remote.push(p),
                Err(e) => return Err(e),
            }
        }
        // A map (`additionalProperties` only) gets one entry.
        if out.is_empty() && s.get("properties").is_none() {
            if let Some(extra) = s.get("additionalProperties").filter(|a| a.is_map()) {
                match self.generate(extra, depth + 1) {
                    Ok(v) => out.push(("key".into(), v)),
                    Err(Stop::Recursion(_)) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(Val::Map(out))
    }
}

/// Document data as a value (`None` past [`MAX_DEPTH`], which the parser already
/// refuses).
pub(crate) fn to_val(node: &Node, depth: usize) -> Option<Val> {
    if depth > MAX_DEPTH {
        return None;
    }
    Some(match &node.value {
        Value::Null => Val::Null,
        Value::Bool(b) => Val::Bool(*b),
        Value::Int(i) => Val::Int(*i),
        Value::Float(f) => Val::Float(*f),
        Value::Str(s) => Val::Str(s.clone()),
        Value::Seq(items) => Val::Seq(
            items
                .iter()
                .map(|i| to_val(i, depth + 1))
                .collect::<Option<_>>()?,
        ),
        Value::Map(_) => Val::Map(
            node.entries()
                .iter()
                .map(|e| Some((e.key.clone(), to_val(&e.value, depth + 1)?)))
                .collect::<Option<_>>()?,
        ),
    })
}

/// JSON data as a value (`None` past [`MAX_DEPTH`]).
pub(crate) fn from_json(value: &serde_json::Value, depth: usize) -> Option<Val> {
    use serde_json::Value as J;
    if depth > MAX_DEPTH {
        return None;
    }
    Some(match value {
        J::Null => Val::Null,
        J::Bool(b) => Val::Bool(*b),
        J::Number(n) => match n.as_i64() {
            Some(i) => Val::Int(i),
            None => Val::Float(n.as_f64().unwrap_or(0.0)),
        },
        J::String(s) => Val::Str(s.clone()),
        J::Array(items) => Val::Seq(
            items
                .iter()
                .map(|i| from_json(i, depth + 1))
                .collect::<Option<_>>()?,
        ),
        J::Object(entries) => Val::Map(
            entries
                .iter()
                .map(|(k, v)| Some((k.clone(), from_json(v, depth + 1)?)))
                .collect::<Option<_>>()?,
        ),
    })
}

/// About how many bytes a value takes as JSON (templates as their rendering's
/// typical length).
pub(crate) fn json_len(v: &Val) -> usize {
    match v {
        Val::Null | Val::Bool(_) => 5,
        Val::Int(_) | Val::Float(_) => 8,
        Val::Str(s) => s.len() + 2,
        Val::Tpl(_) => 40,
        Val::Seq(items) => 2 + items.iter().map(|i| json_len(i) + 1).sum::<usize>(),
        Val::Map(entries) => {
            2 + entries
                .iter()
                .map(|(k, v)| k.len() + 4 + json_len(v))
                .sum::<usize>()
        }
    }
}

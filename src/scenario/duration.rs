//! Durations as written in scenarios and flags: `500us`, `100ms`, `1.5s`, `2m`, `1h`.

use std::time::Duration;

/// Parses a duration with a unit.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("invalid duration {text:?}: expected e.g. 500ms, 1.5s, 2m"))?;
    let scale = match unit.trim() {
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        "" => {
            return Err(format!(
                "invalid duration {text:?}: a unit is needed (us, ms, s, m, h)"
            ))
        }
        other => {
            return Err(format!(
                "invalid duration {text:?}: unknown unit {other:?} (use us, ms, s, m, h)"
            ))
        }
    };
    Ok(Duration::from_secs_f64(value * scale))
}

//! What the agent reads from a pod (its command and environment, resolved as the
//! kubelet resolves them) and the status it writes back.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::SystemTime;

use k8s_openapi::api::core::v1::{Container, Pod, Secret};
use kube::Api;
use serde_json::{json, Value};

/// The kubelet's limits for a `FallbackToLogsOnError` message: the log's last 80
/// lines, at most 2048 bytes.
const MESSAGE_LINES: usize = 80;
const MESSAGE_BYTES: usize = 2048;

/// The pod's only container (the agent runs one container per pod).
pub(crate) fn container(pod: &Pod) -> Result<&Container, String> {
    match pod.spec.as_ref().map(|s| s.containers.as_slice()) {
        Some([c]) => Ok(c),
        _ => Err("this agent runs pods of exactly one container".into()),
    }
}

/// The container's command and args, `headroom` replaced by `headroom_bin`.
pub(crate) fn argv(c: &Container, headroom_bin: &Path) -> Result<Vec<String>, String> {
    let mut argv: Vec<String> = c.command.clone().unwrap_or_default();
    argv.extend(c.args.clone().unwrap_or_default());
    match argv.first_mut() {
        None => Err("no command: this agent has no images to take an entrypoint from".into()),
        Some(first) => {
            if first == "headroom" {
                *first = headroom_bin.display().to_string();
            }
            Ok(argv)
        }
    }
}

/// The container's environment: values, `secretKeyRef` (read from the API) and
/// `fieldRef` (`metadata.name`, `metadata.namespace`, `metadata.annotations['k']`,
/// `metadata.labels['k']`, `spec.nodeName`, `status.podIP`).
pub(crate) async fn env(
    pod: &Pod,
    c: &Container,
    ip: &str,
    secrets: &Api<Secret>,
) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for var in c.env.as_deref().unwrap_or_default() {
        let value = if let Some(v) = &var.value {
            v.clone()
        } else if let Some(from) = &var.value_from {
            if let Some(r) = &from.secret_key_ref {
                let secret = secrets
                    .get(&r.name)
                    .await
                    .map_err(|e| format!("{}: secret {}: {e}", var.name, r.name))?;
                let bytes = secret
                    .data
                    .as_ref()
                    .and_then(|d| d.get(&r.key))
                    .ok_or_else(|| {
                        format!("{}: secret {} has no key {}", var.name, r.name, r.key)
                    })?;
                String::from_utf8_lossy(&bytes.0).into_owned()
            } else if let Some(f) = &from.field_ref {
                field(pod, &f.field_path, ip)
                    .ok_or_else(|| format!("{}: cannot resolve {}", var.name, f.field_path))?
            } else {
                return Err(format!("{}: unsupported valueFrom", var.name));
            }
        } else {
            String::new()
        };
        out.insert(var.name.clone(), value);
    }
    Ok(out)
}

/// A `fieldRef` path's value.
fn field(pod: &Pod, path: &str, ip: &str) -> Option<String> {
    let keyed = |prefix: &str, map: &Option<BTreeMap<String, String>>| -> Option<String> {
        let key = path.strip_prefix(prefix)?.strip_suffix("']")?;
        map.as_ref()?.get(key).cloned()
    };
    match path {
        "metadata.name" => pod.metadata.name.clone(),
        "metadata.namespace" => pod.metadata.namespace.clone(),
        "spec.nodeName" => pod.spec.as_ref()?.node_name.clone(),
        "status.podIP" => Some(ip.to_owned()),
        _ => keyed("metadata.annotations['", &pod.metadata.annotations)
            .or_else(|| keyed("metadata.labels['", &pod.metadata.labels)),
    }
}

fn now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

fn conditions(ready: bool) -> Value {
    let ready = if ready { "True" } else { "False" };
    json!([
        {"type": "Initialized", "status": "True"},
        {"type": "Ready", "status": ready},
        {"type": "ContainersReady", "status": ready},
    ])
}

/// The status of a pod whose container just started.
pub(crate) fn running(c: &Container, ip: &str, host_ip: &str) -> (Value, String) {
    let started = now();
    let status = json!({"status": {
        "phase": "Running",
        "hostIP": host_ip, "hostIPs": [{"ip": host_ip}],
        "podIP": ip, "podIPs": [{"ip": ip}],
        "startTime": started,
        "conditions": conditions(true),
        "containerStatuses": [{
            "name": c.name, "image": c.image.clone().unwrap_or_default(), "imageID": "",
            "ready": true, "started": true, "restartCount": 0,
            "state": {"running": {"startedAt": started}},
        }],
    }});
    (status, started)
}

/// The status of a pod whose container exited with `code`; the message is the end
/// of its log when the container asks for it (`FallbackToLogsOnError`) and failed.
pub(crate) fn terminated(c: &Container, code: i32, started: &str, log: &Path) -> Value {
    let failed = code != 0;
    let wants_log = c.termination_message_policy.as_deref() == Some("FallbackToLogsOnError");
    let message = if failed && wants_log {
        log_tail(log)
    } else {
        String::new()
    };
    json!({"status": {
        "phase": if failed { "Failed" } else { "Succeeded" },
        "conditions": conditions(false),
        "containerStatuses": [{
            "name": c.name, "image": c.image.clone().unwrap_or_default(), "imageID": "",
            "ready": false, "started": false, "restartCount": 0,
            "state": {"terminated": {
                "exitCode": code, "reason": if failed { "Error" } else { "Completed" },
                "message": message, "startedAt": started, "finishedAt": now(),
            }},
        }],
    }})
}

/// The status of a pod whose container cannot be made (bad env, no command...).
pub(crate) fn cannot_start(c: &Container, reason: &str, message: &str) -> Value {
    json!({"status": {
        "phase": "Pending",
        "containerStatuses": [{
            "name": c.name, "image": c.image.clone().unwrap_or_default(), "imageID": "",
            "ready": false, "restartCount": 0,
            "state": {"waiting": {"reason": reason, "message": message}},
        }],
    }})
}

/// The last lines of a log, as the kubelet takes them.
fn log_tail(log: &Path) -> String {
    let text = std::fs::read(log).unwrap_or_default();
    let start = text.len().saturating_sub(MESSAGE_BYTES);
    let text = String::from_utf8_lossy(&text[start..]);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(MESSAGE_LINES)..].join("\n")
}

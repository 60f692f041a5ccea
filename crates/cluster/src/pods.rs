//! What a run's shard pods are doing, read from their status: [`PodState`] for each,
//! [`PodFailure`] for those that failed or can never start, with the reason the
//! kubelet recorded (exit code, the end of the shard's stderr, image pull errors).

use std::fmt;

use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

use super::manifest::INDEX_ANNOTATION;

/// One shard pod as the API server reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodState {
    /// The pod's name, `<run>-<index>-<suffix>`.
    pub name: String,
    /// Its completion index (the shard index), when the Job controller set it.
    pub index: Option<u32>,
    /// `Pending`, `Running`, `Succeeded`, `Failed` or `Unknown`.
    pub phase: String,
    /// Its address, once the node gave it one.
    pub ip: Option<String>,
    /// Why a pod is not running yet, when its status says: the scheduler's message
    /// (`Unschedulable: 0/3 nodes are available: 3 Insufficient cpu.`) or its
    /// container's waiting reason (`ContainerCreating`, `ImagePullBackOff: ...`).
    pub waiting: Option<String>,
}

/// A shard pod that failed or can never start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodFailure {
    /// The pod's name.
    pub pod: String,
    /// Its completion index (the shard index), when known.
    pub index: Option<u32>,
    /// Why: the container's exit code, reason and last message (the end of its
    /// stderr), or the pod's own reason (e.g. `DeadlineExceeded`), or why its
    /// container cannot start (e.g. `ImagePullBackOff: ...`).
    pub reason: String,
}

impl fmt::Display for PodFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index {
            Some(i) => write!(f, "shard {i} (pod {}): {}", self.pod, self.reason),
            None => write!(f, "pod {}: {}", self.pod, self.reason),
        }
    }
}

/// Waiting reasons after which a container never starts without someone's help.
const STUCK: [&str; 6] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
    "CreateContainerConfigError",
    "CreateContainerError",
];

/// What `pod` is doing.
pub(super) fn state(pod: &Pod) -> PodState {
    let status = pod.status.as_ref();
    PodState {
        name: pod.metadata.name.clone().unwrap_or_default(),
        index: index_of(pod),
        phase: status
            .and_then(|s| s.phase.clone())
            .unwrap_or_else(|| "Unknown".into()),
        ip: status.and_then(|s| s.pod_ip.clone()),
        waiting: waiting(pod),
    }
}

/// Why a pending pod waits: the scheduler's condition, else its container's state.
fn waiting(pod: &Pod) -> Option<String> {
    let status = pod.status.as_ref()?;
    if status.phase.as_deref() != Some("Pending") {
        return None;
    }
    let unscheduled = status
        .conditions
        .as_deref()
        .unwrap_or_default()
        .iter()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False");
    if let Some(c) = unscheduled {
        return Some(join(c.reason.as_deref(), c.message.as_deref()));
    }
    let containers = status.container_statuses.as_deref().unwrap_or_default();
    let w = containers
        .iter()
        .find_map(|c| c.state.as_ref()?.waiting.as_ref())?;
    Some(join(w.reason.as_deref(), w.message.as_deref()))
}

/// `reason: message`, either part left out when empty.
fn join(reason: Option<&str>, message: Option<&str>) -> String {
    [reason, message]
        .into_iter()
        .flatten()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(": ")
}

/// The completion index of a Job's pod, from its annotation.
fn index_of(pod: &Pod) -> Option<u32> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(INDEX_ANNOTATION)?
        .parse()
        .ok()
}

/// Why `pod` failed or cannot start, if it did or cannot.
pub(super) fn failure(pod: &Pod) -> Option<PodFailure> {
    let status = pod.status.as_ref()?;
    let containers = status.container_statuses.as_deref().unwrap_or_default();
    let reason = if status.phase.as_deref() == Some("Failed") {
        let terminated = containers.iter().find_map(terminated_reason);
        let own = join(status.reason.as_deref(), status.message.as_deref());
        match (terminated, own.is_empty()) {
            (Some(t), true) => t,
            (Some(t), false) => format!("{own}; {t}"),
            (None, false) => own,
            (None, true) => "failed (no reason given)".into(),
        }
    } else {
        let waiting = containers
            .iter()
            .find_map(|c| c.state.as_ref()?.waiting.as_ref())?;
        let why = waiting.reason.as_deref()?;
        if !STUCK.contains(&why) {
            return None;
        }
        join(Some(why), waiting.message.as_deref())
    };
    Some(PodFailure {
        pod: pod.metadata.name.clone().unwrap_or_default(),
        index: index_of(pod),
        reason,
    })
}

/// `exit code N (Reason): message` of a terminated container.
fn terminated_reason(c: &ContainerStatus) -> Option<String> {
    let t = c.state.as_ref()?.terminated.as_ref()?;
    let mut s = format!("exit code {}", t.exit_code);
    if let Some(r) = t.reason.as_deref().filter(|r| !r.is_empty()) {
        s.push_str(&format!(" ({r})"));
    }
    if let Some(m) = t
        .message
        .as_deref()
        .map(str::trim)
        .filter(|m| !m.is_empty())
    {
        s.push_str(": ");
        s.push_str(m);
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateTerminated, ContainerStateWaiting, PodStatus,
    };

    use super::*;

    fn pod(phase: &str, state: ContainerState) -> Pod {
        let mut p = Pod::default();
        p.metadata.name = Some("headroom-1-1-abcde".into());
        p.metadata.annotations = Some([(INDEX_ANNOTATION.to_owned(), "1".to_owned())].into());
        p.status = Some(PodStatus {
            phase: Some(phase.into()),
            container_statuses: Some(vec![ContainerStatus {
                name: "shard".into(),
                state: Some(state),
                ..ContainerStatus::default()
            }]),
            ..PodStatus::default()
        });
        p
    }

    #[test]
    fn a_failed_pod_says_its_exit_code_and_message() {
        let state = ContainerState {
            terminated: Some(ContainerStateTerminated {
                exit_code: 1,
                reason: Some("Error".into()),
                message: Some("error: cannot reach the coordinator\n".into()),
                ..ContainerStateTerminated::default()
            }),
            ..ContainerState::default()
        };
        let f = failure(&pod("Failed", state.clone())).unwrap();
        assert_eq!(f.index, Some(1));
        assert_eq!(
            f.reason,
            "exit code 1 (Error): error: cannot reach the coordinator"
        );
        assert_eq!(
            f.to_string(),
            "shard 1 (pod headroom-1-1-abcde): exit code 1 (Error): error: cannot reach the coordinator"
        );
        assert!(failure(&pod("Running", ContainerState::default())).is_none());
        assert!(failure(&pod("Succeeded", state)).is_none());
    }

    #[test]
    fn a_pod_that_cannot_pull_its_image_is_a_failure_a_slow_one_is_not() {
        let waiting = |reason: &str| ContainerState {
            waiting: Some(ContainerStateWaiting {
                reason: Some(reason.into()),
                message: Some("no such image".into()),
            }),
            ..ContainerState::default()
        };
        let f = failure(&pod("Pending", waiting("ImagePullBackOff"))).unwrap();
        assert_eq!(f.reason, "ImagePullBackOff: no such image");
        assert!(failure(&pod("Pending", waiting("ContainerCreating"))).is_none());
        let s = state(&pod("Pending", waiting("ContainerCreating")));
        assert_eq!(
            s.waiting.as_deref(),
            Some("ContainerCreating: no such image")
        );
    }

    #[test]
    fn an_unscheduled_pod_says_why_it_waits() {
        let mut p = pod("Pending", ContainerState::default());
        let status = p.status.as_mut().unwrap();
        status.container_statuses = None;
        status.conditions = Some(vec![k8s_openapi::api::core::v1::PodCondition {
            type_: "PodScheduled".into(),
            status: "False".into(),
            reason: Some("Unschedulable".into()),
            message: Some("0/3 nodes are available: 3 Insufficient cpu.".into()),
            ..Default::default()
        }]);
        let s = state(&p);
        assert_eq!(
            s.waiting.as_deref(),
            Some("Unschedulable: 0/3 nodes are available: 3 Insufficient cpu.")
        );
        assert_eq!((s.index, s.phase.as_str()), (Some(1), "Pending"));
        assert!(state(&pod("Running", ContainerState::default()))
            .waiting
            .is_none());
    }
}

//! Shards as a Kubernetes Indexed Job's pods ([`crate::cluster`]): the objects are
//! created when the run starts and deleted when it ends; a pod that fails is a lost
//! shard, named by its pod and with its container's reason.

use std::time::{Duration, Instant};

use super::Placement;
use crate::cluster::{ClusterDefaults, ClusterError, ClusterSpec, Launched};
use crate::plan::ClusterPlan;

/// How often the pods are looked at (one list call each time).
const POLL: Duration = Duration::from_secs(1);

/// A run's shards on Kubernetes.
pub struct KubeShards {
    launched: Option<Launched>,
    count: u64,
    /// Each shard's pod, once seen.
    pods: Vec<Option<String>>,
    reported: Vec<bool>,
    /// Failures seen and not yet handed out.
    pending: Vec<(u64, String)>,
    polled: Option<Instant>,
}

impl KubeShards {
    /// Creates the run's Secret, Service and Indexed Job (`spec`).
    pub fn launch(spec: &ClusterSpec) -> Result<KubeShards, ClusterError> {
        let launched = Launched::launch(spec)?;
        let count = u64::from(spec.shards);
        Ok(KubeShards {
            launched: Some(launched),
            count,
            pods: vec![None; count as usize],
            reported: vec![false; count as usize],
            pending: Vec::new(),
            polled: None,
        })
    }

    /// Looks at the pods (at most every [`POLL`]): learns their names, queues failures.
    fn poll(&mut self) {
        if self.polled.is_some_and(|t| t.elapsed() < POLL) {
            return;
        }
        self.polled = Some(Instant::now());
        let Some(launched) = &self.launched else {
            return;
        };
        if let Ok(pods) = launched.pods() {
            for pod in pods {
                if let Some(slot) = pod.index.and_then(|i| self.pods.get_mut(i as usize)) {
                    *slot = Some(pod.name.clone());
                }
            }
        }
        if let Ok(failed) = launched.failed_pods() {
            for f in failed {
                let Some(i) = f.index.map(u64::from).filter(|&i| i < self.count) else {
                    continue;
                };
                if !std::mem::replace(&mut self.reported[i as usize], true) {
                    self.pods[i as usize] = Some(f.pod.clone());
                    self.pending.push((i, f.reason.clone()));
                }
            }
        }
    }
}

impl Placement for KubeShards {
    fn count(&self) -> u64 {
        self.count
    }

    fn name(&self, index: u64) -> String {
        match self.pods.get(index as usize).cloned().flatten() {
            Some(pod) => format!("pod {pod}"),
            None => match &self.launched {
                Some(l) => format!(
                    "pod {}-{index}-… of Job {}/{}",
                    l.run(),
                    l.namespace(),
                    l.run()
                ),
                None => format!("#{index}"),
            },
        }
    }

    fn lost(&mut self) -> Option<(u64, String)> {
        self.poll();
        self.pending
            .pop()
            .map(|(i, reason)| (i, format!("the pod failed: {reason}")))
    }

    fn finish(&mut self) {
        if let Some(launched) = self.launched.take() {
            let what = format!("{}/{}", launched.namespace(), launched.run());
            if let Err(e) = launched.cleanup() {
                eprintln!(
                    "warning: the run's Kubernetes objects ({what}) were not all deleted: {e}"
                );
            }
        }
    }
}

impl Drop for KubeShards {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The defaults a scenario's `cluster:` block gives the cluster flags.
pub fn cluster_defaults(plan: &ClusterPlan) -> ClusterDefaults {
    let k = plan.kubernetes.clone().unwrap_or_default();
    ClusterDefaults {
        namespace: k.namespace,
        image: k.image,
        cpu: k.cpu,
        memory: k.memory,
        advertise: plan.advertise.clone(),
    }
}

//! The `cluster:` block: how a run's load is split over shards, the same settings as
//! `--shards`, `--coordinator`, `--advertise` and the Kubernetes flags (the flags win).
//!
//! ```yaml
//! cluster:
//!   shards: 4
//!   coordinator: 0.0.0.0:7400      # where the coordinator listens
//!   advertise: 10.200.0.5:7400       # the address shards dial (default: coordinator)
//!   kubernetes:                    # place the shards as an Indexed Job's pods
//!     namespace: load
//!     image: registry.example/headroom:0.1.0
//!     cpu: "1"
//!     memory: 512Mi
//! ```

use std::net::SocketAddr;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_saphyr::Spanned;

use super::errors::{ScenarioError, Source};
use headroom_plan::{ClusterPlan, KubernetesPlan};

/// Most shards a run may have (as `--shards`).
pub(crate) const MAX_SHARDS: u64 = 1024;

/// `cluster:` as written.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClusterSpec {
    #[schemars(with = "Option<u64>")]
    shards: Option<Spanned<u64>>,
    #[schemars(with = "Option<String>")]
    coordinator: Option<Spanned<String>>,
    #[schemars(with = "Option<String>")]
    advertise: Option<Spanned<String>>,
    kubernetes: Option<KubernetesSpec>,
}

/// `cluster.kubernetes:` as written.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct KubernetesSpec {
    namespace: Option<String>,
    image: Option<String>,
    cpu: Option<String>,
    memory: Option<String>,
}

/// Checks `cluster:` and turns it into the plan's [`ClusterPlan`].
pub(crate) fn build(
    src: Source<'_>,
    spec: Option<&ClusterSpec>,
) -> Result<ClusterPlan, ScenarioError> {
    let Some(spec) = spec else {
        return Ok(ClusterPlan::default());
    };
    let shards = match &spec.shards {
        Some(n) if n.value == 0 || n.value > MAX_SHARDS => {
            return Err(src.of(
                n,
                "cluster.shards",
                format!("expected 1 to {MAX_SHARDS}, found {}", n.value),
            ))
        }
        Some(n) => Some(n.value),
        None => None,
    };
    let coordinator = match &spec.coordinator {
        Some(addr) => Some(addr.value.parse::<SocketAddr>().map_err(|_| {
            src.of(
                addr,
                "cluster.coordinator",
                format!(
                    "expected ADDR:PORT to listen on, such as 0.0.0.0:7400, found {:?}",
                    addr.value
                ),
            )
        })?),
        None => None,
    };
    let advertise = match &spec.advertise {
        Some(a)
            if !a
                .value
                .rsplit_once(':')
                .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok()) =>
        {
            return Err(src.of(
                a,
                "cluster.advertise",
                format!("expected HOST:PORT that shards dial, found {:?}", a.value),
            ))
        }
        Some(a) => Some(a.value.clone()),
        None => None,
    };
    let kubernetes = spec.kubernetes.as_ref().map(|k| KubernetesPlan {
        namespace: k.namespace.clone(),
        image: k.image.clone(),
        cpu: k.cpu.clone(),
        memory: k.memory.clone(),
    });
    Ok(ClusterPlan {
        shards,
        coordinator,
        advertise,
        kubernetes,
    })
}

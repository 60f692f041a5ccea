//! [`Connectors`]: an engine thread's connectors for streams. A leaf of the stream
//! layer: the engine's thread state holds one, and nothing here knows that state.

use std::sync::Arc;

use super::failure::Failure;
use super::url::Endpoint;
use headroom_client::connect::Connector;
use headroom_metrics::ErrorKind;

/// Per-thread connectors for streams: HTTP/1.1 by ALPN (a WebSocket upgrade, and SSE
/// outside an `--http2` run or to another origin, are HTTP/1.1 requests), and HTTP/2
/// for gRPC calls and SSE streams on connections of their own. Whatever opens through
/// them is counted by the connector (`Connector::open`).
pub(crate) struct Connectors {
    http1: Arc<Connector>,
    /// gRPC: the target with ALPN `h2` only (required) over TLS, h2c over TCP.
    h2: Arc<Connector>,
}

impl Connectors {
    /// From the run's connector and TLS configuration.
    pub(crate) fn new(run: &Arc<Connector>, plan: &headroom_plan::Plan) -> Connectors {
        let http1 = match &plan.client.tls {
            Some(config) if config.alpn_protocols != [b"http/1.1".to_vec()] => {
                let mut config = (**config).clone();
                config.alpn_protocols = vec![b"http/1.1".to_vec()];
                Connector::tls(run.addr(), &plan.target.host, Arc::new(config))
                    .map(Arc::new)
                    .unwrap_or_else(|_| run.clone())
            }
            _ => run.clone(),
        };
        let h2 = match &plan.client.tls {
            Some(config) => {
                let mut config = (**config).clone();
                config.alpn_protocols = vec![b"h2".to_vec()];
                Connector::tls(run.addr(), &plan.target.host, Arc::new(config))
                    .map(|c| Arc::new(c.require_h2()))
                    .unwrap_or_else(|_| run.clone())
            }
            None => run.clone(),
        };
        Connectors { http1, h2 }
    }

    /// The connector for gRPC calls to the target (HTTP/2 whatever the run speaks).
    pub(crate) fn h2(&self) -> Arc<Connector> {
        self.h2.clone()
    }

    /// The connector for an HTTP/1.1 stream to `endpoint`: the run's (with `--resolve`,
    /// TLS settings, certificates) for the target's origin; for another origin, plain
    /// TCP to its resolved address, or TLS with the run's configuration.
    pub(crate) async fn http1(
        &self,
        plan: &headroom_plan::Plan,
        endpoint: &Endpoint,
    ) -> Result<Arc<Connector>, Failure> {
        if endpoint.same_origin {
            return Ok(self.http1.clone());
        }
        let addr = match headroom_client::connect::resolved(
            &plan.client.resolve,
            &endpoint.host,
            endpoint.port,
        ) {
            Some(a) => a,
            None => tokio::net::lookup_host((endpoint.host.as_str(), endpoint.port))
                .await
                .ok()
                .and_then(|mut a| a.next())
                .ok_or_else(|| {
                    Failure::new(
                        ErrorKind::Connect,
                        format!("cannot resolve {}", endpoint.host),
                    )
                })?,
        };
        if !endpoint.tls {
            return Ok(Arc::new(Connector::tcp(addr)));
        }
        let mut config = match &plan.client.other_origins {
            Some(c) => (**c).clone(),
            None => (*headroom_client::tls::client_config(&Default::default())
                .map_err(|e| Failure::new(ErrorKind::Tls, e.to_string()))?)
            .clone(),
        };
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Connector::tls(addr, &endpoint.host, Arc::new(config))
            .map(Arc::new)
            .map_err(|e| Failure::new(ErrorKind::Tls, e.to_string()))
    }
}

//! Where ACP agents reach the owner tools: one Streamable HTTP endpoint on loopback
//! (`http://127.0.0.1:<port>/mcp`), each agent session admitted by its own secret in an
//! `Authorization: Bearer` header. A session is given a [`Grant`] only when it is the verified
//! owner's with tools granted; the secret stops working when the grant is dropped, so a
//! stranger (or another local user) who finds the port has nothing to present.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use rand::RngCore;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::server::ToolServer;
use super::tools::OwnerTools;

/// The secrets of the sessions granted now.
type Secrets = Arc<Mutex<HashSet<String>>>;

/// The running endpoint. Made by the daemon once (or a test); dropped or stopped with it.
pub struct ToolEndpoint {
    tools: OwnerTools,
    addr: SocketAddr,
    secrets: Secrets,
    stop: CancellationToken,
}

pub use crate::agent::tool_access::Grant;

fn lock(s: &Secrets) -> std::sync::MutexGuard<'_, HashSet<String>> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

impl ToolEndpoint {
    /// Binds a free loopback port and serves `tools` there until [`ToolEndpoint::stop`].
    pub async fn start(tools: OwnerTools) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let stop = CancellationToken::new();
        let mut config = StreamableHttpServerConfig::default();
        config.cancellation_token = stop.child_token();
        let served_tools = tools.clone();
        let service = StreamableHttpService::new(
            move || Ok(ToolServer::new(served_tools.clone())),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let secrets: Secrets = Arc::default();
        let app = axum::Router::new()
            .route_service("/mcp", service)
            .layer(axum::middleware::from_fn_with_state(secrets.clone(), admit));
        let until = stop.clone();
        tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async move { until.cancelled().await })
                .await;
            if let Err(e) = served {
                tracing::error!(error = %e, "the owner tools endpoint stopped");
            }
        });
        Ok(ToolEndpoint {
            tools,
            addr,
            secrets,
            stop,
        })
    }

    /// A new session's admission (only for the verified owner's sessions with tools granted).
    pub fn grant(&self) -> Grant {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        let secret: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        lock(&self.secrets).insert(secret.clone());
        let secrets = self.secrets.clone();
        let authorization = format!("Bearer {secret}");
        Grant::new(
            format!("http://{}/mcp", self.addr),
            authorization,
            move || {
                lock(&secrets).remove(&secret);
            },
        )
    }

    /// The tools themselves (the OpenAI backend calls them directly, no HTTP).
    pub fn tools(&self) -> &OwnerTools {
        &self.tools
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops serving (open MCP sessions end).
    pub fn stop(&self) {
        self.stop.cancel();
    }
}

impl Drop for ToolEndpoint {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Lets a request through only with a live grant's secret; anything else is 401 with nothing
/// about which secrets exist.
async fn admit(
    State(secrets): State<Secrets>,
    req: Request,
    next: Next,
) -> Result<Response, StatusCode> {
    let presented = req
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string);
    let known = presented.is_some_and(|s| lock(&secrets).contains(&s));
    if !known {
        return Err(StatusCode::UNAUTHORIZED);
    }
    Ok(next.run(req).await)
}

impl crate::agent::tool_access::ToolAccess for ToolEndpoint {
    fn grant(&self) -> Grant {
        ToolEndpoint::grant(self)
    }

    fn specs(&self) -> Vec<super::ToolSpec> {
        super::specs()
    }

    fn call<'a>(
        &'a self,
        name: &'a str,
        args: &'a serde_json::Value,
    ) -> futures_util::future::BoxFuture<'a, Result<String, String>> {
        Box::pin(self.tools.call(name, args))
    }
}

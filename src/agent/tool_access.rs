//! What an agent session is handed to reach the owner's tools: the agent layer's side of the
//! contract, so backends never import the server that serves them. `crate::mcp` implements it
//! (its endpoint on loopback); the pipeline passes it only to the turns the policy gives tools.
//!
//! Two ways in, one path: an ACP agent is handed a [`Grant`] and reaches the tools over MCP; the
//! `openai` backend offers [`ToolAccess::specs`] as function tools and runs the model's calls
//! with [`ToolAccess::call`]. Both end in the same `crate::mcp::OwnerTools::call`.

use futures_util::future::BoxFuture;
use serde_json::Value;

/// Admits sessions to the owner tools. Made once by the daemon; stable for its life.
pub trait ToolAccess: Send + Sync + 'static {
    /// A new session's admission, valid until the grant is dropped.
    fn grant(&self) -> Grant;

    /// The tools as a model is told them, in a stable order.
    fn specs(&self) -> Vec<ToolSpec>;

    /// Runs tool `name` with `args` (a JSON object) for a backend in this process. `Ok` is the
    /// result for the model (JSON text); `Err` says what failed, also for the model, which may
    /// correct its arguments and call again.
    fn call<'a>(&'a self, name: &'a str, args: &'a Value) -> BoxFuture<'a, Result<String, String>>;
}

/// One tool as a model is told it. Made by `crate::mcp::specs`; the name and the argument names
/// are what models learn and call, so they stay stable.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// The name the model calls.
    pub name: &'static str,
    /// For the model (English: models read it, people do not).
    pub description: &'static str,
    /// JSON Schema (an object) of the arguments.
    pub parameters: Value,
}

/// One session's admission: where the tools are and the header that admits it; dropping it
/// revokes the admission.
pub struct Grant {
    /// The tools' URL (the same for every session).
    pub url: String,
    /// The `Authorization` header's value.
    pub authorization: String,
    revoke: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl Grant {
    /// An admission that `revoke` withdraws when it is dropped.
    pub fn new(
        url: String,
        authorization: String,
        revoke: impl FnOnce() + Send + Sync + 'static,
    ) -> Self {
        Grant {
            url,
            authorization,
            revoke: Some(Box::new(revoke)),
        }
    }
}

impl Drop for Grant {
    fn drop(&mut self) {
        if let Some(revoke) = self.revoke.take() {
            revoke();
        }
    }
}

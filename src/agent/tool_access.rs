//! What an agent session is handed to reach the owner's tools: the agent layer's side of the
//! contract, so backends never import the server that serves them. `crate::mcp` implements it
//! (its endpoint on loopback); the pipeline passes it only to the turns the policy gives tools.

/// Admits sessions to the owner tools. Made once by the daemon; stable for its life.
pub trait ToolAccess: Send + Sync + 'static {
    /// A new session's admission, valid until the grant is dropped.
    fn grant(&self) -> Grant;
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

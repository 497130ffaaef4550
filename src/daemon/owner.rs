//! The daemon's side of `send`, `send_status` and `send_cancel`: the owner service built from
//! the daemon's parts, and its answers as `daemon.status` with `send`.

use std::sync::Arc;

use super::{Core, internal};
use crate::config::Config;
use crate::control::CommandError;
use crate::conversation::Conversation;
use crate::owner::{OwnerError, OwnerParts, OwnerService, OwnerSettings};
use crate::protocol::{DaemonCommand, DaemonStatus, ErrorCode};
use crate::secrets::CredentialStore;
use crate::store::Store;
use crate::supervisor::HealthRegistry;

/// The owner service over the pipeline's outbox, on the daemon's clock; none without a
/// pipeline (the daemon then answers `send` with `unsupported`).
pub(super) fn build(
    config: &Config,
    store: &Store,
    credentials: &CredentialStore,
    registry: &Arc<HealthRegistry>,
    conversation: Option<&Arc<Conversation>>,
    confirm: Option<&Arc<crate::confirm::ConfirmService>>,
    clock: crate::clock::Clock,
) -> Option<Arc<OwnerService>> {
    let conversation = conversation?;
    let parts = OwnerParts {
        store: store.clone(),
        outbox: conversation.outbox().clone(),
        credentials: credentials.clone(),
        clock,
        capabilities: Arc::new(|account| crate::adapters::capabilities(account.channel)),
        registry: registry.clone(),
        confirm: confirm.cloned(),
    };
    Some(OwnerService::new(parts, OwnerSettings::from_config(config)))
}

impl Core {
    /// The owner service, when the daemon runs one.
    pub fn owner(&self) -> Option<&Arc<OwnerService>> {
        self.owner.as_ref()
    }

    /// Answers `send` / `send_status` / `send_cancel`: a status without components, carrying
    /// the send.
    pub(super) async fn owner_command(
        &self,
        command: DaemonCommand,
    ) -> Result<DaemonStatus, CommandError> {
        let svc = self.owner.as_ref().ok_or_else(|| {
            CommandError::new(
                ErrorCode::Unsupported,
                "sending to the owner needs the conversation pipeline, which this daemon does not run",
            )
        })?;
        let info = match command {
            DaemonCommand::Send {
                text,
                to,
                at,
                in_seconds,
                files,
            } => {
                let files: Vec<std::path::PathBuf> = files.iter().map(Into::into).collect();
                svc.send_with_files(&text, &files, to.as_deref(), at.as_deref(), in_seconds)
                    .await
            }
            DaemonCommand::SendStatus { id } => svc.status(&id).await,
            DaemonCommand::SendCancel { id } => svc.cancel(&id).await,
            _ => return Err(internal("not a send command")),
        }
        .map_err(|e| {
            let code = match &e {
                OwnerError::InvalidRequest(_) => ErrorCode::InvalidRequest,
                OwnerError::NotFound(_) => ErrorCode::NotFound,
                OwnerError::Conflict(_) => ErrorCode::Conflict,
                OwnerError::Internal(_) => ErrorCode::Internal,
            };
            CommandError::new(code, e.message())
        })?;
        let mut status = self.status_with(Vec::new());
        status.send = Some(Box::new(info));
        Ok(status)
    }
}

/// Starts the owner tools' loopback endpoint and offers it to the pipeline's tool sessions
/// (`crate::mcp`); without a port the daemon runs on and agents just get no owner tools.
pub(super) async fn offer_tools(
    owner: &Arc<crate::owner::OwnerService>,
    confirm: Option<&Arc<crate::confirm::ConfirmService>>,
    conversation: Option<&Arc<Conversation>>,
) {
    let Some(conversation) = conversation else {
        return;
    };
    let tools = crate::mcp::OwnerTools::new(
        owner.clone(),
        confirm.cloned(),
        tokio_util::sync::CancellationToken::new(),
    );
    match crate::mcp::ToolEndpoint::start(tools).await {
        Ok(endpoint) => conversation.set_owner_tools(Arc::new(endpoint)),
        Err(e) => tracing::warn!(
            error = %e,
            "cannot open a loopback port for the owner tools; agents get none (check that 127.0.0.1 is up)"
        ),
    }
}

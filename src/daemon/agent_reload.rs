//! A reload that changes `[agent]` builds the new agent and swaps it into the pipeline
//! (`Conversation::replace_agent`): the next turn answers with it, turns in flight finish on
//! the old one. The console's model form asks for the same swap even when only the stored key
//! changed (the key is not in the file, so a reload alone cannot see it); its agent form asks
//! the same for the named agent it saved ([`Core::reload_with_named_agent`]).

use super::Core;
use crate::config::Config;
use crate::control::CommandError;
use crate::protocol::ErrorCode;
use crate::supervisor::ReloadReport;

impl Core {
    /// [`Core::reload`], then a new agent from `[agent]` and the stored key whether or not the
    /// file's table changed (the console saves a model and its key together).
    pub async fn reload_with_agent(&self) -> Result<ReloadReport, CommandError> {
        let report = self.reload().await?;
        let config = self.config.lock().await;
        if config.agent.backend == crate::config::AgentBackend::Acp {
            // Building an ACP agent kills the recorded agent groups, ours included (see
            // `Config::unreloadable_changes`): only a restart may do it.
            return Err(CommandError::new(
                ErrorCode::Conflict,
                "the acp agent backend is built at start only; restart the daemon to use the new key",
            ));
        }
        self.rebuild_agent(&config).await;
        Ok(report)
    }

    /// Builds the agent `config` names, with the key `login agent` stored, and puts it in place
    /// of the current one (nothing when the daemon runs no pipeline).
    pub(super) async fn rebuild_agent(&self, config: &Config) {
        let Some(conversation) = &self.conversation else {
            return;
        };
        let mut agent = config.agent.clone();
        agent.stored_api_key = self.stored_agent_key().await;
        conversation.replace_agent(crate::agent::build(&agent, self.store.clone()));
        tracing::info!(backend = ?agent.backend, "the agent was rebuilt from [agent]; new turns use it");
    }

    /// [`Core::reload`], with the named agent `name` built anew from its table and the key
    /// stored under its name even when the file's table did not change (the console saves an
    /// agent and its key together). An `acp` agent is refused by the reload itself: building
    /// one needs a restart.
    pub async fn reload_with_named_agent(&self, name: &str) -> Result<ReloadReport, CommandError> {
        self.reload_renewing(&[name.to_string()]).await
    }

    /// Rebuilds the named agents whose `[agents.NAME]` table changed from `old` to `new`, or
    /// whose name is in `renew` (the others keep running), each with the key stored under its
    /// name, and puts them and the accounts' choices (`agent = "NAME"`, `[chats]`) in place:
    /// the next turn of every chat reads them, and no account restarts for them.
    pub(super) async fn rebuild_named_agents(&self, old: &Config, new: &Config, renew: &[String]) {
        let Some(conversation) = &self.conversation else {
            return;
        };
        let (creds, named) = (self.credentials.clone(), new.agents.clone());
        let keys = tokio::task::spawn_blocking(move || {
            crate::agent::registry::stored_keys(&named, &creds)
        })
        .await
        .unwrap_or_else(|e| {
            tracing::warn!(error = %e, "reading the named agents' stored keys failed");
            Default::default()
        });
        let running = |name: &str| conversation.named_agent(name);
        let named =
            crate::agent::registry::rebuild_named((old, new), running, &keys, renew, &self.store);
        conversation.set_agents(named, new.choices.clone());
        tracing::info!(
            agents = new.agents.len(),
            "the named agents and the accounts' choices were reloaded; new turns use them"
        );
    }

    /// The key `login agent` stored, if it can be read (an unreadable one is the same as none:
    /// the agent then says what is missing).
    async fn stored_agent_key(&self) -> Option<crate::secret::Secret> {
        let creds = self.credentials.clone();
        match tokio::task::spawn_blocking(move || creds.agent_key()).await {
            Ok(Ok(key)) => key,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "the stored agent key cannot be read");
                None
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading the stored agent key failed");
                None
            }
        }
    }
}

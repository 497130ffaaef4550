//! `reload`: the file read again, what cannot change refused, what changes only how chats
//! are answered swapped into the running pipeline, and the accounts reconciled.

use super::Core;
use crate::config::Config;
use crate::confirm::ConfirmSettings;
use crate::control::CommandError;
use crate::protocol::ErrorCode;
use crate::supervisor::ReloadReport;

impl Core {
    /// Rereads the configuration file and reconciles.
    pub async fn reload(&self) -> Result<ReloadReport, CommandError> {
        self.reload_renewing(&[]).await
    }

    /// [`Core::reload`], building the named agents of `renew` anew whether or not their tables
    /// changed. What changes only how chats are answered (`[agent]`, `[agents.NAME]`, an
    /// account's `agent` and `stranger_agent`, `[chats]`) is swapped into the running pipeline
    /// and never restarts an account: those keys are not in the account's spec, so the
    /// reconcile below does not see them.
    pub(super) async fn reload_renewing(
        &self,
        renew: &[String],
    ) -> Result<ReloadReport, CommandError> {
        let mut config = self.config.lock().await;
        let new = Config::load(&config.path).map_err(|e| {
            CommandError::new(ErrorCode::InvalidRequest, format!("reload refused: {e}"))
        })?;
        let fixed = config.unreloadable_changes(&new);
        if !fixed.is_empty() {
            let msg = format!(
                "reload refused: {} cannot change while the daemon runs; restart it",
                fixed.join(", ")
            );
            return Err(CommandError::new(ErrorCode::Conflict, msg));
        }
        let agent_changed = config.agent_changed(&new);
        let speech_changed = config.speech != new.speech;
        let agents_changed =
            config.agents != new.agents || config.choices != new.choices || !renew.is_empty();
        let old = std::mem::replace(&mut *config, new);
        if speech_changed {
            self.apply_speech(&config);
        }
        if let Some(c) = &self.confirm {
            c.set_settings(ConfirmSettings::from_config(&config));
            c.set_routes(config.owner.routes.clone());
        }
        if let Some(o) = &self.owner {
            o.set_settings(crate::owner::OwnerSettings::from_config(&config));
        }
        if agent_changed {
            self.rebuild_agent(&config).await;
        }
        if agents_changed {
            self.rebuild_named_agents(&old, &config, renew).await;
        }
        let report = self.reconcile(&config, &[]).await?;
        tracing::info!(started = ?report.started, stopped = ?report.stopped, restarted = ?report.restarted, "configuration reloaded");
        Ok(report)
    }
}

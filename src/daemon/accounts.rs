//! Account settings changed at run time (`channel set`, `enable`, `disable`, `reset`), shown in
//! status where they differ from the file, and the accounts the daemon should run.

use std::collections::BTreeMap;

use super::{Core, account_key, internal};
use crate::config::{AccountKey, AccountSpec, Channel, Config, command};
use crate::control::CommandError;
use crate::protocol::{ErrorCode, Purpose, RemoteTools, Senders};
use crate::store::SettingsOverride;
use crate::supervisor::{DesiredAccount, ReloadReport};

impl Core {
    /// Applies `channel_set`: stores what differs from the file and restarts that account.
    pub async fn channel_set(&self, cmd: ChannelSet) -> Result<ReloadReport, CommandError> {
        let config = self.config.lock().await;
        let key = account_key(&cmd.channel, &cmd.account)?;
        // A typo must not create an account: accounts exist only in the file.
        let Some(file) = config.accounts.get(&key) else {
            return Err(not_configured(&config, &key));
        };
        if key.channel == Channel::Mail
            && (cmd.senders.is_some() || cmd.remote_tools.is_some() || cmd.purpose.is_some())
        {
            return Err(CommandError::new(
                ErrorCode::InvalidRequest,
                format!("{key}: mail accounts have no senders, remote_tools or purpose"),
            ));
        }
        let saved = self.overrides().await?.remove(&key).unwrap_or_default();
        // A value equal to the file's is not kept, so from then on the file decides it again.
        let o = SettingsOverride {
            account: key.to_string(),
            enabled: cmd.enabled.or(saved.enabled).filter(|e| *e != file.enabled),
            workspace: cmd
                .workspace
                .or(saved.workspace)
                .filter(|w| Some(crate::config::expand_tilde(w)) != file.workspace),
            senders: cmd
                .senders
                .map(|s| wire(&s))
                .or(saved.senders)
                .filter(|s| *s != wire(&file.senders)),
            remote_tools: cmd
                .remote_tools
                .map(|s| wire(&s))
                .or(saved.remote_tools)
                .filter(|s| *s != wire(&file.remote_tools)),
            purpose: cmd
                .purpose
                .map(|s| wire(&s))
                .or(saved.purpose)
                .filter(|s| *s != wire(&file.purpose)),
        };
        let follows_file = o
            == SettingsOverride {
                account: o.account.clone(),
                ..SettingsOverride::default()
            };
        if follows_file {
            self.store
                .delete_settings(&o.account)
                .await
                .map_err(internal)?;
        } else {
            self.store.put_settings(o).await.map_err(internal)?;
        }
        self.reconcile(&config, std::slice::from_ref(&key)).await
    }

    /// Applies `channel_reset`: forgets the account's run-time settings; it runs as the file says.
    pub async fn channel_reset(
        &self,
        channel: &str,
        account: &str,
    ) -> Result<ReloadReport, CommandError> {
        let config = self.config.lock().await;
        let key = account_key(channel, account)?;
        let had = self
            .store
            .delete_settings(&key.to_string())
            .await
            .map_err(internal)?;
        // Resetting settings left by an account since removed from the file is allowed: it
        // clears them away.
        if !had && !config.accounts.contains_key(&key) {
            return Err(not_configured(&config, &key));
        }
        tracing::info!(account = %key, "run-time settings reset; the configuration file decides");
        self.reconcile(&config, &[]).await
    }

    async fn overrides(&self) -> Result<BTreeMap<AccountKey, SettingsOverride>, CommandError> {
        let list = self.store.settings_overrides().await.map_err(internal)?;
        Ok(list
            .into_iter()
            .filter_map(|o| AccountKey::parse(&o.account).map(|k| (k, o)))
            .collect())
    }

    /// The accounts as they should run: the file's, changed by `channel_set`, with credential fingerprints.
    pub(super) async fn desired(
        &self,
        config: &Config,
    ) -> Result<BTreeMap<AccountKey, DesiredAccount>, CommandError> {
        let mut specs = config.accounts.clone();
        for (key, o) in self.overrides().await? {
            match specs.get_mut(&key) {
                Some(spec) => apply_override(spec, &o),
                // Left by an older daemon, or by an account since removed from the file.
                None => tracing::warn!(
                    account = %key,
                    forget = %command(&format!("channel reset {} {}", key.channel, key.account)),
                    "ignoring run-time settings of an account that is not in the configuration"
                ),
            }
        }
        let creds = self.credentials.clone();
        let ids: Vec<String> = specs.keys().map(|k| k.to_string()).collect();
        let prints = tokio::task::spawn_blocking(move || {
            ids.iter()
                .map(|id| creds.load(id).ok().flatten().map(|c| c.fingerprint()))
                .collect::<Vec<_>>()
        })
        .await
        .map_err(|e| internal(e.to_string()))?;
        Ok(specs
            .into_iter()
            .zip(prints)
            .map(|((k, spec), credentials)| (k, DesiredAccount { spec, credentials }))
            .collect())
    }

    /// Shows in each account's health the run-time settings that differ from the file; called
    /// after every reconcile, since a restarted account gets a fresh health entry.
    pub(super) async fn show_overrides(&self, config: &Config) {
        let saved = match self.overrides().await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e.message, "cannot read run-time settings for status");
                return;
            }
        };
        let registry = self.registry();
        for (key, file) in &config.accounts {
            let notes = saved
                .get(key)
                .map(|o| differences(file, o))
                .unwrap_or_default();
            if let Some(cell) = registry.cell(&key.to_string())
                && cell.get().overrides != notes
            {
                cell.update(|h| h.overrides = notes.clone());
            }
        }
    }
}

/// `not_found` for an account the configuration does not have, naming the closest one it does.
fn not_configured(config: &Config, key: &AccountKey) -> CommandError {
    let wanted = key.to_string();
    let closest = config
        .accounts
        .keys()
        .map(|k| (strsim::levenshtein(&wanted, &k.to_string()), k))
        .filter(|(d, _)| *d <= 2.max(wanted.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k);
    let mut msg = format!(
        "{key} is not in the configuration {}",
        config.path.display()
    );
    match closest {
        Some(k) => msg.push_str(&format!("; did you mean {k}?")),
        None if config.accounts.is_empty() => msg.push_str("; it configures no accounts"),
        None => {
            let all: Vec<String> = config.accounts.keys().map(|k| k.to_string()).collect();
            msg.push_str(&format!("; it configures {}", all.join(", ")));
        }
    }
    msg.push_str(&format!(
        ". To add an account, add a [{}.{}] table to the file, then run `{}`",
        key.channel,
        key.account,
        command("reload")
    ));
    CommandError::new(ErrorCode::NotFound, msg)
}

/// "remote_tools: owner (set at run time; the file says none)", for each stored setting that
/// differs from the file.
fn differences(file: &AccountSpec, o: &SettingsOverride) -> Vec<String> {
    let note = |key: &str, now: String, was: String| {
        format!("{key}: {now} (set at run time; the file says {was})")
    };
    let mut out = Vec::new();
    if let Some(e) = o.enabled.filter(|e| *e != file.enabled) {
        out.push(note("enabled", e.to_string(), file.enabled.to_string()));
    }
    if let Some(w) = &o.workspace
        && Some(crate::config::expand_tilde(w)) != file.workspace
    {
        let was = file
            .workspace
            .as_ref()
            .map_or("none".to_string(), |p| p.display().to_string());
        out.push(note("workspace", w.clone(), was));
    }
    for (key, set, was) in [
        ("senders", &o.senders, wire(&file.senders)),
        ("remote_tools", &o.remote_tools, wire(&file.remote_tools)),
        ("purpose", &o.purpose, wire(&file.purpose)),
    ] {
        if let Some(v) = set.as_ref().filter(|v| **v != was) {
            out.push(note(key, v.clone(), was));
        }
    }
    out
}

/// The fields of a `channel_set` command.
#[derive(Debug, Clone)]
pub struct ChannelSet {
    /// The channel name.
    pub channel: String,
    /// The account name.
    pub account: String,
    /// Whether it runs, or keep.
    pub enabled: Option<bool>,
    /// A new workspace, or keep.
    pub workspace: Option<String>,
    /// New senders, or keep.
    pub senders: Option<Senders>,
    /// New tool grant, or keep.
    pub remote_tools: Option<RemoteTools>,
    /// New purpose, or keep.
    pub purpose: Option<Purpose>,
}

/// The snake_case wire spelling of a settings enum.
fn wire<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn parse_wire<T: serde::de::DeserializeOwned>(s: &Option<String>) -> Option<T> {
    s.as_ref()
        .and_then(|s| serde_json::from_value(serde_json::Value::String(s.clone())).ok())
}

fn apply_override(spec: &mut AccountSpec, o: &SettingsOverride) {
    if let Some(e) = o.enabled {
        spec.enabled = e;
    }
    if let Some(w) = &o.workspace {
        spec.workspace = Some(crate::config::expand_tilde(w));
    }
    if let Some(s) = parse_wire(&o.senders) {
        spec.senders = s;
    }
    if let Some(t) = parse_wire(&o.remote_tools) {
        spec.remote_tools = t;
    }
    if let Some(p) = parse_wire(&o.purpose) {
        spec.purpose = p;
    }
}

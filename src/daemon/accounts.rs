//! Account settings changed at run time (`channel set`) and the accounts the daemon should run.

use std::collections::BTreeMap;

use super::{Core, account_key, internal};
use crate::config::{
    AccountKey, AccountSpec, Channel, ChannelSettings, Config, FeishuSettings, WechatSettings,
};
use crate::control::CommandError;
use crate::protocol::{ErrorCode, Purpose, RemoteTools, Senders};
use crate::store::SettingsOverride;
use crate::supervisor::{DesiredAccount, ReloadReport};

impl Core {
    /// Applies `channel_set`: stores the override and restarts that account.
    pub async fn channel_set(&self, cmd: ChannelSet) -> Result<ReloadReport, CommandError> {
        let config = self.config.lock().await;
        let key = account_key(&cmd.channel, &cmd.account)?;
        if key.channel == Channel::Mail && !config.accounts.contains_key(&key) {
            let msg = format!(
                "{key}: mail accounts need their server settings in the configuration file first"
            );
            return Err(CommandError::new(ErrorCode::NotFound, msg));
        }
        if key.channel == Channel::Mail
            && (cmd.senders.is_some() || cmd.remote_tools.is_some() || cmd.purpose.is_some())
        {
            return Err(CommandError::new(
                ErrorCode::InvalidRequest,
                format!("{key}: mail accounts have no senders, remote_tools or purpose"),
            ));
        }
        let saved = self.overrides().await?.remove(&key);
        let keep = |new: Option<String>, old: Option<String>| new.or(old);
        let o = SettingsOverride {
            account: key.to_string(),
            enabled: cmd.enabled,
            workspace: keep(
                cmd.workspace,
                saved.as_ref().and_then(|s| s.workspace.clone()),
            ),
            senders: keep(
                cmd.senders.map(|s| wire(&s)),
                saved.as_ref().and_then(|s| s.senders.clone()),
            ),
            remote_tools: keep(
                cmd.remote_tools.map(|s| wire(&s)),
                saved.as_ref().and_then(|s| s.remote_tools.clone()),
            ),
            purpose: keep(cmd.purpose.map(|s| wire(&s)), saved.and_then(|s| s.purpose)),
        };
        self.store.put_settings(o).await.map_err(internal)?;
        self.reconcile(&config, std::slice::from_ref(&key)).await
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
            if key.channel == Channel::Mail && !specs.contains_key(&key) {
                continue;
            }
            let spec = specs
                .entry(key.clone())
                .or_insert_with(|| default_chat_spec(&key));
            apply_override(spec, &o);
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
}

/// The fields of a `channel_set` command.
#[derive(Debug, Clone)]
pub struct ChannelSet {
    /// The channel name.
    pub channel: String,
    /// The account name.
    pub account: String,
    /// Whether it runs.
    pub enabled: bool,
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

/// A chat account created by `channel_set` alone: the safe defaults.
fn default_chat_spec(key: &AccountKey) -> AccountSpec {
    let settings = match key.channel {
        Channel::Feishu => ChannelSettings::Feishu(FeishuSettings::default()),
        _ => ChannelSettings::Wechat(WechatSettings::default()),
    };
    AccountSpec {
        key: key.clone(),
        enabled: true,
        workspace: None,
        senders: Senders::Owner,
        remote_tools: RemoteTools::None,
        approvals: Default::default(),
        purpose: Purpose::Chat,
        settings,
    }
}

fn apply_override(spec: &mut AccountSpec, o: &SettingsOverride) {
    spec.enabled = o.enabled;
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

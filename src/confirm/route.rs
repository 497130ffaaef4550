//! Where a question goes: the chat `parent` names, else the owner's chat of the `notify` account.

use std::sync::Arc;

use crate::config::{AccountKey, Channel};
use crate::conversation::ChatId;
use crate::protocol::{ComponentState, Purpose};
use crate::secrets::CredentialStore;
use crate::supervisor::{Capabilities, HealthRegistry};

/// What an account can do, whether or not it runs now (a question may be queued while its
/// account is offline); the composition root fills it from the adapters.
pub type CapabilityLookup = Arc<dyn Fn(&AccountKey) -> Capabilities + Send + Sync>;

/// The chat a question goes to, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// Ask here.
    To {
        /// The account.
        account: AccountKey,
        /// The chat on it.
        chat: ChatId,
    },
    /// Nowhere to ask: the question is stored `failed` with this reason.
    Nowhere {
        /// The account it would have gone to, when one was named.
        account: Option<AccountKey>,
        /// For people.
        reason: String,
    },
}

/// What `parent` names: an account and maybe a chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parent {
    /// `<channel>:<account>:<chat>`.
    Chat(AccountKey, ChatId),
    /// `<channel>:<account>`: that account's owner chat.
    Account(AccountKey),
    /// Absent, or not a bridge chat (another system's parent): the notify target decides.
    Elsewhere,
}

/// Reads `parent`; an error is a parent that names a bridge channel but is malformed.
pub fn parse_parent(parent: Option<&str>) -> Result<Parent, String> {
    let Some(p) = parent.map(str::trim).filter(|p| !p.is_empty()) else {
        return Ok(Parent::Elsewhere);
    };
    let mut parts = p.splitn(3, ':');
    let (channel, account, chat) = (parts.next(), parts.next(), parts.next());
    if channel.and_then(Channel::parse).is_none() {
        return Ok(Parent::Elsewhere);
    }
    let key = account
        .and_then(|a| AccountKey::parse(&format!("{}:{a}", channel.unwrap_or_default())))
        .ok_or_else(|| {
            format!(
                "parent '{p}' is not <channel>:<account> or <channel>:<account>:<chat> with an account name of letters, digits, '-' or '_'"
            )
        })?;
    Ok(match chat {
        Some(c) if !c.is_empty() => Parent::Chat(key, ChatId::new(c)),
        Some(_) => return Err(format!("parent '{p}' names an empty chat")),
        None => Parent::Account(key),
    })
}

/// Resolves a parsed parent (else `notify`) to a chat whose owner is known and can answer: the
/// owner the account reports in its health, else the one in its stored credentials. An
/// account that cannot take questions (`capabilities`: a mail account) is refused.
pub async fn resolve(
    parent: Parent,
    notify: Option<&AccountKey>,
    registry: &HealthRegistry,
    capabilities: &CapabilityLookup,
    credentials: &CredentialStore,
) -> Route {
    let (account, chat) = match parent {
        Parent::Chat(a, c) => (a, Some(c)),
        Parent::Account(a) => (a, None),
        Parent::Elsewhere => match notify {
            Some(a) => (a.clone(), None),
            None => {
                return Route::Nowhere {
                    account: None,
                    reason: "no parent chat was given and no `notify` account is configured".into(),
                };
            }
        },
    };
    let nowhere = |reason: String| Route::Nowhere {
        account: Some(account.clone()),
        reason,
    };
    if !capabilities(&account).questions {
        // Only mail accounts declare no questions today; the wording names what they are.
        return nowhere(format!(
            "{account} is a mail account; questions go to a WeChat or Feishu chat"
        ));
    }
    let health = registry.cell(&account.to_string()).map(|c| c.get());
    let Some(health) = health else {
        return nowhere(format!("{account} is not configured"));
    };
    if health.state == ComponentState::Disabled || !health.enabled {
        return nowhere(format!("{account} is disabled"));
    }
    if health.purpose == Some(Purpose::Mail) {
        return nowhere(format!(
            "{account} is a mail-report chat, where answers are not read"
        ));
    }
    // The owner the running account answers (configured `owner`, `app_owner`, paired, stored);
    // the stored one when it has not said yet (not started, or down since before this run).
    let owner = match health.user_id.clone().filter(|s| !s.is_empty()) {
        Some(o) => Some(o),
        None => owner_of(credentials, &account).await,
    };
    let Some(owner) = owner else {
        return nowhere(format!(
            "no owner is known for {account}, so nobody could answer; run `{}`",
            crate::config::command(&format!("login {} {}", account.channel, account.account))
        ));
    };
    // In a direct chat the chat id is the owner's user id.
    let chat = chat.unwrap_or_else(|| ChatId::new(owner));
    Route::To { account, chat }
}

/// The account's owner id from its stored credentials.
pub async fn owner_of(credentials: &CredentialStore, account: &AccountKey) -> Option<String> {
    let (creds, id) = (credentials.clone(), account.to_string());
    tokio::task::spawn_blocking(move || creds.load(&id))
        .await
        .ok()?
        .ok()
        .flatten()?
        .owner()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_of_two_and_three_parts_and_foreign_ones() {
        let k = AccountKey::new(Channel::Feishu, "work");
        assert_eq!(
            parse_parent(Some("feishu:work:oc_1:x")),
            Ok(Parent::Chat(k.clone(), ChatId::new("oc_1:x")))
        );
        assert_eq!(parse_parent(Some("feishu:work")), Ok(Parent::Account(k)));
        assert_eq!(parse_parent(None), Ok(Parent::Elsewhere));
        assert_eq!(parse_parent(Some("  ")), Ok(Parent::Elsewhere));
        assert_eq!(parse_parent(Some("cli:tty3")), Ok(Parent::Elsewhere));
        assert!(parse_parent(Some("wechat:bad name")).is_err());
        assert!(parse_parent(Some("wechat")).is_err());
        assert!(parse_parent(Some("wechat:phone:")).is_err());
    }
}

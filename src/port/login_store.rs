//! Storing what a platform accepted at login: the entry replaces an earlier login as a whole;
//! where the owner pairs, the owner stored before is kept and a fresh one-time code is added.
//! Shared by the `login` walk and by tests that log in without a terminal.

use crate::config::AccountKey;
use crate::port::login_flow::{OwnerBy, Verified};
use crate::port::pairing::{CODE_FIELD, CODE_TTL_SECS, EXPIRES_FIELD, new_code};
use crate::secrets::{CredentialStore, Credentials, OWNER_FIELD};

/// What storing an accepted login did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The pairing code to send to the bot, when the owner pairs.
    pub code: Option<String>,
    /// The owner an earlier login or pairing stored (kept until someone pairs anew).
    pub previous_owner: Option<String>,
}

/// Stores an accepted login for `key`, replacing an earlier one as a whole; where the owner
/// pairs, the owner stored before is kept and a fresh code is added (valid `CODE_TTL_SECS`).
pub async fn store_verified(
    store: &CredentialStore,
    key: &AccountKey,
    verified: Verified,
    now_unix: u64,
) -> Result<Stored, String> {
    let previous_owner = load(store, key)
        .await?
        .as_ref()
        .and_then(Credentials::owner)
        .filter(|_| verified.owner != OwnerBy::Login);
    let mut entry = verified.entry;
    if let Some(o) = &previous_owner {
        entry = entry.with(OWNER_FIELD, o);
    }
    let code = (verified.owner == OwnerBy::Pairing).then(new_code);
    if let Some(c) = &code {
        entry = entry
            .with(CODE_FIELD, c)
            .with(EXPIRES_FIELD, (now_unix + CODE_TTL_SECS).to_string());
    }
    let (s, id) = (store.clone(), key.to_string());
    tokio::task::spawn_blocking(move || s.save(&id, &entry))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("cannot store the login: {e}"))?;
    Ok(Stored {
        code,
        previous_owner,
    })
}

/// The account's stored login, if any.
pub async fn load(
    store: &CredentialStore,
    key: &AccountKey,
) -> Result<Option<Credentials>, String> {
    let (s, id) = (store.clone(), key.to_string());
    tokio::task::spawn_blocking(move || s.load(&id))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("cannot read the stored login of {key}: {e}"))
}

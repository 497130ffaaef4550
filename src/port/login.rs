//! The stored login, loaded for the adapter and typed by it: one place says "not logged in" and
//! names the command that fixes it, for every platform.

use crate::config::AccountSpec;
use crate::failure::{Action, general};
use crate::secrets::{CredentialStore, Credentials};
use crate::supervisor::ComponentError;

/// Why stored credentials do not make a login, in words for the account's status ("the stored
/// login is incomplete"); the fix is always the login command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginError(pub &'static str);

/// An adapter's typed login, parsed from the stored fields (who writes them: `login/<platform>`).
pub trait StoredLogin: Sized {
    /// The login in `creds`, or which field is missing.
    fn from_credentials(creds: Credentials) -> Result<Self, LoginError>;
}

/// The stored credentials themselves, for an adapter that reads them as they are.
impl StoredLogin for Credentials {
    fn from_credentials(creds: Credentials) -> Result<Self, LoginError> {
        Ok(creds)
    }
}

/// Loads and types `spec`'s login; a missing or incomplete one is fatal with the login command.
pub(super) async fn load<L: StoredLogin>(
    store: &CredentialStore,
    spec: &AccountSpec,
) -> Result<L, ComponentError> {
    let (store, id) = (store.clone(), spec.key.to_string());
    let loaded = tokio::task::spawn_blocking(move || store.load(&id))
        .await
        .map_err(|e| ComponentError::transient(general::TASK_FAILED, e.to_string()))?;
    let relogin = || Action::Relogin(spec.key.clone());
    match loaded {
        Ok(None) => Err(ComponentError::fatal(
            general::NOT_LOGGED_IN,
            "not logged in",
            relogin(),
        )),
        Err(e) => Err(ComponentError::fatal(
            general::CREDENTIALS_UNREADABLE,
            format!("cannot read credentials: {e}"),
            relogin(),
        )),
        Ok(Some(c)) => L::from_credentials(c).map_err(|LoginError(why)| {
            ComponentError::fatal(general::CREDENTIALS_INCOMPLETE, why, relogin())
        }),
    }
}

/// The command that stores credentials for an account, as a person reads it ("run `…`").
pub fn login_hint(spec: &AccountSpec) -> String {
    Action::Relogin(spec.key.clone()).to_string()
}

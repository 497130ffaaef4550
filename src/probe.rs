//! What a doctor check is ([`Check`], [`CheckId`]) and the network probes every platform's
//! checks share ([`http`]): a leaf below `doctor` and the platforms, so each platform owns its
//! probes (`Platform::probe`) and `doctor` runs them without naming one.

pub mod check;
pub mod http;

pub use check::{Check, CheckId};

use crate::config::AccountSpec;
use crate::secrets::Credentials;

/// What one account's probe is given: the account, its stored login (`None` when there is
/// none: the credentials check has already failed with its fix) and the `login` command that
/// fixes a refused one, as a person would copy it.
pub struct ProbeInput<'a> {
    /// The account (`wechat:phone`) and its settings.
    pub spec: &'a AccountSpec,
    /// Its stored login.
    pub stored: Option<&'a Credentials>,
    /// `scv-bridge login CHANNEL ACCOUNT`, with the configuration flag when it is not the default.
    pub login: &'a str,
}

//! The steps every pairing platform takes when a private message is a pairing attempt: judge it
//! (counted and logged when it does not pair), then on the right code keep the login's own
//! credential fields, add the owner, store them, and greet the new owner in reply to the code.
//!
//! The adapter keeps what only it has between those steps: which fields its login owns, and
//! attaching again with the new owner before the greeting is queued (so the greeting goes out
//! through the run that knows the owner).

use crate::conversation::Inbound;
use crate::secrets::Credentials;

use super::AccountPort;
use super::pairing::{OWNER_FIELD, Pairing};

/// A right code: who the owner is now, and the credentials in force after storing them.
#[derive(Debug)]
pub struct Paired {
    /// The sender who sent the right code.
    pub owner: String,
    /// The login's fields plus the owner, when stored; `None` when the store refused (logged):
    /// the owner is then in force until the next restart and the run keeps its credentials.
    pub stored: Option<Credentials>,
}

impl AccountPort {
    /// Judges `m` against the pending `pairing` at the current time; true when it paired.
    pub fn judge_pairing(&self, pairing: &mut Pairing, m: &Inbound) -> bool {
        let now = crate::supervisor::unix_now();
        let attempt = pairing.attempt(m.sender.as_str(), m.msg_id.as_str(), &m.text, now);
        self.pairing_attempted(attempt)
    }

    /// Makes `m`'s sender the owner of the login `login`: the fields named in `keep` (the
    /// login's own; the spent code is not among them) plus the owner, stored first.
    pub async fn pair_owner(&self, login: &Credentials, keep: &[&str], m: &Inbound) -> Paired {
        let owner = m.sender.as_str().to_string();
        let mut credentials = Credentials::default();
        for k in keep {
            if let Some(v) = login.get(k) {
                credentials = credentials.with(k, v.expose());
            }
        }
        let credentials = credentials.with(OWNER_FIELD, &owner);
        let key = &self.spec().key;
        let stored = match self.save_login(credentials.clone()).await {
            Ok(()) => Some(credentials),
            Err(e) => {
                tracing::error!(account = %key, error = %e, "paired, but cannot store the owner; it lasts until restart");
                None
            }
        };
        // The owner's id stays out of the log like every sender's.
        tracing::info!(account = %key, "owner paired");
        Paired { owner, stored }
    }

    /// Greets the new owner in reply to the code message `m`, once (idempotent by its key).
    pub async fn greet_owner(&self, m: &Inbound) {
        let key = &self.spec().key;
        let reply = crate::ids::OutboxKey::reply(key, &m.msg_id, "paired");
        let text = crate::words::Msg::Paired.text_for(self.spec().language);
        if let Err(e) = self.announce(&m.chat, &text, reply).await {
            tracing::warn!(account = %key, error = %e, "cannot queue the pairing announcement");
        }
    }
}

//! The end of a login whose owner pairs: say the code, then (with a daemon running, the only
//! thing that hears the bot) wait until someone pairs or the code expires.

use std::time::Duration;

use crate::config::{AccountKey, CommandLine};
use crate::port::pairing::{CODE_FIELD, CODE_TTL_SECS};
use crate::secrets::{CredentialStore, Credentials};

use super::said::Said;
use crate::port::login_store::load;

/// How often the command looks whether the code was used, unless the caller says.
const PAIRING_POLL: Duration = Duration::from_secs(2);

/// Where and how to wait for a pairing.
pub(super) struct Wait<'a> {
    /// Where the daemon writes the owner when it pairs one.
    pub store: &'a CredentialStore,
    /// The account pairing.
    pub key: &'a AccountKey,
    /// Whether a daemon answered the reload (only a running daemon receives the code).
    pub daemon: bool,
    /// How often to look; `None`: [`PAIRING_POLL`].
    pub poll: Option<Duration>,
    /// For the commands in what it says.
    pub commands: &'a CommandLine,
}

impl Wait<'_> {
    /// Says `code`, then waits for the pairing; the error says the code expired and what to run.
    pub(super) async fn pair(
        &self,
        said: &mut Said<'_>,
        code: &str,
        previous_owner: Option<&str>,
    ) -> Result<(), String> {
        said.line(format!(
            "To become the owner, send this code to the bot in a private chat within {} minutes:\n\n    {code}\n",
            CODE_TTL_SECS / 60
        ));
        if let Some(o) = previous_owner {
            said.line(format!(
                "The current owner ({o}) stays the owner until someone pairs with this code."
            ));
        }
        if !self.daemon {
            // Waiting here would wait for a code nobody can receive; the daemon reads the
            // stored code when it starts.
            said.line(format!(
                "Start the daemon first (`{}`, or the user service): only a running daemon receives the code. Then send it to the bot; `{}` shows the owner once paired.",
                self.commands.command("run"),
                self.commands.command("status"),
            ));
            return Ok(());
        }
        said.line("Waiting for it (Ctrl-C stops waiting; the code stays valid).".into());
        match self.wait().await {
            Some(owner) => {
                said.line(format!("Paired: {owner} is the owner of {}.", self.key));
                Ok(())
            }
            None => Err(format!(
                "the code expired unused; run `{}` again",
                self.commands
                    .command(&format!("login {} {}", self.key.channel, self.key.account))
            )),
        }
    }

    /// The owner once the code was used, `None` once it expired.
    async fn wait(&self) -> Option<String> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(CODE_TTL_SECS);
        while tokio::time::Instant::now() < deadline {
            tokio::time::sleep(self.poll.unwrap_or(PAIRING_POLL)).await;
            let Ok(Some(c)) = load(self.store, self.key).await else {
                continue;
            };
            // The daemon drops the code when it pairs someone (possibly the previous owner).
            if c.get(CODE_FIELD).is_none()
                && let Some(owner) = Credentials::owner(&c)
            {
                return Some(owner);
            }
        }
        None
    }
}

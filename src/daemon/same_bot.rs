//! Tells people when two accounts are logged in to the same bot: a warning in the log when it
//! appears and a note on each such account's status until it is gone.

use super::Core;
use crate::config::{AccountKey, CommandLine, Config};
use crate::protocol::NoteSource;
use crate::secrets::{Credentials, shared_bots};

impl Core {
    /// Reads the enabled chat accounts' stored logins and sets (or clears) their `login` note.
    pub(super) async fn show_same_bot(&self, config: &Config) {
        let keys: Vec<AccountKey> = config
            .accounts
            .values()
            .filter(|a| a.enabled && a.key.channel != crate::config::Channel::Mail)
            .map(|a| a.key.clone())
            .collect();
        let creds = self.credentials.clone();
        let logins = tokio::task::spawn_blocking(move || {
            keys.into_iter()
                .filter_map(|k| {
                    let c = creds.load(&k.to_string()).ok().flatten()?;
                    Some((k, c))
                })
                .collect::<Vec<(AccountKey, Credentials)>>()
        })
        .await
        .unwrap_or_default();
        let commands = CommandLine::for_config(&config.path);
        let shared = shared_bots(logins.iter().map(|(k, c)| (k, c)), |k, c| {
            crate::adapters::platform(k.channel).bot(c)
        });
        let registry = self.registry();
        for key in config.accounts.keys() {
            let Some(cell) = registry.cell(&key.to_string()) else {
                continue;
            };
            let note = shared
                .iter()
                .find(|s| s.accounts.contains(key))
                .map(|s| s.warning(&commands));
            if cell.note_of(NoteSource::Login) == note {
                continue;
            }
            // Once per appearance (the note remembers it), not on every reconcile.
            if let Some(n) = &note {
                tracing::warn!(account = %key, "{n}");
            }
            cell.set_note(NoteSource::Login, note);
        }
    }
}

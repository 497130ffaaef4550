//! What the account's health says about questions, and why an undelivered one failed.

use super::super::index::Question;
use super::super::{WAITING_NOTE, WINDOW_NOTE};
use super::ConfirmService;
use crate::protocol::ComponentState;
use crate::supervisor::{HealthHandle, NoteSource};

impl ConfirmService {
    /// Why an undelivered question failed at its deadline, from the account's health.
    pub(super) fn undelivered_reason(&self, q: &Question) -> String {
        let Some(account) = &q.account else {
            return "it had no chat to go to".to_string();
        };
        let health = self.registry.cell(&account.to_string()).map(|c| c.get());
        match health {
            None => format!("{account} is not configured any more, so the question was not delivered"),
            Some(h) if h.state != ComponentState::Connected => {
                let why = h
                    .error
                    .as_deref()
                    .and_then(without_our_notes)
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default();
                format!(
                    "{account} was {}{why} until the deadline, so the question was not delivered",
                    h.state.as_str()
                )
            }
            Some(_) if self.can(account).send_window => "the chat's send window stayed closed until the deadline (the owner has not written to the bot recently), so the question was not delivered".to_string(),
            Some(_) => "the question was still waiting to be sent at the deadline".to_string(),
        }
    }

    /// Says in the account's health that a question waits (connected accounts only: a down
    /// account's own error says more).
    pub(super) fn note_waiting(&self, q: &Question) {
        let Some(account) = &q.account else { return };
        let Some(cell) = self.registry.cell(&account.to_string()) else {
            return;
        };
        if cell.get().state != ComponentState::Connected {
            return;
        }
        let note = if self.can(account).send_window {
            WINDOW_NOTE
        } else {
            WAITING_NOTE
        };
        HealthHandle::new(cell).note(NoteSource::Confirm, Some(note.to_string()));
        self.lock().set_noted(q.row.seq, true);
    }

    /// Takes this service's note out of the account's health once no question of it waits.
    pub(super) fn clear_note(&self, q: &Question) {
        let Some(account) = &q.account else { return };
        let others = {
            let mut idx = self.lock();
            idx.set_noted(q.row.seq, false);
            idx.others_noted(account, q.row.seq)
        };
        if others {
            return;
        }
        let Some(cell) = self.registry.cell(&account.to_string()) else {
            return;
        };
        HealthHandle::new(cell).note(NoteSource::Confirm, None);
    }
}

/// The account's error line without this service's own notes (they say nothing about why).
fn without_our_notes(e: &str) -> Option<String> {
    let rest: Vec<&str> = e
        .split("; ")
        .filter(|p| *p != WINDOW_NOTE && *p != WAITING_NOTE)
        .collect();
    (!rest.is_empty()).then(|| rest.join("; "))
}

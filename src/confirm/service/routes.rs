//! The owner's routes (`[owner] routes`) as questions use them: a question no parent places
//! goes to the first route that can deliver now (its account attached, none of its chats
//! waiting), else to `notify` as before; if it then waits, the owner's mover takes it on.

use super::ConfirmService;
use crate::config::AccountKey;

impl ConfirmService {
    /// Takes the configured routes (at start and at every reload).
    pub fn set_routes(&self, routes: Vec<AccountKey>) {
        if let Ok(mut r) = self.routes.write() {
            *r = routes;
        }
    }

    /// The first route that can deliver now, when routes are configured and one can.
    pub(super) fn route_now(&self) -> Option<AccountKey> {
        let routes = self.routes.read().map(|r| r.clone()).unwrap_or_default();
        let (attached, waiting) = (
            self.outbox.attached_accounts(),
            self.outbox.waiting_accounts(),
        );
        routes.into_iter().find(|r| {
            let id = r.to_string();
            attached.contains(&id) && !waiting.contains(&id)
        })
    }
}

//! The reply handles of this run: each message callback's `req_id`, which carries replies in
//! the user's conversation until its window closes (spec §4.2). Written by the intake when a
//! callback arrives, read by the sender. In memory only: whether a `req_id` survives a
//! reconnect is unconfirmed, so after a restart the answer goes out proactively (§7.18).

use std::collections::HashMap;
use std::sync::Mutex;

use scv_wecom::ReplyHandle;
use scv_wecom::limits::STREAM_WINDOW;
use tokio::time::Instant;

/// Live handles by `req_id`.
#[derive(Default)]
pub(super) struct Handles {
    map: Mutex<HashMap<String, ReplyHandle>>,
}

impl Handles {
    /// Keeps `h`; handles past their window are forgotten on the way.
    pub fn insert(&self, h: ReplyHandle) {
        let Ok(mut map) = self.map.lock() else {
            return;
        };
        let now = Instant::now();
        map.retain(|_, old| now.duration_since(old.received_at) < STREAM_WINDOW);
        map.insert(h.req_id.clone(), h);
    }

    /// The handle of `req_id`, while this run holds it.
    pub fn get(&self, req_id: &str) -> Option<ReplyHandle> {
        if req_id.is_empty() {
            return None;
        }
        self.map.lock().ok()?.get(req_id).cloned()
    }
}

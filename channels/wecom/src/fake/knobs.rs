//! The test handle's knobs (faults on demand) and records (what the fake saw and answered).

use std::time::Duration;

use serde_json::Value;

use super::FakeWeCom;
use super::state::{Bubble, Ctl, Fault, FrameRecord, Sent};

impl FakeWeCom {
    /// Answers the next `n` frames of `command` with `fault` (§7.17).
    pub fn fail_next(&self, command: &str, fault: Fault, n: usize) {
        let mut st = self.shared.lock();
        let q = st.faults.entry(command.to_owned()).or_default();
        q.extend(std::iter::repeat_n(fault, n));
    }

    /// Refuses the next `n` subscribes with `code` (`45009`, `-1`, …).
    pub fn fail_subscribes(&self, code: i64, n: usize) {
        self.shared
            .lock()
            .subscribe_faults
            .extend(std::iter::repeat_n(code, n));
    }

    /// Stops (or resumes) answering pings.
    pub fn silence_pings(&self, silent: bool) {
        self.shared.lock().silent_pings = silent;
    }

    /// Delays every answer by `delay`.
    pub fn set_ack_delay(&self, delay: Duration) {
        self.shared.lock().ack_delay = delay;
    }

    /// Ends every hosted media URL now (404 from here on), as 5 minutes would (§2.6).
    pub fn expire_media(&self) {
        let now = tokio::time::Instant::now();
        for h in self.shared.lock().hosted.values_mut() {
            h.expires = now;
        }
    }

    /// Media files served (downloads that got the file, not a 404).
    pub fn media_served(&self) -> usize {
        self.shared.lock().media_served
    }

    /// Refuses proactive sends into groups with `600039`.
    pub fn refuse_group_sends(&self, refuse: bool) {
        self.shared.lock().refuse_groups = refuse;
    }

    /// Closes every open socket with a close frame carrying `code`.
    pub fn close_all(&self, code: u16) {
        self.each(|| Ctl::Close(code));
    }

    /// Drops every open socket without a close frame (as a reset looks to the client).
    pub fn drop_all(&self) {
        self.each(|| Ctl::Drop);
    }

    fn each(&self, ctl: impl Fn() -> Ctl) {
        let st = self.shared.lock();
        for c in st.conns.values() {
            let _ = c.tx.send(ctl());
        }
    }

    /// Waits until `cond` holds (true) or `timeout` passes (false), checking again after each
    /// change to the fake's state rather than on a clock.
    pub async fn wait_until(&self, timeout: Duration, cond: impl Fn(&Self) -> bool) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let changed = self.shared.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if cond(self) {
                return true;
            }
            tokio::select! {
                _ = changed => {}
                _ = tokio::time::sleep_until(deadline) => return cond(self),
            }
        }
    }

    /// Every command frame received, in order, with the code answered.
    pub fn frames(&self) -> Vec<FrameRecord> {
        self.shared.lock().frames.clone()
    }

    /// Frames of one command.
    pub fn frames_of(&self, command: &str) -> Vec<FrameRecord> {
        self.frames()
            .into_iter()
            .filter(|f| f.cmd == command)
            .collect()
    }

    /// Accepted replies and sends, in order.
    pub fn sent(&self) -> Vec<Sent> {
        self.shared.lock().sent.clone()
    }

    /// Stream bubbles as users see them.
    pub fn bubbles(&self) -> Vec<Bubble> {
        self.shared.lock().bubbles.clone()
    }

    /// Callback frames pushed, in order (the supersede event included).
    pub fn pushes(&self) -> Vec<Value> {
        self.shared.lock().pushes.clone()
    }

    /// Pushes dropped because no socket was subscribed.
    pub fn dropped_pushes(&self) -> usize {
        self.shared.lock().dropped_pushes
    }

    /// Sockets accepted so far.
    pub fn accepted(&self) -> u64 {
        self.shared.lock().accepted
    }

    /// Sockets open now.
    pub fn live_connections(&self) -> usize {
        self.shared.lock().conns.len()
    }

    /// Whether a socket is subscribed now.
    pub fn subscribed(&self) -> bool {
        self.shared.lock().current.is_some()
    }

    /// Pings received.
    pub fn pings(&self) -> usize {
        self.shared.lock().pings
    }

    /// Pings that carried a `body` key (must stay 0, §1.4).
    pub fn pings_with_body(&self) -> usize {
        self.shared.lock().ping_bodies
    }

    /// Frames sent on a `req_id` while an earlier one on it was unanswered (must stay 0).
    pub fn pipelined(&self) -> usize {
        self.shared.lock().pipelined
    }

    /// Uploaded media ids.
    pub fn media_ids(&self) -> Vec<String> {
        self.shared.lock().media_ids.keys().cloned().collect()
    }

    /// Marks `chat` as a known chat id (a user or group the bot may send to).
    pub fn know_chat(&self, chat: &str, group: bool) {
        let mut st = self.shared.lock();
        st.chats.insert(chat.to_owned());
        if group {
            st.groups.insert(chat.to_owned());
        }
    }
}

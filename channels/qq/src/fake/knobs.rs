//! The fake's faults and records, as methods of [`FakeQq`].

use std::time::Duration;

use tokio::time::Instant;

use super::records::{InteractionAck, Rejected, SentRecord, UploadRecord};
use super::state::Ctl;
use super::{FakeQq, RateLimitStyle};

impl FakeQq {
    /// The next `n` sends are refused as rate-limited, in `style`.
    pub fn rate_limit_next(&self, n: u32, style: RateLimitStyle) {
        let mut st = self.shared.lock();
        st.rate_limit_next = n;
        st.rate_style = style;
    }

    /// Typing sends fail with HTTP 500 `50059` while set.
    pub fn fail_typing(&self, on: bool) {
        self.shared.lock().typing_fails = on;
    }

    /// The next `n` `upload_part_finish` calls answer `40093001` ("retry").
    pub fn part_busy_next(&self, n: u32) {
        self.shared.lock().part_busy = n;
    }

    /// Whether the daily upload quota is used up (`upload_prepare` answers `40093002`).
    pub fn upload_quota_used(&self, used: bool) {
        self.shared.lock().upload_quota_used = used;
    }

    /// Revokes every token handed out so far (the next call gets 401 + `11244`).
    pub fn revoke_tokens(&self) {
        let mut st = self.shared.lock();
        let all: Vec<String> = st.tokens.iter().map(|t| t.value.clone()).collect();
        st.revoked.extend(all);
    }

    /// Session starts left (`Some(0)`: `gateway/bot` says none, and Identify should wait).
    pub fn set_session_starts_left(&self, left: Option<u64>) {
        self.shared.lock().session_starts_left = left;
    }

    /// Makes every existing session unresumable (the next Resume gets 4006).
    pub fn expire_sessions(&self) {
        for s in self.shared.lock().sessions.values_mut() {
            s.valid = false;
        }
    }

    /// Whether the gateway answers heartbeats (off: a zombie link).
    pub fn ack_heartbeats(&self, on: bool) {
        self.shared.lock().heartbeat_acks = on;
    }

    /// Sends op 7 Reconnect on the live socket; false when none is live.
    pub fn send_reconnect(&self) -> bool {
        self.shared
            .lock()
            .control(Ctl::Frame(serde_json::json!({"op": 7})))
    }

    /// Sends op 9 Invalid Session with `d = resumable`; false when none is live.
    pub fn send_invalid_session(&self, resumable: bool) -> bool {
        let frame = serde_json::json!({"op": 9, "d": resumable});
        self.shared.lock().control(Ctl::Frame(frame))
    }

    /// Closes the live socket with `code`; false when none is live.
    pub fn close_socket(&self, code: u16) -> bool {
        self.shared.lock().control(Ctl::Close(code))
    }

    /// Drops the live TCP connection without a close frame; false when none is live.
    pub fn drop_socket(&self) -> bool {
        self.shared.lock().control(Ctl::Drop)
    }

    /// Whether a socket is live (identified or resumed).
    pub fn live(&self) -> bool {
        self.shared.lock().live.is_some()
    }

    /// Sends accepted, in order.
    pub fn sent(&self) -> Vec<SentRecord> {
        self.shared.lock().sent.clone()
    }

    /// Requests refused, in order.
    pub fn rejected(&self) -> Vec<Rejected> {
        self.shared.lock().rejected.clone()
    }

    /// Uploads accepted.
    pub fn uploads(&self) -> Vec<UploadRecord> {
        self.shared.lock().uploads.clone()
    }

    /// Click acknowledgements received.
    pub fn interaction_acks(&self) -> Vec<InteractionAck> {
        self.shared.lock().interaction_acks.clone()
    }

    /// The `d` (last `s`) of every heartbeat received.
    pub fn heartbeats(&self) -> Vec<Option<u64>> {
        self.shared.lock().heartbeats.clone()
    }

    /// Identify payloads received (token included: tests only).
    pub fn identifies(&self) -> usize {
        self.shared.lock().identifies.len()
    }

    /// Resume requests received: `(session_id, seq)`.
    pub fn resumes(&self) -> Vec<(String, u64)> {
        self.shared.lock().resumes.clone()
    }

    /// Close codes the fake sent.
    pub fn server_closes(&self) -> Vec<u16> {
        self.shared.lock().server_closes.clone()
    }

    /// Gateway connections accepted.
    pub fn connections(&self) -> u64 {
        self.shared.lock().connections
    }

    /// Token requests received.
    pub fn token_requests(&self) -> u64 {
        self.shared.lock().token_requests
    }

    /// Waits (polling every 5 ms of tokio time) until `check` holds or `within` passes.
    pub async fn wait_until(&self, within: Duration, check: impl Fn(&FakeQq) -> bool) -> bool {
        let end = Instant::now() + within;
        loop {
            if check(self) {
                return true;
            }
            if Instant::now() >= end {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

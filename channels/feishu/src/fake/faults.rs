//! What a test makes go wrong on the fake: tokens revoked or refused, discovery and handshakes
//! failing, ACKs lost, responses withheld, messages recalled or aged, sends and patches failing,
//! connections closed or stalled.

use std::time::Duration;

use serde_json::Value;

use super::FakeFeishu;
use super::records::{EndpointFailure, HandshakeFailure};
use super::state::ConnCtl;

impl FakeFeishu {
    /// Invalidates the current tenant token; the next fetch mints a new one.
    pub fn revoke_token(&self) {
        let mut st = self.shared.lock();
        if let Some((t, _)) = st.token.take() {
            st.valid_tokens.remove(&t);
        }
    }

    /// While set, every API call answers 99991663 whatever the token.
    pub fn reject_all_tokens(&self, on: bool) {
        self.shared.lock().reject_all_tokens = on;
    }

    /// While set, the token endpoint refuses even the right secret (10014), as the platform does
    /// while the app is disabled or its secret is being reset in the console; issued tokens die.
    pub fn refuse_secret(&self, on: bool) {
        let mut st = self.shared.lock();
        st.secret_refused = on;
        if on {
            st.token = None;
            st.valid_tokens.clear();
        }
    }

    /// Makes endpoint discovery fail (or succeed again with `None`).
    pub fn set_endpoint_failure(&self, failure: Option<EndpointFailure>) {
        self.shared.lock().endpoint_failure = failure;
    }

    /// Makes WebSocket handshakes fail (or succeed again with `None`).
    pub fn set_handshake_failure(&self, failure: Option<HandshakeFailure>) {
        self.shared.lock().handshake_failure = failure;
    }

    /// Sets the ClientConfig JSON carried by later pongs.
    pub fn set_pong_config(&self, config: Value) {
        self.shared.lock().pong_config = Some(config);
    }

    /// Ignores the next `n` event ACKs as if they were lost on the wire (the events are re-pushed).
    pub fn drop_next_acks(&self, n: usize) {
        self.shared.lock().drop_acks += n;
    }

    /// While on, sends and replies are carried out but never answered, as if the response was lost.
    pub fn withhold_send_responses(&self, on: bool) {
        self.shared.lock().withhold_send_responses = on;
    }

    /// Recalls a message: patches and replies to it are refused from now on (230011).
    pub fn recall_message(&self, message_id: &str) {
        if let Some(m) = self.shared.lock().messages.get_mut(message_id) {
            m.recalled = true;
        }
    }

    /// Makes a message look `by` older (e.g. past the 14-day patch window).
    pub fn age_message(&self, message_id: &str, by: Duration) {
        if let Some(m) = self.shared.lock().messages.get_mut(message_id) {
            m.aged += by;
        }
    }

    /// Answers the next `n` message sends and replies with HTTP 500 (a transient failure).
    pub fn fail_next_sends(&self, n: usize) {
        self.shared.lock().fail_sends = n;
    }

    /// Answers the next `n` PATCH requests with HTTP 500 (a transient failure).
    pub fn fail_next_patches(&self, n: usize) {
        self.shared.lock().fail_patches = n;
    }

    /// PATCH requests received so far, refused ones included.
    pub fn patch_requests(&self) -> usize {
        self.shared.lock().patch_requests
    }

    /// Closes every live connection (server-initiated close).
    pub fn close_connections(&self) {
        self.control(ConnCtl::Close);
    }

    /// Live connections stop sending anything (no pongs, no pushes); new ones are normal.
    pub fn stall(&self) {
        self.control(ConnCtl::Stall);
    }

    fn control(&self, cmd: ConnCtl) {
        let mut st = self.shared.lock();
        st.conns.retain(|_, tx| tx.send(cmd).is_ok());
    }
}

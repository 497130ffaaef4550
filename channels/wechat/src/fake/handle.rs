//! The test handle: push inbound messages, walk QR login, inject faults, read the logs.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::Shared;
use super::qr::QrPhase;
use super::records::{Fault, RecordedRequest, RejectedSend, SentMessage, TypingCall};
use super::state::State;
use crate::endpoint::Endpoint;
use crate::message::WeixinMessage;
use crate::token::BotToken;

/// Drives and inspects a [`super::FakeServer`]. Cheap to clone.
#[derive(Clone)]
pub struct FakeHandle {
    pub(super) shared: Arc<Shared>,
}

impl FakeHandle {
    pub(super) fn new(shared: Arc<Shared>) -> FakeHandle {
        FakeHandle { shared }
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let out = f(&mut self.shared.lock());
        self.shared.bump();
        out
    }

    /// Calls to `endpoint` carried out whose answers `answer_delay` still holds back, while the
    /// client waits for them (a client that gave up no longer counts).
    pub fn answers_waiting(&self, endpoint: Endpoint) -> usize {
        self.shared.lock().answers_waiting_for(endpoint)
    }

    /// Answers at once from now on (`answer_delay` becomes zero), the answers held back now
    /// included: the platform is fast again.
    pub fn stop_delaying_answers(&self) {
        self.shared.lock().config.answer_delay = Duration::ZERO;
        self.shared.release.notify_waiters();
    }

    /// `getupdates` requests being held or answered now. A client that died mid-poll stops
    /// counting once the fake has noticed its hang-up (until then a push could still go to it).
    pub fn polls_in_flight(&self) -> usize {
        self.shared
            .polls_in_flight
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits (up to `timeout`) until the fake has read and closed every connection opened
    /// before the call; false if it has not. After a client is killed, true means no request it
    /// wrote can still reach a handler and take messages meant for the next client.
    pub async fn connections_closed(&self, timeout: Duration) -> bool {
        super::conns::closed(&self.shared, timeout).await
    }

    /// The base URL clients should use.
    pub fn base_url(&self) -> String {
        self.shared.lock().base_url.clone()
    }

    /// The bot's id (`…@im.bot`).
    pub fn bot_id(&self) -> String {
        self.shared.lock().config.bot_id.clone()
    }

    /// The token issued last (initial or by QR login); it may have been revoked since.
    pub fn bot_token(&self) -> Option<BotToken> {
        self.shared
            .lock()
            .last_issued_token
            .clone()
            .map(BotToken::new)
    }

    /// Issues an extra valid token without a QR login (earlier tokens stay valid).
    pub fn issue_token(&self) -> BotToken {
        BotToken::new(self.with(|s| s.issue_bot_token(false)))
    }

    /// Revokes every token: from now on each call answers `{"errcode":-14,...}` until a QR
    /// login (or [`FakeHandle::issue_token`]) issues a new one.
    pub fn expire_session(&self) {
        self.with(|s| s.tokens.clear());
    }

    /// Queues a text message from `from` (a held poll is released at once) and returns it
    /// as it will be delivered: next 64-bit `message_id`, fresh `context_token`.
    pub fn push_text(&self, from: &str, text: &str) -> WeixinMessage {
        self.with(|s| {
            let msg = s.text_message(from, text);
            s.push(msg)
        })
    }

    /// Queues `msg` as given (e.g. an image, a bot echo, no `message_id`); the fake fills
    /// `seq`, `to_user_id` and `create_time_ms` if unset, and always issues a new
    /// `context_token` (a user message reopens that user's send window).
    pub fn push_message(&self, msg: WeixinMessage) -> WeixinMessage {
        self.with(|s| s.push(msg))
    }

    /// Delivers an earlier pushed message again, as the real server sometimes does: with the
    /// same `message_id`, or with a new one when `new_message_id` is set. The copy gets a new
    /// `context_token` and `seq`. `None` if no message had that id.
    pub fn redeliver(&self, message_id: u64, new_message_id: bool) -> Option<WeixinMessage> {
        self.with(|s| {
            let mut copy = s.find_pushed(message_id)?;
            copy.seq = None;
            if new_message_id {
                copy.message_id = Some(s.take_message_id());
            }
            Some(s.push(copy))
        })
    }

    /// The context token of `user`'s latest inbound message.
    pub fn latest_context_token(&self, user: &str) -> Option<String> {
        self.shared.lock().latest_context_token(user)
    }

    /// Moves the fake's send-window clock forward (tokio time also moves it).
    pub fn advance_clock(&self, by: Duration) {
        self.with(|s| s.advance_clock(by));
    }

    /// Queues `fault` for the next call to `endpoint` (faults queue up in order).
    pub fn inject(&self, endpoint: Endpoint, fault: Fault) {
        self.inject_n(endpoint, fault, 1);
    }

    /// Queues `fault` for the next `times` calls to `endpoint`.
    pub fn inject_n(&self, endpoint: Endpoint, fault: Fault, times: usize) {
        self.with(|s| {
            let queue = s.faults.entry(endpoint).or_default();
            queue.extend(std::iter::repeat_n(fault, times));
        });
    }

    /// Drops every queued fault.
    pub fn clear_faults(&self) {
        self.with(|s| s.faults.clear());
    }

    /// Changes the long-poll hold (and the reported `longpolling_timeout_ms`, unless set).
    pub fn set_hold(&self, hold: Duration) {
        self.with(|s| s.config.hold = hold);
    }

    /// Changes the reported `longpolling_timeout_ms` (`None`: report the hold).
    pub fn set_suggested_hold_ms(&self, ms: Option<u64>) {
        self.with(|s| s.config.suggested_hold_ms = ms);
    }

    /// How many QR codes `get_bot_qrcode` issued.
    pub fn qr_codes_issued(&self) -> usize {
        self.shared.lock().qr.issued()
    }

    /// The `local_token_list` of each `get_bot_qrcode` call, in order.
    pub fn qr_local_token_lists(&self) -> Vec<Vec<String>> {
        self.shared.lock().qr.local_token_lists.clone()
    }

    /// The newest QR code was scanned (status `scaned`). False if none was issued.
    pub fn qr_scan(&self) -> bool {
        self.with(|s| s.qr.set_latest(QrPhase::Scanned))
    }

    /// The newest QR code is confirmed by `owner` (`…@im.wechat`): a new bot token is issued
    /// (revoking older ones unless configured otherwise) and returned. `None` if no QR.
    pub fn qr_confirm(&self, owner: &str) -> Option<BotToken> {
        self.with(|s| {
            s.qr.issued().checked_sub(1)?;
            let revoke = s.config.revoke_on_login;
            let token = s.issue_bot_token(revoke);
            let base = s
                .config
                .login_base_url
                .clone()
                .unwrap_or_else(|| s.base_url.clone());
            let credentials = json!({
                "bot_token": token,
                "ilink_bot_id": s.config.bot_id,
                "baseurl": base,
                "ilink_user_id": owner,
            });
            s.qr.set_latest(QrPhase::Confirmed { credentials });
            Some(BotToken::new(token))
        })
    }

    /// The newest QR code expired (the client must fetch a new one).
    pub fn qr_expire(&self) -> bool {
        self.with(|s| s.qr.set_latest(QrPhase::Expired))
    }

    /// The next status poll of the newest code answers `scaned_but_redirect` with `host`
    /// (e.g. the fake's own `addr()`), then the code counts as scanned.
    pub fn qr_redirect(&self, host: Option<&str>) -> bool {
        self.with(|s| {
            s.qr.set_latest(QrPhase::Redirect {
                host: host.map(str::to_owned),
            })
        })
    }

    /// The newest code asks for `code` (`need_verifycode`); three wrong codes block it.
    pub fn qr_require_verify_code(&self, code: &str) -> bool {
        self.with(|s| {
            s.qr.set_latest(QrPhase::NeedVerifyCode {
                code: code.to_owned(),
                wrong: 0,
            })
        })
    }

    /// The newest code answers `binded_redirect` (already bound to this client).
    pub fn qr_already_bound(&self) -> bool {
        self.with(|s| s.qr.set_latest(QrPhase::AlreadyBound))
    }

    /// Every accepted send, in order.
    pub fn sent(&self) -> Vec<SentMessage> {
        self.shared.lock().sent.clone()
    }

    /// When each accepted send was taken (same order as [`FakeHandle::sent`]), by
    /// `std::time::Instant`, so a bench can time what the client does after the platform took it.
    pub fn sent_at(&self) -> Vec<std::time::Instant> {
        self.shared.lock().sent_at.clone()
    }

    /// Each delivered message's id and when the poll response carrying it was made, by
    /// `std::time::Instant`, so a bench can time the client's durability window from there.
    pub fn handed_out(&self) -> Vec<(u64, std::time::Instant)> {
        self.shared.lock().handed_out.clone()
    }

    /// Every refused send, with the fake's reason.
    pub fn rejected(&self) -> Vec<RejectedSend> {
        self.shared.lock().rejected.clone()
    }

    /// Every accepted `sendtyping`.
    pub fn typing(&self) -> Vec<TypingCall> {
        self.shared.lock().typing.clone()
    }

    /// Every `notifystart`/`notifystop` that passed auth, in order.
    pub fn notifies(&self) -> Vec<Endpoint> {
        self.shared.lock().notifies.clone()
    }

    /// Every request received (recorded before faults and auth), in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// The requests to one endpoint.
    pub fn requests_to(&self, endpoint: Endpoint) -> Vec<RecordedRequest> {
        self.shared
            .lock()
            .requests
            .iter()
            .filter(|r| r.endpoint == endpoint)
            .cloned()
            .collect()
    }

    /// Waits until at least `n` sends were accepted or `timeout` passes; returns the log.
    pub async fn wait_for_sent(&self, n: usize, timeout: Duration) -> Vec<SentMessage> {
        self.wait_until(timeout, |s| s.sent.len() >= n).await;
        self.sent()
    }

    /// Waits until a send after the first `skip` ones satisfies `wanted` or `timeout` passes;
    /// returns the first such send. For tests that wait on one reply among many.
    pub async fn wait_for_sent_where(
        &self,
        skip: usize,
        timeout: Duration,
        wanted: impl Fn(&SentMessage) -> bool,
    ) -> Option<SentMessage> {
        self.wait_until(timeout, |s| s.sent.iter().skip(skip).any(&wanted))
            .await;
        self.sent().into_iter().skip(skip).find(|m| wanted(m))
    }

    /// Waits until `endpoint` received at least `n` requests; false on timeout. Use it to
    /// know a long poll is being held before pushing a message.
    pub async fn wait_for_requests(&self, endpoint: Endpoint, n: usize, timeout: Duration) -> bool {
        self.wait_until(timeout, |s| {
            s.requests.iter().filter(|r| r.endpoint == endpoint).count() >= n
        })
        .await
    }

    /// Waits until `n` calls to `endpoint` wait for their held-back answers (see
    /// [`Self::answers_waiting`]); false after `timeout`.
    pub async fn wait_for_answers_waiting(
        &self,
        endpoint: Endpoint,
        n: usize,
        timeout: Duration,
    ) -> bool {
        self.wait_until(timeout, |s| s.answers_waiting_for(endpoint) >= n)
            .await
    }

    /// Waits until at least `n` QR codes were issued; false on timeout.
    pub async fn wait_for_qr(&self, n: usize, timeout: Duration) -> bool {
        self.wait_until(timeout, |s| s.qr.issued() >= n).await
    }

    /// Resolves at the first change to the fake's state after this call (a request, a push, a
    /// send, a poll ending), so a test checks its condition again then rather than on a clock.
    /// Armed when it returns: get it before checking, and a change in between still wakes it.
    pub fn changed(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut changed = self.shared.changed.subscribe();
        async move {
            // The sender lives as long as the fake's state; gone, nothing changes any more.
            if changed.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }

    async fn wait_until(&self, timeout: Duration, ready: impl Fn(&State) -> bool) -> bool {
        let mut changed = self.shared.changed.subscribe();
        let wait = async {
            loop {
                changed.borrow_and_update();
                if ready(&self.shared.lock()) {
                    return true;
                }
                if changed.changed().await.is_err() {
                    return false;
                }
            }
        };
        tokio::time::timeout(timeout, wait).await.unwrap_or(false)
    }
}

/// The media CDN (media spec §2.6).
impl FakeHandle {
    /// Queues a user message from `from` carrying `items` (media built with [`Self::cdn_put`]),
    /// numbered and tokened like [`Self::push_text`].
    pub fn push_items(&self, from: &str, items: Vec<crate::message::MessageItem>) -> WeixinMessage {
        self.with(|s| {
            let mut msg = s.text_message(from, "");
            msg.item_list = items;
            s.push(msg)
        })
    }

    /// The CDN base URL to configure as the account's `cdn_base_url`.
    pub fn cdn_base_url(&self) -> String {
        format!("{}cdn", self.shared.lock().base_url)
    }

    /// Stores inbound media: `plain` encrypted with `key` (as it is without one); returns the
    /// `encrypt_query_param` to put in the item.
    pub fn cdn_put(&self, plain: &[u8], key: Option<&crate::cdn::MediaKey>) -> String {
        self.with(|s| s.cdn.put(plain, key))
    }

    /// Stores `bytes` as they are (a truncated or damaged ciphertext).
    pub fn cdn_put_raw(&self, bytes: Vec<u8>) -> String {
        self.with(|s| s.cdn.put_raw(bytes))
    }

    /// The full download URL of a parameter (what `media.full_url` carries).
    pub fn cdn_full_url(&self, param: &str) -> String {
        format!(
            "{}/download?encrypted_query_param={param}",
            self.cdn_base_url()
        )
    }

    /// Media items the bot sent and the fake accepted, decrypted, in order.
    pub fn sent_media(&self) -> Vec<super::SentMedia> {
        self.shared.lock().cdn.sent_media.clone()
    }

    /// CDN uploads accepted so far (each stored one file).
    pub fn cdn_uploads(&self) -> usize {
        self.shared.lock().cdn.uploads_done
    }

    /// Queues a fault for the next CDN upload.
    pub fn cdn_upload_fault(&self, fault: super::UploadFault) {
        self.with(|s| s.cdn.upload_faults.push_back(fault));
    }

    /// CDN downloads and upload attempts received so far.
    pub fn cdn_requests(&self) -> (usize, usize) {
        let s = self.shared.lock();
        (s.cdn.downloads_seen, s.cdn.upload_attempts)
    }

    /// Answers the next download with `status` (404, 500; 0 never answers).
    pub fn cdn_download_fault(&self, status: u16) {
        self.with(|s| s.cdn.download_faults.push_back(status));
    }

    /// `getuploadurl` answers `upload_param` only (no `upload_full_url`).
    pub fn cdn_param_only(&self, on: bool) {
        self.with(|s| s.cdn.param_only = on);
    }

    /// Waits until `n` media items were accepted, or `timeout` passes.
    pub async fn wait_for_media(&self, n: usize, timeout: Duration) -> Vec<super::SentMedia> {
        let mut changed = self.shared.changed.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            changed.borrow_and_update();
            let got = self.sent_media();
            if got.len() >= n {
                return got;
            }
            tokio::select! {
                r = changed.changed() => if r.is_err() { return got },
                _ = tokio::time::sleep_until(deadline) => return got,
            }
        }
    }
}

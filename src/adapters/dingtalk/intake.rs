//! One run's intake (spec §1–§2): the Stream connection (fresh ticket per socket, SYSTEM pings
//! answered, warm reconnect on `disconnect`, the idle watchdog against zombie sockets: all in
//! `scv_dingtalk::stream`), each robot message journaled before its push is acknowledged, the
//! owner's pairing, and health from the link's own evidence (a frame of any kind, a handshake).
//!
//! Robot messages are not pushed again (spec §1.6): the journal is the only copy once the ACK
//! leaves, so nothing is ACKed before its commit; a crash before it loses the push, which is
//! the platform's own gap (an unACKed push is re-pushed only in some reports). Duplicates that
//! do come (a new push id, the same `msgId`) are dropped by the journal's dedupe.

use std::sync::Arc;
use std::time::Duration;

use scv_dingtalk::Client;
use scv_dingtalk::stream::{
    AckHandle, AckReply, Delivery, Inbound as Push, LinkState, LinkStatus, StreamConnection,
    StreamOptions,
};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::inbound::{Taken, take};
use super::login::{CLIENT_ID_FIELD, CLIENT_SECRET_FIELD};
use super::questions;
use super::sender::DingTalkSender;
use crate::conversation::{Attachment, Inbound};
use crate::port::pairing::Pairing;
use crate::port::{AccountPort, LinkParts, StorePause};
use crate::secrets::Credentials;
use crate::supervisor::{ComponentError, HealthHandle, NoteSource, unix_now};

/// Pushes waiting to be journaled: small, so a burst waits in the socket (the connection stops
/// reading while it is full) rather than in memory.
const QUEUE: usize = 64;
/// How long the connection may take to close its sockets after the run is cancelled.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// What `run_inner` found out before connecting.
pub(super) struct Setup {
    pub port: AccountPort,
    pub client: Client,
    pub owner: Option<String>,
    pub pairing: Option<Pairing>,
    pub credentials: Credentials,
    pub sender: Arc<DingTalkSender>,
    /// The replies the sender held after a restart, which the owner's `/again` releases.
    pub held: crate::port::held::HeldSends,
    pub health: HealthHandle,
    pub idle_timeout: Duration,
}

/// One run of the account, attached to the pipeline.
pub(super) struct Run {
    s: Setup,
    /// Dropping it (the run ending) stops the account's chat workers.
    attachment: Attachment,
    pause: StorePause,
    note: Option<String>,
    robot_code_warned: bool,
    /// The robot's corp id (stored; learned from the messages taken).
    corp: Option<String>,
    /// Question cards answered in this run.
    answered: questions::Answered,
}

impl Run {
    /// Attaches the account and says who the app and the owner are.
    pub fn start(s: Setup) -> Run {
        let attachment = s.port.attach(link(&s, s.owner.clone()));
        let app = s.client.options().credentials.client_id.clone();
        s.health.set_ids(Some(app), s.owner.clone());
        let mut run = Run {
            attachment,
            pause: StorePause::new(&s.health),
            s,
            note: None,
            robot_code_warned: false,
            corp: None,
            answered: questions::Answered::default(),
        };
        run.refresh_note();
        run
    }

    /// Runs the connection until cancelled or a failure only a person can fix (bad
    /// credentials, the app not in Stream mode) ends it.
    pub async fn run(&mut self, cancel: CancellationToken) -> Result<(), ComponentError> {
        let options = StreamOptions {
            idle_timeout: self.s.idle_timeout,
            ..StreamOptions::default()
        };
        self.corp = self
            .s
            .port
            .state()
            .get(questions::CORP_STATE)
            .await
            .ok()
            .flatten();
        let conn = StreamConnection::new(self.s.client.clone(), options);
        let link = tokio::spawn(watch_link(conn.status(), self.s.health.clone()));
        let (tx, mut rx) = mpsc::channel(QUEUE);
        let stop = cancel.child_token();
        let stream = conn.run(tx, stop.clone());
        tokio::pin!(stream);
        let key = self.s.port.spec().key.clone();
        let ended = loop {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => break None,
                r = &mut stream => break Some(r),
                d = rx.recv() => match d {
                    Some(d) => if !self.take(d, &cancel).await { break None },
                    None => break None,
                },
            }
        };
        let result = match ended {
            Some(r) => r,
            None => {
                stop.cancel();
                tokio::time::timeout(CLOSE_GRACE, stream)
                    .await
                    .unwrap_or(Ok(()))
            }
        };
        // Awaited, so no status change of this run lands after its failure is reported.
        link.abort();
        let _ = link.await;
        result.map_err(|e| {
            tracing::warn!(account = %key, error = %e, "dingtalk stream stopped");
            super::failure::failure(&e, &key)
        })
    }

    /// Handles one push: journal a message, then ACK it; everything else ACKed with its drop
    /// counted. False when cancelled before a message was stored (it is then not ACKed).
    async fn take(&mut self, d: Delivery, cancel: &CancellationToken) -> bool {
        let key = self.s.port.spec().key.clone();
        let parsed = d.parse();
        let ack = d.ack;
        let m = match parsed {
            Ok(Push::Message(m)) => m,
            Ok(Push::CardCallback(c)) => {
                let reply = self.press(&c).await;
                return acked(&key, ack, reply);
            }
            Ok(Push::Event { .. } | Push::Other) => {
                self.s.port.dropped("unsupported");
                return acked(&key, ack, AckReply::NotHandled);
            }
            Err(e) => {
                // It will not read better later: counted, then ACKed.
                tracing::info!(account = %key, error = %e, "unreadable push");
                self.s.port.dropped("undecodable");
                return acked(&key, ack, AckReply::Done);
            }
        };
        let robot_code = self.s.client.robot_code().to_string();
        if !self.robot_code_warned && m.robot_code_differs(&robot_code) {
            self.robot_code_warned = true;
            tracing::warn!(account = %key, "a message names another robot code than the client id; sends use the client id (spec §3)");
        }
        match take(&key, &m) {
            Taken::Dropped(reason) => self.s.port.dropped(reason),
            Taken::Message(i) if self.is_pairing_attempt(&i, m.is_direct()) => {
                self.pairing_attempt(&i).await
            }
            Taken::Message(i)
                if crate::port::held::is_again(&i.text)
                    && self.s.owner.as_deref() == Some(i.sender.as_str()) =>
            {
                // The held replies are its answer; replayed, it queues none of them twice.
                self.s.held.answer_again(&self.s.port, &i).await;
            }
            Taken::Message(i) => {
                if !self.journal(i, cancel).await {
                    return false;
                }
                // Taken, so from the robot's own corp: the corp a press must come from.
                let state = self.s.port.state().clone();
                questions::learn_corp(&state, &mut self.corp, &m.chatbot_corp_id).await;
            }
        }
        acked(&key, ack, AckReply::Done)
    }

    /// A press on a card: judged against the owner and the robot's corp, answered through
    /// the port's answers; the ACK carries the card's update.
    async fn press(&mut self, c: &scv_dingtalk::callback::CardCallback) -> AckReply {
        let answers = self.s.port.answers();
        let spec = self.s.port.spec();
        let cx = questions::PressContext {
            account: &spec.key,
            owner: self.s.owner.as_deref(),
            corp: self.corp.as_deref(),
            answers: answers.as_ref(),
            language: spec.language,
        };
        let (reply, dropped) = questions::press(&cx, &mut self.answered, c).await;
        if let Some(reason) = dropped {
            self.s.port.dropped(reason);
        }
        reply
    }

    /// Journals `message`; while the journal cannot commit it is kept and retried, and no other
    /// push is read meanwhile. False when cancelled before it was stored.
    async fn journal(&self, message: Inbound, cancel: &CancellationToken) -> bool {
        let key = &self.s.port.spec().key;
        let arrived = std::time::Instant::now();
        let mut attempt = 0;
        loop {
            let stored = self
                .s
                .port
                .accept_with(vec![message.clone()], arrived, |_| Ok(()))
                .await;
            let Err(e) = stored else {
                self.pause.committed(key);
                return true;
            };
            self.pause.failed(key, &e);
            if self.pause.wait(attempt, cancel).await {
                return false;
            }
            attempt += 1;
        }
    }

    /// A direct, code-shaped message from an org member while a code is open (or a replay of
    /// one judged), checked before any policy so the code never reaches the agent. Never in a
    /// group (spec §3), never from outside the org (no staff id: the chat is not `u:`).
    fn is_pairing_attempt(&self, m: &Inbound, direct: bool) -> bool {
        direct
            && m.chat.as_str().starts_with("u:")
            && crate::port::pairing::looks_like_code(&m.text)
            && self
                .s
                .pairing
                .as_ref()
                .is_some_and(|p| p.is_open(unix_now()) || p.has_judged(m.msg_id.as_str()))
    }

    async fn pairing_attempt(&mut self, m: &Inbound) {
        let Some(p) = self.s.pairing.as_mut() else {
            return;
        };
        if self.s.port.judge_pairing(p, m) {
            self.pair(m).await;
        }
        self.refresh_note();
    }

    /// Makes `m`'s sender (a staff id of the robot's corp) the owner: stored first, then in
    /// force, then announced to them.
    async fn pair(&mut self, m: &Inbound) {
        // The login's own fields; the spent code goes.
        let keep = [CLIENT_ID_FIELD, CLIENT_SECRET_FIELD];
        let paired = self.s.port.pair_owner(&self.s.credentials, &keep, m).await;
        if let Some(stored) = paired.stored {
            self.s.credentials = stored;
        }
        let owner = paired.owner;
        self.s.owner = Some(owner.clone());
        // A new link carries the new owner; the old attachment is dropped after it.
        self.attachment = self.s.port.attach(link(&self.s, Some(owner.clone())));
        let app = self.s.client.options().credentials.client_id.clone();
        self.s.health.set_ids(Some(app), Some(owner));
        self.s.port.greet_owner(m).await;
    }

    /// Says why nobody is answered, when that is the case.
    fn refresh_note(&mut self) {
        let spec = self.s.port.spec();
        let note = crate::port::pairing::owner_note(
            spec,
            self.s.owner.is_some(),
            self.s.pairing.as_ref(),
            "the robot in a direct message",
        );
        if note != self.note {
            self.note = note.clone();
            self.s.health.note(NoteSource::Account, note);
        }
    }
}

/// Sends one ACK; a socket already gone is not an error of this push (it is journaled). True.
fn acked(key: &crate::ids::AccountKey, ack: AckHandle, reply: AckReply) -> bool {
    if ack.ack(reply).is_err() {
        tracing::debug!(account = %key, "the socket that delivered a push is gone; its ACK was not sent");
    }
    true
}

/// Moves the account's health with the link: any frame (SYSTEM pings included) or a new
/// socket's handshake is the platform answering; a socket that failed shows as disconnected
/// with its cause until the next one is up. WebSocket pongs are not evidence: a zombie socket
/// answers them (spec §1.8).
async fn watch_link(mut status: watch::Receiver<LinkStatus>, health: HealthHandle) {
    let (mut frame, mut sockets) = (None, 0);
    while status.changed().await.is_ok() {
        let s = status.borrow_and_update().clone();
        if (s.last_frame.is_some() && s.last_frame != frame) || s.sockets != sockets {
            frame = s.last_frame;
            sockets = s.sockets;
            crate::port::evidence::heard(&health);
        } else if s.state == LinkState::Disconnected
            && let Some(e) = &s.last_error
        {
            health.disconnected(format!("DingTalk Stream: {e}; reconnecting"));
        }
    }
}

/// What this run tells the pipeline about the account with `owner`.
fn link(s: &Setup, owner: Option<String>) -> LinkParts {
    LinkParts {
        health: s.health.clone(),
        label: "DingTalk",
        capabilities: super::CAPABILITIES,
        owner,
        sender: s.sender.clone(),
    }
}

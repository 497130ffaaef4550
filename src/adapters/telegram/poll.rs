//! One run's intake: the long poll, each batch journaled with the offset that confirms it, the
//! owner's pairing and button presses, and health from the polls themselves.

use std::sync::Arc;

use scv_telegram::{BotInfo, Client, ErrorClass, FatalReason, Offset};
use tokio_util::sync::CancellationToken;

use super::inbound::{ReplyRef, Taken, take};
use super::login::{BOT_ID_FIELD, TOKEN_FIELD, USERNAME_FIELD};
use super::sender::TelegramSender;
use super::{buttons, failure, state};
use crate::conversation::{Attachment, Inbound};
use crate::port::held::{self, HeldSends};
use crate::port::pairing::Pairing;
use crate::port::{AccountPort, LinkParts, StorePause};
use crate::secrets::Credentials;
use crate::supervisor::{ComponentError, HealthHandle, NoteSource, unix_now};

/// What `run_inner` found out before the first poll.
pub(super) struct Setup {
    pub port: AccountPort,
    pub client: Client,
    pub bot: BotInfo,
    pub owner: Option<String>,
    pub pairing: Option<Pairing>,
    pub credentials: Credentials,
    pub sender: Arc<TelegramSender>,
    /// The replies the sender held after a restart, which the owner's `/again` releases.
    pub held: HeldSends,
    pub health: HealthHandle,
    pub offset: Offset,
    pub confirm_timeout: std::time::Duration,
}

/// One run of the account, attached to the pipeline.
pub(super) struct Run {
    s: Setup,
    /// Dropping it (the run ending) stops the account's chat workers.
    attachment: Attachment,
    pause: StorePause,
    /// `deleteWebhook` is called once per run, then a webhook coming back is fatal.
    webhook_deleted: bool,
    note: Option<String>,
}

impl Run {
    /// Attaches the account and says who the bot and the owner are.
    pub fn start(s: Setup) -> Run {
        let attachment = s.port.attach(link(&s, s.owner.clone()));
        s.health
            .set_ids(Some(s.bot.id.to_string()), s.owner.clone());
        // `getMe` just answered with this bot: Telegram is reachable and takes the token. The
        // first poll may then be held for its whole time with nothing to say.
        s.health.connected();
        let mut run = Run {
            attachment,
            pause: StorePause::new(&s.health),
            s,
            webhook_deleted: false,
            note: None,
        };
        run.refresh_note();
        run
    }

    /// Polls until cancelled (then confirms the stored offset once) or a failure ends the run.
    pub async fn poll(&mut self, cancel: CancellationToken) -> Result<(), ComponentError> {
        let key = self.s.port.spec().key.clone();
        loop {
            let polled = tokio::select! {
                biased;
                _ = cancel.cancelled() => break,
                r = self.s.client.get_updates(self.s.offset) => r,
            };
            let batch = match polled {
                Ok(b) => b,
                Err(e) => {
                    self.poll_failed(&e).await?;
                    continue;
                }
            };
            // A poll that returns, empty or not, is Telegram answering.
            crate::port::evidence::heard(&self.s.health);
            if !self.take(batch, &cancel).await {
                break;
            }
        }
        // The in-flight poll is dropped; tell the server what is stored, briefly (spec §1.2).
        let confirm = self.s.client.confirm(self.s.offset);
        match tokio::time::timeout(self.s.confirm_timeout, confirm).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::debug!(account = %key, error = %e, "confirming the offset failed")
            }
            Err(_) => tracing::debug!(account = %key, "confirming the offset timed out"),
        }
        Ok(())
    }

    /// A poll that failed: a webhook is deleted once, a poll past its deadline shows as
    /// `disconnected` and polls again; anything else ends the run by the account's table.
    async fn poll_failed(&mut self, e: &scv_telegram::Error) -> Result<(), ComponentError> {
        let key = &self.s.port.spec().key;
        let webhook = matches!(
            e.class(),
            ErrorClass::Fatal {
                reason: FatalReason::WebhookSet,
                ..
            }
        );
        if webhook && !self.webhook_deleted {
            self.webhook_deleted = true;
            tracing::warn!(account = %key, "a webhook is set on this bot; deleting it (pending updates kept) so polling works");
            return self
                .s
                .client
                .delete_webhook()
                .await
                .map_err(|e| failure::failure(&e, key));
        }
        if let scv_telegram::Error::Timeout { after, .. } = e {
            self.s.health.disconnected(format!(
                "Telegram did not answer the long poll within {} s; polling again (if this lasts, check this machine's network)",
                after.as_secs()
            ));
            return Ok(());
        }
        Err(failure::failure(e, key))
    }

    /// Reads a batch, journals its messages with the next offset, handles presses and pairing.
    /// False when cancelled before the batch was stored.
    async fn take(&mut self, batch: scv_telegram::Batch, cancel: &CancellationToken) -> bool {
        let next = batch.next_offset(self.s.offset);
        if batch.is_empty() && next == self.s.offset {
            return true;
        }
        let key = self.s.port.spec().key.clone();
        for _ in 0..batch.skipped {
            self.s.port.dropped("undecodable");
        }
        let mut pending = Vec::new();
        for update in &batch.updates {
            match take(&key, &self.s.bot, update) {
                Taken::Message(m) if self.is_pairing_attempt(&m) => {
                    // Earlier messages first, so they are judged under the owner they met.
                    if !self
                        .journal(std::mem::take(&mut pending), None, cancel)
                        .await
                    {
                        return false;
                    }
                    self.pairing_attempt(&m).await;
                }
                Taken::Message(m) if self.is_again(&m) => {
                    // Replayed after a crash, it queues nothing twice.
                    self.s.held.answer_again(&self.s.port, &m).await;
                }
                Taken::Message(m) | Taken::Stop(m) => pending.push(m),
                Taken::Press(q) => {
                    let owner = self.s.owner.clone();
                    let answers = self.s.port.answers();
                    let dropped = buttons::handle(
                        &self.s.client,
                        &key,
                        owner.as_deref(),
                        answers.as_ref(),
                        &q,
                    )
                    .await;
                    if let Some(reason) = dropped {
                        self.s.port.dropped(reason);
                    }
                }
                Taken::Dropped(reason) => self.s.port.dropped(reason),
            }
        }
        if !self.journal(pending, Some(next), cancel).await {
            return false;
        }
        self.s.offset = next;
        true
    }

    /// Journals `batch` and, in the same commit, `offset`; while the journal cannot commit the
    /// batch is kept and retried (no poll leaves meanwhile, so the offset cannot move past it).
    /// False when cancelled before it was stored.
    async fn journal(
        &self,
        batch: Vec<Inbound>,
        offset: Option<Offset>,
        cancel: &CancellationToken,
    ) -> bool {
        if batch.is_empty() && offset.is_none() {
            return true;
        }
        let key = &self.s.port.spec().key;
        let (bot, arrived) = (self.s.bot.id, std::time::Instant::now());
        let mut attempt = 0;
        loop {
            let stored = self
                .s
                .port
                .accept_with(batch.clone(), arrived, move |s| match offset {
                    Some(o) => state::save_offset_in(s, bot, o),
                    None => Ok(()),
                })
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

    /// The owner's `/again`: the replies held in this chat go again (see [`held`]).
    fn is_again(&self, m: &Inbound) -> bool {
        held::is_again(&m.text) && self.s.owner.as_deref() == Some(m.sender.as_str())
    }

    /// A private, code-shaped message while a code is open (or a replay of one judged), checked
    /// before any policy so the code never reaches the agent.
    fn is_pairing_attempt(&self, m: &Inbound) -> bool {
        !ReplyRef::parse(&m.reply).g
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

    /// Makes `m`'s sender the owner: stored first, then in force, then announced to them.
    async fn pair(&mut self, m: &Inbound) {
        // The login's own fields; the spent code goes.
        let keep = [TOKEN_FIELD, BOT_ID_FIELD, USERNAME_FIELD];
        let paired = self.s.port.pair_owner(&self.s.credentials, &keep, m).await;
        if let Some(stored) = paired.stored {
            self.s.credentials = stored;
        }
        let owner = paired.owner;
        self.s.owner = Some(owner.clone());
        // A new link carries the new owner; the old attachment is dropped after it.
        self.attachment = self.s.port.attach(link(&self.s, Some(owner.clone())));
        self.s
            .health
            .set_ids(Some(self.s.bot.id.to_string()), Some(owner));
        self.s.port.greet_owner(m).await;
    }

    /// Says why nobody is answered, when that is the case.
    fn refresh_note(&mut self) {
        let spec = self.s.port.spec();
        let note = crate::port::pairing::owner_note(
            spec,
            self.s.owner.is_some(),
            self.s.pairing.as_ref(),
            "the bot in a private chat",
        );
        if note != self.note {
            self.note = note.clone();
            self.s.health.note(NoteSource::Account, note);
        }
    }
}

/// What this run tells the pipeline about the account with `owner`.
fn link(s: &Setup, owner: Option<String>) -> LinkParts {
    LinkParts {
        health: s.health.clone(),
        label: "Telegram",
        capabilities: super::CAPABILITIES,
        owner,
        sender: s.sender.clone(),
    }
}

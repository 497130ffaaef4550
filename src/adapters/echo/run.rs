//! One Echo account's run: the listening connection, each message journaled before it is
//! acknowledged, the owner's pairing through the port, and sends on a connection of their own.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

use super::EchoSettings;
use super::login::{BOT_FIELD, TOKEN_FIELD, address};
use super::wire::{Conn, WireError, open};
use crate::conversation::Attachment;
use crate::conversation::{
    ChatSender, Inbound, Outbound, ReplyContext, SendError, SendLimits, Sent,
};
use crate::failure::{Action, Failure, general};
use crate::ids::{ChatId, PlatformMsgId, SenderId};
use crate::port::pairing::{CODE_FIELD, EXPIRES_FIELD, OWNER_FIELD, Pairing};
use crate::port::{AccountPort, LinkParts, LoginError, StoredLogin};
use crate::secrets::Credentials;
use crate::supervisor::{Capabilities, Component, ComponentError, HealthHandle};

/// Plain text only: no typing, buttons or edits.
pub(super) const CAPABILITIES: Capabilities = Capabilities {
    typing: false,
    buttons: false,
    edit: false,
    questions: true,
    send_window: false,
    voice_bubbles: false,
};

/// The component for one Echo account.
pub(super) fn build(port: AccountPort) -> Arc<dyn Component> {
    Arc::new(EchoComponent { port })
}

struct EchoComponent {
    port: AccountPort,
}

/// What the stored login holds.
struct Login {
    token: String,
    owner: Option<String>,
    pairing: Option<Pairing>,
    credentials: Credentials,
}

impl StoredLogin for Login {
    fn from_credentials(creds: Credentials) -> Result<Self, LoginError> {
        let field = |n: &str| creds.get(n).map(|s| s.expose().to_string());
        let Some(token) = field(TOKEN_FIELD).filter(|t| !t.is_empty()) else {
            return Err(LoginError("the stored login has no Echo token"));
        };
        let pairing = field(CODE_FIELD)
            .zip(field(EXPIRES_FIELD).and_then(|e| e.parse().ok()))
            .map(|(code, expires)| Pairing::new(code, expires));
        Ok(Login {
            token,
            owner: field(OWNER_FIELD),
            pairing,
            credentials: creds,
        })
    }
}

impl Component for EchoComponent {
    fn capabilities(&self) -> Capabilities {
        CAPABILITIES
    }

    fn run(
        self: Arc<Self>,
        health: HealthHandle,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<(), ComponentError>> {
        Box::pin(async move { self.run_once(health, cancel).await })
    }
}

impl EchoComponent {
    async fn run_once(
        &self,
        health: HealthHandle,
        cancel: CancellationToken,
    ) -> Result<(), ComponentError> {
        let mut login: Login = self.port.login().await?;
        let settings = EchoSettings::of(&self.port.spec().settings);
        let address = address(&settings);
        let owner = settings.owner.clone().or(login.owner.clone());
        let mut conn = open(&address, &login.token, json!({"listen": true}))
            .await
            .map_err(|e| self.failure(e))?;
        health.connected();
        health.set_ids(Some(conn.bot.clone()), owner.clone());
        let sender = Arc::new(EchoSender {
            address,
            token: login.token.clone(),
        });
        let mut run = Run {
            port: &self.port,
            bot: conn.bot.clone(),
            health,
            sender,
            owner,
            attachment: None,
        };
        run.attach();
        loop {
            let line = tokio::select! {
                _ = cancel.cancelled() => return Ok(()),
                line = conn.lines.next_line() => line,
            };
            let line = match line {
                Ok(Some(line)) => line,
                Ok(None) => return Err(self.failure(WireError::Unreachable("closed".into()))),
                Err(e) => return Err(self.failure(WireError::Unreachable(e.kind().to_string()))),
            };
            let Some(m) = self.inbound(&line) else {
                self.port.dropped("undecodable");
                continue;
            };
            run.take(&mut login, &m).await?;
            ack(&mut conn, &m).await.map_err(|e| self.failure(e))?;
        }
    }

    /// The message a pushed line carries, if it reads.
    fn inbound(&self, line: &str) -> Option<Inbound> {
        let v: Value = serde_json::from_str(line).ok()?;
        let m = v.get("msg")?;
        let s = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_string);
        Some(Inbound {
            account: self.port.spec().key.clone(),
            chat: ChatId::new(s("chat")?),
            sender: SenderId::new(s("from")?),
            msg_id: PlatformMsgId::new(s("id")?),
            text: s("text")?,
            at_unix_ms: 0,
            reply: ReplyContext::default(),
            media: Vec::new(),
        })
    }

    /// A wire error as the account's failure: a refused token needs a login, the rest heals.
    fn failure(&self, e: WireError) -> Failure {
        let key = self.port.spec().key.clone();
        match e {
            WireError::Refused(_) => {
                Failure::fatal(general::NOT_LOGGED_IN, e.to_string(), Action::Relogin(key))
            }
            WireError::Unreachable(_) => Failure::transient(general::NETWORK, e.to_string()),
        }
    }
}

/// Acknowledges `m` after it was journaled (or judged as a pairing attempt).
async fn ack(conn: &mut Conn, m: &Inbound) -> Result<(), WireError> {
    let line = format!("{}\n", json!({"ack": m.msg_id.as_str()}));
    conn.write
        .write_all(line.as_bytes())
        .await
        .map_err(|e| WireError::Unreachable(e.kind().to_string()))
}

/// What one run holds between messages.
struct Run<'a> {
    port: &'a AccountPort,
    bot: String,
    health: HealthHandle,
    sender: Arc<EchoSender>,
    owner: Option<String>,
    attachment: Option<Attachment>,
}

impl Run<'_> {
    /// Attaches to the pipeline with the owner known now (again after pairing).
    fn attach(&mut self) {
        self.attachment = Some(self.port.attach(LinkParts {
            health: self.health.clone(),
            label: "Echo",
            capabilities: CAPABILITIES,
            owner: self.owner.clone(),
            sender: self.sender.clone(),
        }));
    }

    /// A pairing attempt is judged by the port; anything else is journaled.
    async fn take(&mut self, login: &mut Login, m: &Inbound) -> Result<(), ComponentError> {
        let pairing = login.pairing.as_mut().filter(|_| self.owner.is_none());
        if let Some(p) = pairing
            && crate::port::pairing::looks_like_code(&m.text)
        {
            if self.port.judge_pairing(p, m) {
                let paired = self
                    .port
                    .pair_owner(&login.credentials, &[TOKEN_FIELD, BOT_FIELD], m)
                    .await;
                if let Some(stored) = paired.stored {
                    login.credentials = stored;
                }
                self.owner = Some(paired.owner);
                self.attach();
                self.health
                    .set_ids(Some(self.bot.clone()), self.owner.clone());
                self.port.greet_owner(m).await;
            }
            return Ok(());
        }
        self.port
            .accept(vec![m.clone()])
            .await
            .map(|_| ())
            .map_err(|e| Failure::transient(general::STORE, e.to_string()))
    }
}

/// Sends each message on a connection of its own.
struct EchoSender {
    address: String,
    token: String,
}

impl ChatSender for EchoSender {
    fn limits(&self) -> SendLimits {
        SendLimits {
            max_chars: 4000,
            min_interval: std::time::Duration::ZERO,
        }
    }

    fn send<'a>(&'a self, msg: &'a Outbound) -> BoxFuture<'a, Result<Sent, SendError>> {
        Box::pin(async move {
            let say = json!({"say": {
                "chat": msg.chat.as_str(),
                "text": msg.text,
                "key": msg.idempotency_key,
            }});
            let mut conn = open(&self.address, &self.token, say)
                .await
                .map_err(|e| SendError::transient(general::NETWORK, e.to_string()))?;
            super::wire::next(&mut conn.lines)
                .await
                .map_err(|e| SendError::transient(general::NETWORK, e.to_string()))?;
            Ok(Sent::default())
        })
    }
}

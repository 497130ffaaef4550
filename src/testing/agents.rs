//! Agents and turn requests the tests and benches share (each used to carry its own copy).

use std::sync::Mutex;

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::agent::{Agent, AgentError, SessionKey, TurnEvents, TurnOutput, TurnRequest};
use crate::ids::{AccountKey, Channel, ChatId};

/// An agent that answers at once with `answer(prompt)` and remembers every prompt, for tests
/// and benches that measure or check the bridge, not the agent. `Default` echoes:
/// `echo: <prompt>` (what the end-to-end tests look for in the chat).
pub struct InstantAgent {
    answer: fn(&str) -> String,
    prompts: Mutex<Vec<String>>,
    /// Per turn, whether it was offered the owner tools.
    offered: Mutex<Vec<bool>>,
}

impl InstantAgent {
    /// An agent whose answer to `prompt` is `answer(prompt)`.
    pub fn new(answer: fn(&str) -> String) -> Self {
        InstantAgent {
            answer,
            prompts: Mutex::new(Vec::new()),
            offered: Mutex::new(Vec::new()),
        }
    }

    /// Per turn, in order, whether the pipeline offered it the owner tools.
    pub fn offered_owner_tools(&self) -> Vec<bool> {
        self.offered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Every prompt the agent saw, in order.
    pub fn prompts(&self) -> Vec<String> {
        self.prompts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Default for InstantAgent {
    fn default() -> Self {
        InstantAgent::new(|prompt| format!("echo: {prompt}"))
    }
}

impl Agent for InstantAgent {
    fn turn(
        &self,
        req: TurnRequest,
        _cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<TurnOutput, AgentError>> {
        self.prompts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(req.prompt.clone());
        self.offered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(req.owner_tools.is_some());
        let text = (self.answer)(&req.prompt);
        Box::pin(async move {
            Ok(TurnOutput {
                text,
                usage: None,
                files: Vec::new(),
                ..Default::default()
            })
        })
    }

    fn reset<'a>(&'a self, _session: &'a SessionKey) -> BoxFuture<'a, Result<(), AgentError>> {
        Box::pin(async { Ok(()) })
    }
}

/// A turn of the WeChat account `phone` in `chat`: tools allowed, nobody to ask, no workspace,
/// no attachments, nobody listening to its events. Callers change what they test with struct
/// update syntax (`TurnRequest { approver, ..turn_request(chat, prompt) }`).
pub fn turn_request(chat: &str, prompt: &str) -> TurnRequest {
    TurnRequest {
        session: SessionKey {
            account: AccountKey::new(Channel::Wechat, "phone"),
            chat: ChatId::new(chat),
        },
        prompt: prompt.into(),
        no_tools: false,
        auto_approve: false,
        approver: None,
        workspace: None,
        channel_label: "WeChat",
        language: Default::default(),
        attachments: Vec::new(),
        events: TurnEvents::none(),
        owner_tools: None,
    }
}

/// An agent that writes its answer at a model's pace, [`PacedAgent::TOKEN_CHARS`] characters
/// every [`PacedAgent::TOKEN_EVERY`] (about 20 tokens a second), through the turn's events, and
/// notes when it finished: for the benches that time what a chat shows while an answer is
/// written (first visible text, the whole answer) against the model's own end.
pub struct PacedAgent {
    text: String,
    finished: Mutex<Option<std::time::Instant>>,
}

impl PacedAgent {
    /// How often a token is written.
    pub const TOKEN_EVERY: std::time::Duration = std::time::Duration::from_millis(50);
    /// Characters per token.
    pub const TOKEN_CHARS: usize = 4;

    /// An agent that answers every turn with `text`.
    pub fn new(text: String) -> Self {
        PacedAgent {
            text,
            finished: Mutex::new(None),
        }
    }

    /// The benches' long answer: seven paragraphs (`[p0]` … `[p6]`) of five sentences each,
    /// about 2,000 characters, so a platform's pieces, cards and splits all show.
    pub fn long_answer() -> String {
        (0..Self::PARAGRAPHS)
            .map(|i| {
                let sentences: Vec<String> = (0..5)
                    .map(|j| format!("Sentence {j} of this part says a few words about the topic."))
                    .collect();
                format!("[p{i}] {}", sentences.join(" "))
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// Whether `texts` together show every paragraph of [`PacedAgent::long_answer`].
    pub fn shows_long_answer<S: AsRef<str>>(texts: &[S]) -> bool {
        (0..Self::PARAGRAPHS).all(|i| {
            let mark = format!("[p{i}]");
            texts.iter().any(|t| t.as_ref().contains(&mark))
        })
    }

    /// Paragraphs in [`PacedAgent::long_answer`].
    const PARAGRAPHS: usize = 7;

    /// How long after `started` the last turn finished writing, if one did.
    pub fn finished_after(&self, started: std::time::Instant) -> Option<std::time::Duration> {
        let finished = self.finished.lock().ok().and_then(|f| *f)?;
        Some(finished.saturating_duration_since(started))
    }
}

impl Agent for PacedAgent {
    fn turn(
        &self,
        req: TurnRequest,
        _cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<TurnOutput, AgentError>> {
        Box::pin(async move {
            let chars: Vec<char> = self.text.chars().collect();
            for token in chars.chunks(Self::TOKEN_CHARS) {
                tokio::time::sleep(Self::TOKEN_EVERY).await;
                req.events.text(&token.iter().collect::<String>());
            }
            if let Ok(mut f) = self.finished.lock() {
                *f = Some(std::time::Instant::now());
            }
            Ok(TurnOutput {
                text: self.text.clone(),
                ..Default::default()
            })
        })
    }

    fn reset<'a>(&'a self, _session: &'a SessionKey) -> BoxFuture<'a, Result<(), AgentError>> {
        Box::pin(async { Ok(()) })
    }
}

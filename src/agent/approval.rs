//! Asking a person before the agent runs a tool: the hook between an agent backend and the
//! confirm questions (`approvals = "ask"`).

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::SessionKey;
use crate::words::{Ask, Lang};

/// The longest summary shown to the owner; an agent's summary is untrusted and may be huge.
pub const MAX_SUMMARY_CHARS: usize = 1000;

/// One tool call waiting for a decision.
#[derive(Clone)]
pub struct ApprovalRequest {
    /// The chat whose turn wants the tool; the question is asked there.
    pub session: SessionKey,
    /// The tool's name.
    pub tool: String,
    /// What the call will do, in the agent's words.
    pub summary: String,
    /// The agent's risk label (`low`, `high`, ...), when it gave one.
    pub risk: Option<String>,
}

impl std::fmt::Debug for ApprovalRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The summary may quote the chat or a file: never in Debug, which reaches logs.
        f.debug_struct("ApprovalRequest")
            .field("session", &self.session)
            .field("tool", &self.tool)
            .field("summary_chars", &self.summary.chars().count())
            .field("risk", &self.risk)
            .finish()
    }
}

impl ApprovalRequest {
    /// The question put to the owner in `lang`: the tool, its risk and the (bounded)
    /// summary, each made safe to show (one line, bounded; the agent's words are untrusted).
    pub fn question(&self, lang: Lang) -> String {
        let risk = self
            .risk
            .as_deref()
            .map(|r| one_line(r, 20))
            .filter(|r| !r.is_empty());
        Ask::Tool {
            tool: one_line(&self.tool, 80),
            risk,
            summary: bounded(self.summary.trim(), MAX_SUMMARY_CHARS),
        }
        .text(lang)
        .into_owned()
    }
}

/// Decides tool calls by asking a person; implemented by the confirm questions.
pub trait Approver: Send + Sync + 'static {
    /// Asks whether the call may run. Resolves `true` only on an explicit yes; a no, an expired
    /// or failed question, or `cancel` (the turn ended) resolve `false`, and a question still
    /// open when `cancel` fires is withdrawn at once. While the daemon stops it never resolves:
    /// the shutdown cancels the turn, which is not the owner saying no.
    fn approve(
        &self,
        request: ApprovalRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, bool>;

    /// Asks like [`Approver::approve`], offering "always" too when `offer_always` (the agent
    /// offers an allow-always option); the answer names the kind of option to select. An
    /// approver that cannot ask for "always" answers once or reject, as `approve` decides.
    fn decide(
        &self,
        request: ApprovalRequest,
        offer_always: bool,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Decision> {
        let _ = offer_always;
        let approved = self.approve(request, cancel);
        Box::pin(async move {
            if approved.await {
                Decision::AllowOnce
            } else {
                Decision::Reject
            }
        })
    }
}

/// What a person decided about one tool call: the kind of option the backend selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Run it this once.
    AllowOnce,
    /// Run it, and calls like it from now on without asking.
    AllowAlways,
    /// Do not run it (a no, no answer in time, or a question that could not be asked).
    Reject,
}

/// `s` on one line (control characters and newlines become spaces), at most `max` characters.
fn one_line(s: &str, max: usize) -> String {
    let flat: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    bounded(flat.trim(), max)
}

/// `s` cut to `max` characters, with an ellipsis when cut.
fn bounded(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{AccountKey, Channel};
    use crate::conversation::ChatId;

    fn req(tool: &str, summary: &str, risk: Option<&str>) -> ApprovalRequest {
        ApprovalRequest {
            session: SessionKey {
                account: AccountKey::new(Channel::Wechat, "phone"),
                chat: ChatId::new("u1"),
            },
            tool: tool.into(),
            summary: summary.into(),
            risk: risk.map(str::to_string),
        }
    }

    #[test]
    fn the_question_names_the_tool_the_risk_and_the_summary() {
        assert_eq!(
            req("shell", "rm -rf build", Some("high")).question(Lang::En),
            "Allow the agent to run shell (risk: high)?\nrm -rf build"
        );
        assert_eq!(
            req("", "  ", None).question(Lang::En),
            "Allow the agent to run a tool?"
        );
        assert_eq!(
            req("sh\nell\u{7}", "x", Some("")).question(Lang::En),
            "Allow the agent to run sh ell?\nx"
        );
        assert_eq!(
            req("cargo test", "in /srv/proj", Some("execute")).question(Lang::ZhCn),
            "允许智能体运行 cargo test（风险：execute）吗？\nin /srv/proj"
        );
    }

    #[test]
    fn a_huge_summary_is_cut_and_never_in_debug() {
        let r = req("shell", &"secret ".repeat(1000), None);
        let q = r.question(Lang::En);
        assert!(q.chars().count() < MAX_SUMMARY_CHARS + 60, "{}", q.len());
        assert!(q.ends_with('…'));
        assert!(!format!("{r:?}").contains("secret"));
    }
}

//! A bare yes/no that two open things wait for: an open confirm question and a drafted mail
//! reply in the same chat. Neither may take it silently (the owner meant one of them), so the
//! bridge asks which, naming how to answer each.

use std::sync::Arc;

use super::journal::FastRoute;
use super::message::Inbound;
use super::{AccountRuntime, AnswerClaim, Conversation};
use crate::words::Ask;

/// The route a fast-lane message takes now: a message journaled as `Which` is decided again,
/// because the question or the draft may have closed since (after a crash, or while it queued),
/// and then the one still open takes it.
pub(super) fn settle(
    conv: &Conversation,
    m: &Inbound,
    from_owner: bool,
    route: Option<FastRoute>,
) -> Option<FastRoute> {
    if route != Some(FastRoute::Which) {
        return route;
    }
    let claim = conv.answers().map_or(AnswerClaim::None, |a| {
        a.claim(&m.account, &m.chat, from_owner, &m.text)
    });
    let mail = from_owner && conv.for_mail(m);
    // Neither open any more: the answer interceptor says "no open question" in the chat's words.
    claim.route(mail).or(Some(FastRoute::Answer))
}

/// Asks the owner which of the open things a bare answer was for.
pub(super) async fn ask(conv: &Arc<Conversation>, rt: &Arc<AccountRuntime>, m: &Inbound) {
    let pending = conv
        .answers()
        .map(|a| a.open_questions(&m.account, &m.chat))
        .unwrap_or_default();
    let lang = super::lang::of_chat(conv, rt, m).await;
    let text = Ask::WhichWithMail { pending }.text(lang).into_owned();
    if let Err(e) = conv.reply_text(rt, m, "which", &text).await {
        tracing::error!(account = %m.account, error = %e, "cannot queue the question which answer was meant");
    }
}

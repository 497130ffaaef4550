//! The chat's typing sign while the agent works: shown beside the turn, refreshed every few
//! seconds, and cleared once the answer is stored and its sender woken, so nothing on the
//! answer's path waits for a sign (with a fast model, waiting for the sign in flight and then
//! for its clear put two platform round trips between the answer and its send).

use std::future::Future;
use std::task::Poll;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::{AccountRuntime, Inbound};

/// How often a typing indicator is refreshed while the agent works.
const TYPING_EVERY: Duration = Duration::from_secs(5);

/// What is left of one turn's sign once the turn ended: the sign in flight, then the clear.
/// Made by [`beside`]; [`Typing::clear`] finishes it.
pub(super) struct Typing {
    /// `None` when the platform shows no typing sign.
    rest: Option<BoxFuture<'static, ()>>,
}

impl Typing {
    /// Whether [`Typing::clear`] has a sign to clear (a request to send).
    pub fn pending(&self) -> bool {
        self.rest.is_some()
    }

    /// Lets the sign in flight land (a sign cut short, a Feishu reaction added with its id
    /// unknown, could not be cleared), then clears it.
    pub async fn clear(self) {
        if let Some(rest) = self.rest {
            rest.await;
        }
    }
}

/// Runs `fut` (the agent's turn) with the typing sign shown beside it, and returns as soon as
/// the turn ends. The turn is polled first, so the model request leaves before the first sign
/// (WeChat's `getconfig` ticket included); no refresh starts after the turn ended.
pub(super) async fn beside<F: Future>(
    rt: &AccountRuntime,
    m: &Inbound,
    fut: F,
) -> (F::Output, Typing) {
    if !rt.link.capabilities.typing {
        return (fut.await, Typing { rest: None });
    }
    let done = CancellationToken::new();
    let (sender, chat, reply, ended) = (
        rt.link.sender.clone(),
        m.chat.clone(),
        m.reply.clone(),
        done.clone(),
    );
    let mut show: BoxFuture<'static, ()> = Box::pin(async move {
        loop {
            sender.typing(&chat, &reply, true).await;
            tokio::select! {
                biased;
                _ = ended.cancelled() => break,
                _ = tokio::time::sleep(TYPING_EVERY) => {}
            }
        }
        sender.typing(&chat, &reply, false).await;
    });
    let mut fut = std::pin::pin!(fut);
    let out = std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = fut.as_mut().poll(cx) {
            return Poll::Ready(out);
        }
        // It cannot end before `done` is cancelled, which happens only below.
        let _ = show.as_mut().poll(cx);
        Poll::Pending
    })
    .await;
    done.cancel();
    (out, Typing { rest: Some(show) })
}

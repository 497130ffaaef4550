//! `GET /events`: the live part as server-sent events, pushed when something it shows changes
//! (an account's health, the set of accounts, a question asked or closed, a login's progress),
//! never on a per-second loop. A slow refresh keeps the "for how long" column and the agent's
//! row (which has no change signal) from going stale; a frame equal to the last is not sent.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use futures_util::future::{BoxFuture, select_all};
use tokio::sync::watch;

use super::Console;
use super::guard::lang;
use super::pages::{LangQuery, live};
use crate::daemon::console_keys::Session;
use crate::words::Lang;

/// How often the live part is rendered again with nothing changed (durations grow).
const REFRESH: Duration = Duration::from_secs(30);

/// The stream of live parts for one page.
pub(super) async fn events(
    State(console): State<Console>,
    headers: HeaderMap,
    Query(q): Query<LangQuery>,
    axum::Extension(session): axum::Extension<Session>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let lang = lang(&headers, q.lang());
    let frames = futures_util::stream::unfold(
        (console, lang, session, None::<String>),
        |(console, lang, session, last)| async move {
            let frame = next_frame(&console, lang, &session, last.as_deref()).await?;
            // An event's data may not hold a carriage return (lines end with a newline alone).
            let event = Event::default().event("live").data(frame.replace('\r', ""));
            Some((Ok(event), (console, lang, session, Some(frame))))
        },
    );
    Sse::new(frames).keep_alive(KeepAlive::default())
}

/// The next live part that differs from `last`; `None` once the console stops.
async fn next_frame(
    console: &Console,
    lang: Lang,
    session: &Session,
    last: Option<&str>,
) -> Option<String> {
    loop {
        // Subscribed before rendering, so a change during the render wakes the next round.
        let watchers = watchers(console);
        let frame = live(console, lang, session).into_string();
        if last != Some(frame.as_str()) {
            return Some(frame);
        }
        tokio::select! {
            _ = any_change(watchers) => {}
            _ = tokio::time::sleep(REFRESH) => {}
            _ = console.stop.cancelled() => return None,
        }
    }
}

/// Every change signal the live part depends on.
fn watchers(console: &Console) -> Vec<watch::Receiver<u64>> {
    let registry = console.core.registry();
    let mut all = vec![registry.subscribe(), console.scans.subscribe()];
    all.extend(
        registry
            .snapshot()
            .iter()
            .filter_map(|h| registry.cell(&h.id))
            .map(|c| c.subscribe()),
    );
    if let Some(c) = console.core.confirm() {
        all.push(c.subscribe_changes());
    }
    all
}

/// Resolves when any of `watchers` changes (or its sender goes: the set is rebuilt then).
async fn any_change(watchers: Vec<watch::Receiver<u64>>) {
    let waits: Vec<BoxFuture<'static, ()>> = watchers
        .into_iter()
        .map(|mut rx| -> BoxFuture<'static, ()> {
            Box::pin(async move {
                let _ = rx.changed().await;
            })
        })
        .collect();
    select_all(waits).await;
}

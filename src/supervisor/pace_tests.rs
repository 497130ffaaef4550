//! Recovery at the platform's pace, on a paused clock: once an account has connected, however
//! many outages came before, it notices the platform is back within the reconnect cap.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::health::RUN_NOTES;
use super::*;
use crate::config::{AccountSpec, Channel, ChannelSettings};
use crate::failure::general;
use crate::protocol::{ComponentState, Purpose, RemoteTools, Senders};

/// An account whose platform is up or down: a run while it is down fails at once; a run while
/// it is up connects and fails when it goes down.
struct Platform {
    up: watch::Receiver<bool>,
}

impl Component for Platform {
    fn run(
        self: Arc<Self>,
        health: HealthHandle,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<(), ComponentError>> {
        let mut up = self.up.clone();
        async move {
            let down = || ComponentError::transient(general::NETWORK, "HTTP 502");
            if !*up.borrow_and_update() {
                return Err(down());
            }
            health.connected();
            tokio::select! {
                _ = up.wait_for(|u| !*u) => Err(down()),
                _ = cancel.cancelled() => Ok(()),
            }
        }
        .boxed()
    }
}

struct Factory(Arc<Platform>);

impl ComponentFactory for Factory {
    fn build(&self, _: &AccountSpec) -> Arc<dyn Component> {
        self.0.clone()
    }
}

fn desired() -> BTreeMap<AccountKey, DesiredAccount> {
    let key = AccountKey::new(Channel::Wechat, "a");
    let spec = AccountSpec {
        key: key.clone(),
        enabled: true,
        workspace: None,
        senders: Senders::Owner,
        remote_tools: RemoteTools::None,
        approvals: Default::default(),
        purpose: Purpose::Chat,
        language: Default::default(),
        media: Default::default(),
        settings: ChannelSettings::default(),
    };
    let d = DesiredAccount {
        spec,
        credentials: Some("fp".into()),
    };
    [(key, d)].into()
}

/// Waits until the account is in `state`; returns how long that took.
async fn until(cell: &HealthCell, state: ComponentState) -> Duration {
    let started = Instant::now();
    let mut rx = cell.subscribe();
    while cell.get().state != state {
        rx.changed().await.expect("cell alive");
    }
    started.elapsed()
}

#[tokio::test(start_paused = true)]
async fn after_any_number_of_outages_the_platform_being_back_is_noticed_within_fifteen_seconds() {
    let (set_up, up) = watch::channel(true);
    let factory = Arc::new(Factory(Arc::new(Platform { up })));
    // The daemon's own lifecycle, random jitter included.
    let sup = Supervisor::new(factory, LifecyclePolicy::default());
    sup.apply(desired(), &[]).await;
    let cell = sup.registry().cell("wechat:a").expect("cell");
    until(&cell, ComponentState::Connected).await;
    // More rounds than the restart budget allows in an hour: 60 s down, 20 s up.
    for round in 0..15 {
        set_up.send_replace(false);
        crate::testing::let_time_pass(Duration::from_secs(60)).await;
        set_up.send_replace(true);
        let back = until(&cell, ComponentState::Connected).await;
        assert!(
            back <= Duration::from_secs(15),
            "round {round}: connected {back:?} after the heal"
        );
        crate::testing::let_time_pass(Duration::from_secs(20).saturating_sub(back)).await;
    }
    assert!(
        cell.get().restarts >= 15,
        "each outage dropped a connected run"
    );
}

/// Every note source's lifetime: a run's own notes (account, sends, agent, store, media, cards) end with
/// the run that set them and are never written back by an older run; the notes of services
/// outside the runs (confirm, login) last until their owner clears them.
#[test]
fn each_note_source_lives_as_long_as_its_owner() {
    let spec = desired().into_values().next().expect("spec").spec;
    let cell = HealthCell::new(&spec);
    let first = HealthHandle::for_run(cell.clone());
    for source in RUN_NOTES {
        first.note(source, Some(format!("{source:?} trouble")));
    }
    let service = HealthHandle::new(cell.clone());
    service.note(NoteSource::Confirm, Some("a question waits".into()));
    cell.set_note(NoteSource::Login, Some("same bot twice".into()));
    let shown =
        |c: &HealthCell| -> Vec<NoteSource> { c.get().notes.iter().map(|n| n.source).collect() };
    assert_eq!(shown(&cell).len(), RUN_NOTES.len() + 2);

    // The next run starts: what the last run's parts said is gone; the services' notes stay.
    let second = HealthHandle::for_run(cell.clone());
    assert_eq!(shown(&cell), [NoteSource::Confirm, NoteSource::Login]);
    // A part of the old run that had not ended yet cannot bring its note back.
    first.note(
        NoteSource::Sends,
        Some("sends failing: HTTP 502; 1 waiting".into()),
    );
    assert_eq!(cell.note_of(NoteSource::Sends), None);
    // The new run's own notes come and go with their cause.
    second.note(
        NoteSource::Sends,
        Some("sends failing: HTTP 502; 1 waiting".into()),
    );
    assert!(cell.note_of(NoteSource::Sends).is_some());
    second.note(NoteSource::Sends, None);
    assert_eq!(cell.note_of(NoteSource::Sends), None);
    // The services clear theirs when their cause ends, whatever the runs did.
    service.note(NoteSource::Confirm, None);
    cell.set_note(NoteSource::Login, None);
    assert_eq!(shown(&cell), Vec::<NoteSource>::new());
    assert_eq!(cell.get().error, None);
}

//! Health snapshots: written by the supervisor and components, read lock-free by the control socket.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use tokio::sync::watch;
use tokio::time::Instant;

use super::budget::RestartWindow;
use crate::config::{AccountSpec, Channel};
use crate::failure::{Code, Failure};
pub use crate::protocol::NoteSource;
use crate::protocol::{
    ComponentHealth, ComponentState, HealthNote, MailCounts, Purpose, RemoteTools,
};

/// Seconds since the Unix epoch, by the wall clock (`clock::wall_ms`, the one source of wall time).
pub fn unix_now() -> u64 {
    crate::clock::wall_ms() / 1000
}

/// How far back `restarts_last_hour` and the restart budget look.
const RESTART_WINDOW: Duration = Duration::from_secs(3600);

/// The run error (set by the lifecycle and `disconnected`) with its code, and the notes.
#[derive(Debug, Default)]
struct Lines {
    reason: Option<String>,
    code: Option<Code>,
    notes: BTreeMap<NoteSource, String>,
}

impl Lines {
    /// The published `error`: the reason, then each note, without repeating a phrase.
    fn compose(&self) -> Option<String> {
        let mut parts: Vec<&str> = Vec::new();
        for line in self.reason.iter().chain(self.notes.values()) {
            for phrase in line.split("; ") {
                if !phrase.is_empty() && !parts.contains(&phrase) {
                    parts.push(phrase);
                }
            }
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    /// The published `notes`, in source order.
    fn notes(&self) -> Vec<HealthNote> {
        self.notes
            .iter()
            .map(|(source, text)| HealthNote {
                source: *source,
                text: text.clone(),
            })
            .collect()
    }
}

/// Serializes a snapshot; plain data always serializes.
fn to_json(h: &ComponentHealth) -> String {
    serde_json::to_string(h)
        .unwrap_or_else(|_| format!("{{\"id\":{:?},\"state\":\"unknown\"}}", h.id))
}

/// One account's health: a snapshot swapped atomically on every change.
pub struct HealthCell {
    snapshot: ArcSwap<ComponentHealth>,
    /// The snapshot as wire JSON, so a status request copies bytes instead of serializing.
    json: ArcSwap<String>,
    /// Serializes writers so `json` always matches the latest snapshot.
    write: Mutex<()>,
    configured_tools: RemoteTools,
    connected_since: Mutex<Option<Instant>>,
    /// Wall-clock times of recent restarts, so `restarts_last_hour` stays true as time passes.
    restart_window: Mutex<RestartWindow>,
    lines: Mutex<Lines>,
    /// How many times the account became connected; the lifecycle compares it across one run.
    connects: std::sync::atomic::AtomicU64,
    /// The number of the account's current run (see [`HealthHandle::for_run`]).
    run: std::sync::atomic::AtomicU64,
    changed: watch::Sender<u64>,
}

impl HealthCell {
    /// A cell for `spec`, in `starting` (or `disabled`).
    pub fn new(spec: &AccountSpec) -> Arc<HealthCell> {
        let mut h =
            ComponentHealth::new(spec.key.channel.as_str(), &spec.key.account, spec.enabled);
        if spec.key.channel != Channel::Mail {
            h.senders = Some(spec.senders);
            if spec.purpose == Purpose::Mail {
                h.purpose = Some(Purpose::Mail);
            }
        } else {
            h.senders = Some(spec.senders);
            h.mail = Some(MailCounts::default());
        }
        h.since_unix_seconds = Some(unix_now());
        Arc::new(HealthCell {
            json: ArcSwap::from_pointee(to_json(&h)),
            snapshot: ArcSwap::from_pointee(h),
            write: Mutex::new(()),
            configured_tools: spec.remote_tools,
            connected_since: Mutex::new(None),
            restart_window: Mutex::new(RestartWindow::new(RESTART_WINDOW)),
            lines: Mutex::new(Lines::default()),
            connects: std::sync::atomic::AtomicU64::new(0),
            run: std::sync::atomic::AtomicU64::new(0),
            changed: watch::channel(0).0,
        })
    }

    /// The current snapshot; never blocks.
    pub fn get(&self) -> Arc<ComponentHealth> {
        self.snapshot.load_full()
    }

    /// The snapshot as wire JSON; never blocks.
    pub fn json(&self) -> Arc<String> {
        self.json.load_full()
    }

    /// Waits until the snapshot changes after `subscribe`.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Applies `f` to a copy of the snapshot and publishes it.
    pub fn update(&self, f: impl Fn(&mut ComponentHealth)) {
        let _writer = self.write.lock().unwrap_or_else(|p| p.into_inner());
        let mut h = ComponentHealth::clone(&self.snapshot.load());
        f(&mut h);
        self.json.store(Arc::new(to_json(&h)));
        self.snapshot.store(Arc::new(h));
        self.changed.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Changes the run error or one note with `f`, and republishes `error`, `code` and `notes`.
    fn edit_lines(&self, also: impl Fn(&mut ComponentHealth), f: impl FnOnce(&mut Lines)) {
        let (composed, code, notes) = {
            let mut lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut lines);
            (lines.compose(), lines.code, lines.notes())
        };
        self.update(|h| {
            also(h);
            h.error = composed.clone();
            h.code = code.map(|c| c.as_str().to_string());
            h.notes = notes.clone();
        });
    }

    /// Sets (or clears) the run error, without a code: why the account is not connected.
    pub fn set_reason(&self, reason: Option<String>) {
        self.set_reason_with(reason, None, |_| {});
    }

    /// Sets the run error and its code, and publishes them together with fields changed by `also`.
    pub fn set_reason_with(
        &self,
        reason: Option<String>,
        code: Option<Code>,
        also: impl Fn(&mut ComponentHealth),
    ) {
        self.edit_lines(also, |l| {
            l.reason = reason;
            l.code = code;
        });
    }

    /// Moves to `failed` and publishes `failure` as its run error: message, code and its fix,
    /// in words (`action`) and as the command to copy (`command`). One update, so no reader
    /// sees a `failed` account without the fix.
    pub fn set_failed(&self, failure: &Failure) {
        let moved = self.moving_to(ComponentState::Failed);
        let (action, command) = (failure.action.text(), failure.action.command_line());
        self.set_reason_with(Some(failure.message.clone()), Some(failure.code), |h| {
            moved(h);
            h.action = action.clone();
            h.command = command.clone();
        });
    }

    /// Sets (or clears) the note of `source`.
    pub fn set_note(&self, source: NoteSource, note: Option<String>) {
        self.edit_lines(
            |_| {},
            |l| match note {
                Some(n) => {
                    l.notes.insert(source, n);
                }
                None => {
                    l.notes.remove(&source);
                }
            },
        );
    }

    /// The note `source` has set, if any.
    pub fn note_of(&self, source: NoteSource) -> Option<String> {
        let lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        lines.notes.get(&source).cloned()
    }

    /// Moves to `state`, stamping when it happened (a repeat of the same state keeps its stamp).
    pub fn set_state(&self, state: ComponentState) {
        self.update(self.moving_to(state));
    }

    /// What moving to `state` changes in a snapshot, for an update to apply (alone, or with
    /// what else must be published in the same update); forgets the connection now.
    fn moving_to(&self, state: ComponentState) -> impl Fn(&mut ComponentHealth) {
        if state != ComponentState::Connected
            && let Ok(mut c) = self.connected_since.lock()
        {
            *c = None;
        }
        let now = unix_now();
        move |h| {
            if h.state != state {
                h.state = state;
                h.since_unix_seconds = Some(now);
            }
            if state != ComponentState::Backoff {
                h.next_retry_unix_seconds = None;
            }
        }
    }

    /// Counts one restart now; returns the restarts within the last hour, this one included.
    ///
    /// The one restart window: `restarts_last_hour` in status and the lifecycle's budget both
    /// read it, so they can never disagree.
    pub fn record_restart(&self) -> usize {
        let recent = self
            .restart_window
            .lock()
            .map(|mut w| w.record(Instant::now()))
            .unwrap_or(0);
        self.update(|h| {
            h.restarts += 1;
            h.restarts_last_hour = Some(recent as u64);
        });
        recent
    }

    /// Restarts within the last hour.
    pub fn recent_restarts(&self) -> usize {
        self.restart_window
            .lock()
            .map(|mut w| w.recent(Instant::now()))
            .unwrap_or(0)
    }

    /// Brings `restarts_last_hour` up to date when restarts have aged out of the hour.
    ///
    /// Every status runs this for every account: one that shows no restart in the hour has none
    /// to age out (only [`Self::record_restart`] adds one, and it publishes the count), so it is
    /// answered from the snapshot alone. Taking the window's lock and the clock for each of
    /// 1,000 accounts was about 6% of a status round trip's samples (`perf`, `--bench daemon`).
    fn refresh_recent_restarts(&self) {
        let shown = self.snapshot.load().restarts_last_hour;
        if shown.is_none_or(|r| r == 0) {
            return;
        }
        let recent = self.recent_restarts() as u64;
        if shown != Some(recent) {
            self.update(|h| h.restarts_last_hour = Some(recent));
        }
    }

    /// How long the account has been connected without interruption.
    pub fn connected_for(&self) -> Duration {
        self.connected_since
            .lock()
            .ok()
            .and_then(|c| *c)
            .map_or(Duration::ZERO, |t| t.elapsed())
    }

    /// How many times the account has become connected since this cell was made.
    pub fn connects(&self) -> u64 {
        self.connects.load(std::sync::atomic::Ordering::Acquire)
    }

    fn mark_connected(&self) {
        if let Ok(mut c) = self.connected_since.lock()
            && c.is_none()
        {
            *c = Some(Instant::now());
            self.connects
                .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        }
    }
}

/// The notes a run's own parts keep (the adapter's `Account`, the pipeline's `Sends`, `Agent`
/// and `Media`, the adapter's `Store` and `Cards`): each run says afresh what is true, so a new
/// run starts without them. `Confirm` and `Login` belong to services outside the runs, which
/// clear them.
pub const RUN_NOTES: [NoteSource; 6] = [
    NoteSource::Account,
    NoteSource::Sends,
    NoteSource::Agent,
    NoteSource::Store,
    NoteSource::Media,
    NoteSource::Cards,
];

/// What a component uses to report its health; clones share the cell.
#[derive(Clone)]
pub struct HealthHandle {
    cell: Arc<HealthCell>,
    /// The run this handle was made for; `None` for a service outside the runs.
    run: Option<u64>,
}

impl HealthHandle {
    /// A handle onto `cell` for a service outside the account's runs (the confirm questions).
    pub fn new(cell: Arc<HealthCell>) -> Self {
        HealthHandle { cell, run: None }
    }

    /// The handle of a new run of the account (the lifecycle makes one per run): the notes of
    /// the run's own parts ([`RUN_NOTES`]) are cleared, since the parts that set them (the last
    /// run's adapter and chat workers) are gone, and a note written later through an older
    /// run's handle (a task that had not ended yet) is ignored. So a note never outlives its
    /// cause by outliving the run that saw it.
    pub fn for_run(cell: Arc<HealthCell>) -> Self {
        let run = cell.run.fetch_add(1, std::sync::atomic::Ordering::AcqRel) + 1;
        cell.edit_lines(
            |_| {},
            |l| {
                for source in RUN_NOTES {
                    l.notes.remove(&source);
                }
            },
        );
        HealthHandle {
            cell,
            run: Some(run),
        }
    }

    /// Whether this handle belongs to a run that has been replaced.
    fn stale(&self) -> bool {
        self.run
            .is_some_and(|r| r != self.cell.run.load(std::sync::atomic::Ordering::Acquire))
    }

    /// The platform answered (a completed poll, a pong, an event): connected, run error cleared.
    ///
    /// Notes stay: they describe something else (the send path, the agent, pairing).
    pub fn connected(&self) {
        self.cell.mark_connected();
        let now = unix_now();
        self.cell.set_reason_with(None, None, |h| {
            if h.state != ComponentState::Connected {
                h.state = ComponentState::Connected;
                h.since_unix_seconds = Some(now);
            }
            h.last_success_unix_seconds = Some(now);
            h.action = None;
            h.command = None;
        });
    }

    /// Running but not connected, with the reason.
    pub fn disconnected(&self, reason: impl Into<String>) {
        self.cell.set_state(ComponentState::Disconnected);
        self.cell.set_reason(Some(reason.into()));
    }

    /// A note for people without a state change (e.g. "3 messages wait for WeChat's send window").
    ///
    /// Each `source` owns its note; `None` clears only that one.
    pub fn note(&self, source: NoteSource, message: Option<String>) {
        if self.stale() {
            return;
        }
        self.cell.set_note(source, message);
    }

    /// The note `source` has set on the account, if any.
    pub fn note_of(&self, source: NoteSource) -> Option<String> {
        self.cell.note_of(source)
    }

    /// The bot's and the owner's platform ids; the effective tool grant follows the owner.
    pub fn set_ids(&self, bot_id: Option<String>, user_id: Option<String>) {
        let tools = if user_id.is_some() {
            self.cell.configured_tools
        } else {
            RemoteTools::None
        };
        self.cell.update(|h| {
            h.bot_id = bot_id.clone();
            h.user_id = user_id.clone();
            h.remote_tools = tools;
        });
    }

    /// Replaces the mail counters, then logs them at debug (counts only): whoever reads the
    /// line finds status showing them.
    pub fn set_mail(&self, counts: MailCounts) {
        self.cell.update(|h| h.mail = Some(counts.clone()));
        tracing::debug!(
            account = %self.cell.get().id,
            claimed = counts.claimed,
            queued = counts.queued,
            seen_today = counts.seen_today,
            "mail counters published"
        );
    }

    /// Replaces the counts of messages not answered, by reason (the pipeline's, for status).
    pub fn set_dropped(&self, dropped: std::collections::BTreeMap<String, u64>) {
        self.cell.update(|h| h.dropped = dropped.clone());
    }

    /// The current snapshot.
    pub fn get(&self) -> Arc<ComponentHealth> {
        self.cell.get()
    }
}

/// Every account's cell, swapped as a whole on reconcile so readers never lock.
pub struct HealthRegistry {
    cells: ArcSwap<BTreeMap<String, Arc<HealthCell>>>,
    membership: watch::Sender<u64>,
}

impl Default for HealthRegistry {
    fn default() -> Self {
        HealthRegistry {
            cells: ArcSwap::default(),
            membership: watch::channel(0).0,
        }
    }
}

impl HealthRegistry {
    /// Every account's snapshot, sorted by id.
    pub fn snapshot(&self) -> Vec<ComponentHealth> {
        self.cells
            .load()
            .values()
            .map(|c| {
                c.refresh_recent_restarts();
                ComponentHealth::clone(&c.get())
            })
            .collect()
    }

    /// Every account's snapshot as wire JSON, sorted by id.
    pub fn snapshot_json(&self) -> Vec<Arc<String>> {
        self.cells
            .load()
            .values()
            .map(|c| {
                c.refresh_recent_restarts();
                c.json()
            })
            .collect()
    }

    /// One account's cell.
    pub fn cell(&self, id: &str) -> Option<Arc<HealthCell>> {
        self.cells.load().get(id).cloned()
    }

    /// Notified whenever a cell is added, replaced or removed.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.membership.subscribe()
    }

    /// Adds or replaces one account's cell.
    pub fn insert(&self, id: String, cell: Arc<HealthCell>) {
        self.cells.rcu(|m| {
            let mut m = BTreeMap::clone(m);
            m.insert(id.clone(), cell.clone());
            m
        });
        self.membership.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Removes one account's cell.
    pub fn remove(&self, id: &str) {
        self.cells.rcu(|m| {
            let mut m = BTreeMap::clone(m);
            m.remove(id);
            m
        });
        self.membership.send_modify(|v| *v = v.wrapping_add(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_of_different_sources_survive_each_other_and_connecting() {
        let mut l = Lines::default();
        assert_eq!(l.compose(), None);
        l.reason = Some("connection refused; reconnecting".into());
        l.notes
            .insert(NoteSource::Sends, "sends failing: HTTP 500".into());
        l.notes
            .insert(NoteSource::Account, "no owner paired".into());
        assert_eq!(
            l.compose().as_deref(),
            Some("connection refused; reconnecting; no owner paired; sends failing: HTTP 500")
        );
        l.reason = None;
        l.notes.remove(&NoteSource::Account);
        assert_eq!(l.compose().as_deref(), Some("sends failing: HTTP 500"));
    }

    #[test]
    fn a_phrase_is_never_repeated() {
        let l = Lines {
            reason: Some("reconnecting; reconnecting".into()),
            code: None,
            notes: [(NoteSource::Sends, "reconnecting".to_string())].into(),
        };
        assert_eq!(l.compose().as_deref(), Some("reconnecting"));
    }
}

//! Counts a marker in the daemons' log as it grows, and waits for the next one on the log
//! folder's change events (never on a clock): for state that lives only in a daemon's memory,
//! which it logs after publishing.

use std::path::PathBuf;
use std::sync::Mutex;

use super::changes::{Changes, Tree};

/// How often the daemons' log (one file for every run of a test) said `marker`.
pub struct LogCount {
    log: PathBuf,
    marker: &'static str,
    dir: Tree,
    /// How far the log has been read, and how often the marker was in what was read.
    seen: Mutex<(usize, usize)>,
}

impl LogCount {
    /// Watches `log`'s folder; counts whole lines with `marker` in them.
    pub fn new(log: PathBuf, marker: &'static str) -> LogCount {
        let dir = Tree::watch(log.parent().expect("the log is in a folder"));
        LogCount {
            log,
            marker,
            dir,
            seen: Mutex::new((0, 0)),
        }
    }

    /// The count so far; reads only what the log gained since the last look.
    pub fn count(&self) -> usize {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let (offset, count) = &mut *seen;
        let log = std::fs::read(&self.log).unwrap_or_default();
        // Whole lines only: a line still being written is counted at the next look.
        if let Some(end) = log
            .get(*offset..)
            .and_then(|new| new.iter().rposition(|b| *b == b'\n'))
        {
            let new = &log[*offset..*offset + end + 1];
            *count += memchr::memmem::find_iter(new, self.marker.as_bytes()).count();
            *offset += end + 1;
        }
        *count
    }

    /// Waits until the count is above `than` (take it with [`LogCount::count`] before looking
    /// at what the marker announces, so one logged in between is not missed); `false` when
    /// `deadline` came first.
    pub async fn above(&self, than: usize, deadline: tokio::time::Instant) -> bool {
        loop {
            // Armed before the count, so a line written in between still wakes the wait.
            let change = self.dir.change();
            if self.count() > than {
                return true;
            }
            if tokio::time::timeout_at(deadline, change).await.is_err() {
                return false;
            }
        }
    }
}

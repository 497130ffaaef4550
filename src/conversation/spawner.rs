//! Where the pipeline's own tasks (chat workers, senders, fast-lane handlers) run: the runtime
//! that built the pipeline, whichever thread journals the message that starts them.
//!
//! An adapter may journal from a thread of its own (Feishu's long connection reads, journals and
//! ACKs on a dedicated thread, so a burst's ACKs do not queue behind hundreds of chat tasks). A
//! chat's worker started from there must still run on the daemon's runtime: the ingest thread's
//! runtime ends with its connection, and would take the worker with it.

use std::future::Future;

use tokio::runtime::Handle;
use tokio_util::task::TaskTracker;

/// The runtime handle captured when the pipeline was built (none outside a runtime: then the
/// caller's runtime, as `tokio::spawn` would).
pub(super) struct Spawner(Option<Handle>);

impl Default for Spawner {
    fn default() -> Self {
        Spawner(Handle::try_current().ok())
    }
}

impl Spawner {
    /// Runs `task` on the pipeline's runtime, detached.
    pub fn spawn<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        match &self.0 {
            Some(h) => drop(h.spawn(task)),
            None => drop(tokio::spawn(task)),
        }
    }

    /// Runs `task` on the pipeline's runtime, tracked by `tracker`.
    pub fn track<F>(&self, tracker: &TaskTracker, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        match &self.0 {
            Some(h) => drop(tracker.spawn_on(task, h)),
            None => drop(tracker.spawn(task)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    /// A task started from a thread with a runtime of its own still runs on the pipeline's
    /// runtime, and outlives that thread's runtime.
    #[test]
    fn tasks_run_on_the_runtime_that_built_it() {
        let main = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("pipeline-runtime")
            .enable_all()
            .build()
            .expect("runtime");
        let spawner = main.block_on(async { Spawner::default() });
        let tracker = TaskTracker::new();
        let (tx, rx) = mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                let own = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .expect("runtime");
                own.block_on(async {
                    let (a, b) = (tx.clone(), tx.clone());
                    spawner.spawn(async move {
                        let _ = a.send(std::thread::current().name().map(str::to_string));
                    });
                    spawner.track(&tracker, async move {
                        let _ = b.send(std::thread::current().name().map(str::to_string));
                    });
                });
                // The ingest runtime is gone before the tasks are looked at.
                drop(own);
            });
        });
        for _ in 0..2 {
            let ran_on = rx
                .recv_timeout(std::time::Duration::from_secs(10))
                .expect("the task ran");
            assert_eq!(ran_on.as_deref(), Some("pipeline-runtime"));
        }
        tracker.close();
        main.block_on(tracker.wait());
    }
}

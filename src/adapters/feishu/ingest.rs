//! The long connection's own thread: the socket's reads, the events' journal writes and their
//! ACKs run on a single-threaded runtime of their own.
//!
//! On the daemon's runtime a burst's ACKs queued behind everything else that burst set off:
//! hundreds of chat workers and senders woken at once, each run for a while on two cores, held
//! the task that reads the socket and the one that ACKs a commit (`cargo bench --bench feishu`
//! prints the ACK's delay from frame receipt while answering). Here
//! they wait only for each other and for the store. What the journal write starts (chat
//! workers, senders) still runs on the daemon's runtime (`conversation/spawner.rs`).

use std::future::Future;

use tokio::runtime::{Builder, Handle, RuntimeFlavor};
use tokio::sync::oneshot;

use crate::failure::general;
use crate::supervisor::ComponentError;

/// Thread names are cut at 15 bytes on Linux.
const THREAD_NAME: &str = "feishu-ingest";

/// Runs `work` to its end on a thread of its own; the caller's future resolves with it.
///
/// On a single-threaded runtime (tests that drive time by hand) `work` runs in place: there
/// the ingest shares its one thread anyway, and a second runtime would not follow the paused
/// clock. Dropping the returned future does not stop `work`; it ends with its own cancel token.
pub(super) async fn on_own_thread<F>(work: F) -> Result<F::Output, ComponentError>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    if Handle::current().runtime_flavor() != RuntimeFlavor::MultiThread {
        return Ok(work.await);
    }
    let runtime = match Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            // Not fatal: the connection works on the daemon's runtime, with slower ACKs in bursts.
            tracing::warn!(error = %e, "no runtime for the Feishu ingest thread; reading on the shared one");
            return Ok(work.await);
        }
    };
    let (done, result) = oneshot::channel();
    std::thread::Builder::new()
        .name(THREAD_NAME.into())
        .spawn(move || {
            let _ = done.send(runtime.block_on(work));
        })
        .map_err(|e| {
            ComponentError::transient(
                general::TASK_FAILED,
                format!("cannot start the Feishu ingest thread: {e}"),
            )
        })?;
    result.await.map_err(|_| {
        ComponentError::transient(general::TASK_FAILED, "the Feishu ingest thread failed")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_multi_threaded_daemon_reads_on_the_ingest_thread() {
        let ran_on = on_own_thread(async { std::thread::current().name().map(str::to_string) })
            .await
            .expect("ran");
        assert_eq!(ran_on.as_deref(), Some(THREAD_NAME));
    }

    #[tokio::test]
    async fn a_single_threaded_runtime_runs_it_in_place() {
        let here = std::thread::current().id();
        let ran_on = on_own_thread(async { std::thread::current().id() })
            .await
            .expect("ran");
        assert_eq!(ran_on, here);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_panicking_ingest_is_a_transient_failure() {
        let err = on_own_thread(async {
            if std::hint::black_box(true) {
                panic!("boom");
            }
        })
        .await
        .expect_err("the panic is reported");
        assert!(err.to_string().contains("ingest thread failed"), "{err}");
    }
}

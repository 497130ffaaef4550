//! What a wait checks its condition again on: each fake says when its state may have changed,
//! and a folder the daemon writes is watched with inotify, so a wait re-checks after a change
//! rather than on a clock.

use std::collections::BTreeSet;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;

use notify::{EventKind, RecursiveMode, Watcher};
use scv_bridge::testing::fake_openai::FakeOpenAi;
use scv_bridge::testing::fake_speech::FakeSpeech;
use scv_feishu::fake::FakeFeishu;
use scv_wechat::fake::{FakeHandle, FakeServer};
use tokio::sync::watch;

/// Resolves at the next change of one source; armed when it was made.
pub type Change<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// Something a wait's condition reads, which can say when it may have changed.
pub trait Changes {
    /// Resolves at the first change after this call. Armed when it returns, so a wait gets it
    /// before checking and a change in between still wakes it.
    fn change(&self) -> Change<'_>;
}

impl Changes for FakeHandle {
    fn change(&self) -> Change<'_> {
        Box::pin(self.changed())
    }
}

impl Changes for FakeServer {
    fn change(&self) -> Change<'_> {
        Box::pin(self.handle().changed())
    }
}

impl Changes for FakeFeishu {
    fn change(&self) -> Change<'_> {
        Box::pin(self.changed())
    }
}

impl Changes for FakeOpenAi {
    fn change(&self) -> Change<'_> {
        Box::pin(self.changed())
    }
}

impl Changes for FakeSpeech {
    fn change(&self) -> Change<'_> {
        Box::pin(self.changed())
    }
}

/// Resolves when the first of `changes` does.
pub async fn first(mut changes: Vec<Change<'_>>) {
    std::future::poll_fn(|cx| {
        if changes.iter_mut().any(|c| c.as_mut().poll(cx).is_ready()) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await
}

/// A folder the daemon writes below (the workspace inbox), as a source of changes: a file or
/// folder created, written, renamed or removed anywhere below it.
pub struct Tree {
    root: PathBuf,
    bumps: Arc<watch::Sender<u64>>,
    /// The watcher and the folders it watches.
    watcher: Mutex<(notify::RecommendedWatcher, BTreeSet<PathBuf>)>,
}

impl Tree {
    /// Watches below `root`, which must exist.
    pub fn watch(root: &Path) -> Tree {
        let bumps = Arc::new(watch::channel(0u64).0);
        let tx = bumps.clone();
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            // Opening or reading a folder (the condition's own look) is no change: counting
            // it would wake the wait with every check it makes.
            let change = event.is_ok_and(|e| match e.kind {
                EventKind::Create(_) | EventKind::Remove(_) => true,
                EventKind::Modify(m) => !matches!(m, notify::event::ModifyKind::Metadata(_)),
                _ => false,
            });
            if change {
                tx.send_modify(|n| *n = n.wrapping_add(1));
            }
        })
        .expect("an inotify watcher");
        Tree {
            root: root.to_path_buf(),
            bumps,
            watcher: Mutex::new((watcher, BTreeSet::new())),
        }
    }

    /// Adds a watch on every folder below the root not watched yet. One watch per folder,
    /// added before the caller looks: a folder made later shows in its parent's watch, and
    /// what a folder held before its watch shows in the look.
    fn watch_new_folders(&self) {
        let mut guard = self.watcher.lock().unwrap_or_else(|p| p.into_inner());
        let (watcher, watched) = &mut *guard;
        let mut stack = vec![self.root.clone()];
        while let Some(dir) = stack.pop() {
            if !watched.contains(&dir) && watcher.watch(&dir, RecursiveMode::NonRecursive).is_ok() {
                watched.insert(dir.clone());
            }
            for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(e.path());
                }
            }
        }
    }
}

impl Changes for Tree {
    fn change(&self) -> Change<'_> {
        let mut bumps = self.bumps.subscribe();
        self.watch_new_folders();
        Box::pin(async move {
            if bumps.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        })
    }
}

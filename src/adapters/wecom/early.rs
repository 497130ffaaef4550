//! Received media downloaded right after its message is journaled (spec §2.6): WeCom's download
//! URLs work for about 5 minutes, and the pipeline fetches an item only when the chat's turn
//! reaches it, which a long turn before it can delay past that. So the intake starts each
//! download as soon as the journal holds the message, and the sender's `fetch` takes the bytes
//! from here (waiting for a download still under way) instead of the URL. The file's name comes
//! only with the download (`Content-Disposition`, §2.3), so it is read here too, for the
//! pipeline to sanitize and keep.
//!
//! In memory only, at most [`MAX_BYTES`] at once and each item for at most [`KEEP`]: after a
//! crash, or past either bound, `fetch` downloads from the URL as before.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use scv_wecom::limits::{FILE_DOWNLOAD_TIMEOUT, INBOUND_MEDIA_MAX_BYTES};
use scv_wecom::media::Downloaded;
use scv_wecom::message::MediaRef;
use scv_wecom::{Connection, Error};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::ids::AccountKey;

/// The most bytes kept here at once (a few items at WeCom's 20 MB cap).
pub(super) const MAX_BYTES: u64 = 64 << 20;
/// How long an item is kept for the turn that takes it: twice the URL's life.
pub(super) const KEEP: Duration = Duration::from_secs(10 * 60);

/// What one download ended with.
type Outcome = Option<Result<Arc<Downloaded>, Error>>;

struct Item {
    started: Instant,
    done: watch::Receiver<Outcome>,
}

/// The account's early downloads, by URL (each URL carries its own key, §2.6).
pub(super) struct Early {
    conn: Connection,
    account: AccountKey,
    items: Mutex<HashMap<String, Item>>,
}

impl Early {
    /// Downloads over `conn` for `account`.
    pub(super) fn new(conn: Connection, account: AccountKey) -> Self {
        Early {
            conn,
            account,
            items: Mutex::default(),
        }
    }

    /// Starts downloading `media` unless it is under way or kept, or the bound is reached.
    pub(super) fn start(&self, media: MediaRef) {
        let Ok(mut items) = self.items.lock() else {
            return;
        };
        let now = Instant::now();
        items.retain(|_, i| now.duration_since(i.started) < KEEP);
        if items.contains_key(&media.url) || kept_bytes(&items) >= MAX_BYTES {
            return;
        }
        let (tx, done) = watch::channel(None);
        items.insert(media.url.clone(), Item { started: now, done });
        let (conn, account) = (self.conn.clone(), self.account.clone());
        tokio::spawn(async move {
            let got = conn
                .download(&media, INBOUND_MEDIA_MAX_BYTES, FILE_DOWNLOAD_TIMEOUT)
                .await;
            if let Err(e) = &got {
                tracing::info!(account = %account, error = %e, "an early media download failed; the turn tries the URL again");
            }
            let _ = tx.send(Some(got.map(Arc::new)));
        });
    }

    /// The download of `url` once it ended, if one was started (waiting for it when under way).
    async fn wait(&self, url: &str) -> Outcome {
        let mut done = self.items.lock().ok()?.get(url)?.done.clone();
        done.wait_for(Option::is_some).await.ok()?.clone()
    }

    /// The file's name as WeCom gave it, when its download succeeded.
    pub(super) async fn name(&self, url: &str) -> Option<String> {
        match self.wait(url).await {
            Some(Ok(d)) => d.file_name.clone(),
            _ => None,
        }
    }

    /// Takes the downloaded bytes of `url` (then forgotten); `None` when there are none here
    /// (never started, dropped by a bound, or failed: the caller downloads from the URL).
    pub(super) async fn take(&self, url: &str) -> Option<Arc<Downloaded>> {
        let got = self.wait(url).await;
        if let Ok(mut items) = self.items.lock() {
            items.remove(url);
        }
        got?.ok()
    }
}

/// Bytes held by finished downloads, and a full item's worth for each under way.
fn kept_bytes(items: &HashMap<String, Item>) -> u64 {
    items
        .values()
        .map(|i| match &*i.done.borrow() {
            Some(Ok(d)) => d.bytes.len() as u64,
            Some(Err(_)) => 0,
            None => INBOUND_MEDIA_MAX_BYTES,
        })
        .sum()
}

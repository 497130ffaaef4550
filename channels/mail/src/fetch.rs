//! Finding new mail and fetching it in batches: one `UID FETCH` per batch of UIDs, headers
//! and a bounded prefix with `BODY.PEEK` so that the owner's `\Seen` flags never change.

use async_imap::types::{Fetch, Flag};
use futures_util::TryStreamExt;

use crate::error::{MailError, Result};
use crate::item::MailItem;
use crate::mailbox::TRIAGED_KEYWORD;
use crate::parse::parse_parts;
use crate::session::{ImapSession, timed};
use crate::settings::ParseLimits;

/// Header fields fetched for every message: what triage, threading and replies need.
const HEADER_FIELDS: &str = "FROM TO CC REPLY-TO SUBJECT DATE MESSAGE-ID IN-REPLY-TO REFERENCES \
                             LIST-UNSUBSCRIBE LIST-ID AUTO-SUBMITTED PRECEDENCE";

/// A compact IMAP sequence set for UIDs: `1:3,7,9:10`. Sorted and deduplicated.
pub fn uid_set(uids: &[u32]) -> String {
    let mut sorted: Vec<u32> = uids.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out = String::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if start == end {
            out.push_str(&start.to_string());
        } else {
            out.push_str(&format!("{start}:{end}"));
        }
        i += 1;
    }
    out
}

impl ImapSession {
    /// UIDs of the selected mailbox matching an IMAP search (e.g. `UNSEEN`, `SINCE 1-Jan-2026`),
    /// ascending.
    pub async fn uid_search(&mut self, query: &str) -> Result<Vec<u32>> {
        if query.contains(['\r', '\n']) {
            return Err(MailError::Config(
                "search query contains a line break".to_owned(),
            ));
        }
        self.stats.searches += 1;
        let limit = self.settings.timeout;
        let session = self.session()?;
        let r = timed("search", limit, session.uid_search(query)).await;
        let mut uids: Vec<u32> = self.keep_if_sound(r)?.into_iter().collect();
        uids.sort_unstable();
        Ok(uids)
    }

    /// UIDs at or above `first_uid` (normally the stored cursor + 1), ascending. IMAP's
    /// `N:*` also matches the highest UID when it is below N; that one is filtered out here.
    pub async fn uids_from(&mut self, first_uid: u32) -> Result<Vec<u32>> {
        let first = first_uid.max(1);
        let mut uids = self.uid_search(&format!("UID {first}:*")).await?;
        uids.retain(|&u| u >= first);
        Ok(uids)
    }

    /// UIDs of messages whose internal date is on or after `date` (server's time zone),
    /// ascending: for an opt-in backfill of the last N days.
    pub async fn uids_since(&mut self, date: chrono::NaiveDate) -> Result<Vec<u32>> {
        self.uid_search(&format!("SINCE {}", date.format("%-d-%b-%Y")))
            .await
    }

    /// Fetches the given UIDs of the selected mailbox, one `UID FETCH` per
    /// `settings.fetch_batch` UIDs. Returns items in UID order; expunged UIDs are absent.
    pub async fn fetch_items(&mut self, uids: &[u32]) -> Result<Vec<MailItem>> {
        let mut wanted: Vec<u32> = uids.to_vec();
        wanted.sort_unstable();
        wanted.dedup();
        let mut items = Vec::with_capacity(wanted.len());
        for batch in wanted.chunks(self.settings.fetch_batch.max(1)) {
            items.extend(self.fetch_batch(batch).await?);
        }
        Ok(items)
    }

    async fn fetch_batch(&mut self, batch: &[u32]) -> Result<Vec<MailItem>> {
        let limits = self.settings.limits;
        let window = limits.max_fetch_bytes;
        let query = format!(
            "(UID FLAGS RFC822.SIZE BODY.PEEK[HEADER.FIELDS ({HEADER_FIELDS})] BODY.PEEK[]<0.{window}>)"
        );
        let set = uid_set(batch);
        self.stats.fetches += 1;
        let limit = self.settings.timeout;
        let session = self.session()?;
        let r = timed("fetch", limit, async {
            session
                .uid_fetch(&set, &query)
                .await?
                .try_collect::<Vec<Fetch>>()
                .await
        })
        .await;
        let fetched = self.keep_if_sound(r)?;
        let mut items: Vec<MailItem> = fetched
            .iter()
            // Unsolicited FETCH responses (flag changes elsewhere) carry no UID of ours.
            .filter(|f| f.uid.is_some_and(|u| batch.binary_search(&u).is_ok()))
            .map(|f| item_from_fetch(f, &limits))
            .collect();
        items.sort_by_key(|i| i.uid);
        items.dedup_by_key(|i| i.uid);
        Ok(items)
    }

    /// Sets [`TRIAGED_KEYWORD`] on `uids` when the selected mailbox's PERMANENTFLAGS allow it.
    /// Returns `false` (and sends nothing) when they do not. Never touches `\Seen`.
    pub async fn mark_triaged(&mut self, uids: &[u32]) -> Result<bool> {
        let allowed = self
            .selected
            .as_ref()
            .is_some_and(|m| m.allows_keyword(TRIAGED_KEYWORD));
        if !allowed || uids.is_empty() {
            return Ok(false);
        }
        let set = uid_set(uids);
        let limit = self.settings.timeout;
        let session = self.session()?;
        let r = timed("store", limit, async {
            let flags = format!("+FLAGS.SILENT ({TRIAGED_KEYWORD})");
            session
                .uid_store(&set, &flags)
                .await?
                .try_collect::<Vec<Fetch>>()
                .await
        })
        .await;
        self.keep_if_sound(r)?;
        Ok(true)
    }
}

fn item_from_fetch(fetch: &Fetch, limits: &ParseLimits) -> MailItem {
    let size = fetch.size;
    let truncated = size.is_some_and(|s| s > limits.max_fetch_bytes);
    let mut item = parse_parts(fetch.header(), fetch.body(), truncated, limits);
    item.uid = fetch.uid.unwrap_or_default();
    item.size = size;
    for flag in fetch.flags() {
        match flag {
            Flag::Seen => item.seen = true,
            Flag::Custom(k) if k.eq_ignore_ascii_case(TRIAGED_KEYWORD) => item.triaged = true,
            _ => {}
        }
    }
    item
}

#[cfg(test)]
mod tests {
    use super::uid_set;

    #[test]
    fn uid_sets_are_compact() {
        assert_eq!(uid_set(&[]), "");
        assert_eq!(uid_set(&[5]), "5");
        assert_eq!(uid_set(&[3, 1, 2, 2, 7, 9, 10]), "1:3,7,9:10");
        assert_eq!(uid_set(&[u32::MAX, u32::MAX - 1]), "4294967294:4294967295");
    }
}

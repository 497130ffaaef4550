//! Per-chat history of the `openai` backend, persisted in the store and bounded in turns and bytes.

use rusqlite::params;

use crate::agent::{KeepWrite, SessionKey, Usage};
use crate::store::{Store, StoreError};

/// One answered exchange: the user's text and the model's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    /// What the user wrote.
    pub user: String,
    /// What the model answered.
    pub assistant: String,
}

impl Exchange {
    fn bytes(&self) -> usize {
        self.user.len() + self.assistant.len()
    }
}

/// How much history a chat keeps; the oldest exchanges go first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryLimits {
    /// At most this many exchanges.
    pub max_turns: usize,
    /// At most this many bytes of text (user and assistant together).
    pub max_bytes: usize,
}

impl Default for HistoryLimits {
    fn default() -> Self {
        HistoryLimits {
            max_turns: 20,
            max_bytes: 32 * 1024,
        }
    }
}

/// How many of the newest exchanges fit `limits` (counting from the end of `history`).
pub fn fitting(history: &[Exchange], limits: HistoryLimits) -> usize {
    let mut bytes = 0;
    let mut kept = 0;
    for e in history.iter().rev() {
        if kept == limits.max_turns || bytes + e.bytes() > limits.max_bytes {
            break;
        }
        bytes += e.bytes();
        kept += 1;
    }
    kept
}

/// Drops the oldest exchanges until `history` fits `limits`.
pub fn bound(history: &mut Vec<Exchange>, limits: HistoryLimits) {
    let keep = fitting(history, limits);
    history.drain(..history.len() - keep);
}

/// The chat's stored history, oldest first, bounded by `limits`.
pub async fn load(
    store: &Store,
    session: &SessionKey,
    limits: HistoryLimits,
) -> Result<Vec<Exchange>, StoreError> {
    let (account, chat) = (session.account.to_string(), session.chat.to_string());
    // Short: a bounded read by key (append keeps what fits), on the message's path.
    let mut history = store
        .call_short(move |t| {
            let mut st = t.prepare_cached(
                "SELECT user_text, assistant_text FROM agent_history
                 WHERE account = ?1 AND chat = ?2 ORDER BY turn",
            )?;
            let rows = st.query_map(params![account, chat], |r| {
                Ok(Exchange {
                    user: r.get(0)?,
                    assistant: r.get(1)?,
                })
            })?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })
        .await?;
    bound(&mut history, limits);
    Ok(history)
}

/// Appends an exchange, then deletes what no longer fits `limits`; records the turn's usage.
/// Returned as a write for the transaction that stores the turn's answer ([`crate::agent::Keep`]).
pub fn append(
    session: &SessionKey,
    exchange: Exchange,
    limits: HistoryLimits,
    usage: Usage,
) -> KeepWrite {
    let (account, chat) = (session.account.to_string(), session.chat.to_string());
    let now = chrono::Utc::now();
    let day = now.format("%Y-%m-%d").to_string();
    Box::new(move |t| {
        // The last turn is read newest first along the key: SQLite does not take `MAX(turn)`
        // with two equalities before it from the index's end: it read the chat's whole history
        // inside every answer's commit.
        t.prepare_cached(
            "INSERT INTO agent_history (account, chat, turn, user_text, assistant_text, at_unix)
                 VALUES (?1, ?2, COALESCE((SELECT turn FROM agent_history
                   WHERE account = ?1 AND chat = ?2 ORDER BY turn DESC LIMIT 1), 0) + 1,
                   ?3, ?4, ?5)",
        )?
        .execute(params![
            account,
            chat,
            exchange.user,
            exchange.assistant,
            now.timestamp()
        ])?;
        // The newest turn past either bound, and all before it, go (as `fitting` counts).
        if let Some(turn) = first_past(t, &account, &chat, limits)? {
            t.prepare_cached(
                "DELETE FROM agent_history WHERE account = ?1 AND chat = ?2 AND turn <= ?3",
            )?
            .execute(params![account, chat, turn])?;
        }
        record_usage(t, &account, &day, usage)
    })
}

/// The newest turn of the chat past either of `limits`, walking newest first along the key.
///
/// At most `max_turns + 1` rows are read, with no sort. One statement with window functions
/// did this before, but SQLite buffers a window's rows in a temporary table, which cost every
/// answer's commit several times this walk.
fn first_past(
    t: &rusqlite::Transaction<'_>,
    account: &str,
    chat: &str,
    limits: HistoryLimits,
) -> rusqlite::Result<Option<i64>> {
    let mut st = t.prepare_cached(
        "SELECT turn, length(CAST(user_text AS BLOB)) + length(CAST(assistant_text AS BLOB))
         FROM agent_history WHERE account = ?1 AND chat = ?2 ORDER BY turn DESC LIMIT ?3",
    )?;
    let rows = i64::try_from(limits.max_turns.saturating_add(1)).unwrap_or(i64::MAX);
    let mut rows = st.query(params![account, chat, rows])?;
    let (mut turns, mut bytes) = (0usize, 0usize);
    while let Some(r) = rows.next()? {
        let (turn, size): (i64, i64) = (r.get(0)?, r.get(1)?);
        turns += 1;
        bytes = bytes.saturating_add(usize::try_from(size).unwrap_or(usize::MAX));
        if turns > limits.max_turns || bytes > limits.max_bytes {
            return Ok(Some(turn));
        }
    }
    Ok(None)
}

fn record_usage(
    t: &rusqlite::Transaction<'_>,
    account: &str,
    day: &str,
    usage: Usage,
) -> rusqlite::Result<()> {
    let clamp = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    t.prepare_cached(
        "INSERT INTO agent_usage (account, day, turns, prompt_tokens, completion_tokens, estimated_turns)
         VALUES (?1, ?2, 1, ?3, ?4, ?5)
         ON CONFLICT(account, day) DO UPDATE SET turns = turns + 1,
           prompt_tokens = prompt_tokens + excluded.prompt_tokens,
           completion_tokens = completion_tokens + excluded.completion_tokens,
           estimated_turns = estimated_turns + excluded.estimated_turns",
    )?
    .execute(params![
            account,
            day,
            clamp(usage.prompt_tokens),
            clamp(usage.completion_tokens),
            i64::from(usage.estimated)
    ])
    .map(drop)
}

/// Forgets the chat's history.
pub async fn clear(store: &Store, session: &SessionKey) -> Result<(), StoreError> {
    let (account, chat) = (session.account.to_string(), session.chat.to_string());
    store
        .call(move |t| {
            t.execute(
                "DELETE FROM agent_history WHERE account = ?1 AND chat = ?2",
                params![account, chat],
            )
            .map(drop)
        })
        .await
}

/// Token totals of one account on one UTC day (`YYYY-MM-DD`), as recorded by the `openai` backend.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DailyUsage {
    /// Answered turns.
    pub turns: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Turns whose counts were estimated from text length.
    pub estimated_turns: u64,
}

/// The recorded usage of `account` (`<channel>:<account>`) on `day` (`YYYY-MM-DD`, UTC).
pub async fn daily_usage(
    store: &Store,
    account: &str,
    day: &str,
) -> Result<DailyUsage, StoreError> {
    let (account, day) = (account.to_string(), day.to_string());
    store
        .call(move |t| {
            let row = t.query_row(
                "SELECT turns, prompt_tokens, completion_tokens, estimated_turns FROM agent_usage
                 WHERE account = ?1 AND day = ?2",
                params![account, day],
                |r| {
                    let get = |i| r.get::<_, i64>(i).map(|v| u64::try_from(v).unwrap_or(0));
                    Ok(DailyUsage {
                        turns: get(0)?,
                        prompt_tokens: get(1)?,
                        completion_tokens: get(2)?,
                        estimated_turns: get(3)?,
                    })
                },
            );
            match row {
                Ok(u) => Ok(u),
                Err(rusqlite::Error::QueryReturnedNoRows) => Ok(DailyUsage::default()),
                Err(e) => Err(e),
            }
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{AccountKey, Channel};
    use crate::conversation::ChatId;

    fn ex(n: usize, size: usize) -> Exchange {
        Exchange {
            user: format!("{n}"),
            assistant: "x".repeat(size.saturating_sub(format!("{n}").len())),
        }
    }

    #[test]
    fn bound_drops_oldest_by_turns_then_bytes() {
        let limits = HistoryLimits {
            max_turns: 3,
            max_bytes: 25,
        };
        let mut h: Vec<_> = (0..5).map(|n| ex(n, 10)).collect();
        bound(&mut h, limits);
        assert_eq!(
            h.iter().map(|e| e.user.as_str()).collect::<Vec<_>>(),
            ["3", "4"]
        );
        let mut big = vec![ex(0, 5), ex(1, 30)];
        bound(&mut big, limits);
        assert!(
            big.is_empty(),
            "an exchange larger than the limit is not kept"
        );
    }

    /// The stored rows of `c1` after `exchanges` are appended under `limits`, oldest first.
    async fn kept(exchanges: &[Exchange], limits: HistoryLimits) -> Vec<String> {
        let (store, _guard) = Store::open_in_memory().expect("store");
        let session = SessionKey {
            account: AccountKey::new(Channel::Wechat, "a"),
            chat: ChatId::new("c1"),
        };
        for e in exchanges {
            let write = append(&session, e.clone(), limits, Usage::default());
            store.call(write).await.expect("append");
        }
        let all = HistoryLimits {
            max_turns: usize::MAX,
            max_bytes: usize::MAX,
        };
        let rows = load(&store, &session, all).await.expect("load");
        rows.into_iter().map(|e| e.user).collect()
    }

    #[tokio::test]
    async fn append_trims_the_store_by_turns_then_bytes_newest_first() {
        let h: Vec<_> = (0..5).map(|n| ex(n, 10)).collect();
        let turns = HistoryLimits {
            max_turns: 2,
            max_bytes: 100,
        };
        assert_eq!(kept(&h, turns).await, ["3", "4"]);
        let bytes = HistoryLimits {
            max_turns: 9,
            max_bytes: 25,
        };
        assert_eq!(kept(&h, bytes).await, ["3", "4"]);
        let roomy = HistoryLimits {
            max_turns: 9,
            max_bytes: 50,
        };
        assert_eq!(kept(&h, roomy).await, ["0", "1", "2", "3", "4"]);
        // Counted in bytes, not characters: "你好" is 6 bytes.
        let wide = [
            ex(0, 4),
            Exchange {
                user: "你好".into(),
                assistant: "x".into(),
            },
        ];
        let seven = HistoryLimits {
            max_turns: 9,
            max_bytes: 7,
        };
        assert_eq!(kept(&wide, seven).await, ["你好"]);
        let big = [ex(0, 5), ex(1, 30)];
        assert!(
            kept(&big, bytes).await.is_empty(),
            "a too-large exchange is not kept"
        );
    }
}

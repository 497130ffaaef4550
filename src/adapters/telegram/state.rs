//! What the Telegram adapter keeps in the account's state: the `getUpdates` offset.

use scv_telegram::Offset;
use serde::{Deserialize, Serialize};

use crate::store::{AccountState, StateError, StateTxn, StoreError};

/// The state name of the confirmed offset.
const OFFSET: &str = "telegram_offset";

/// The stored offset, tagged with the bot it belongs to: a login as another bot starts afresh
/// (its update ids are another queue's).
#[derive(Serialize, Deserialize)]
struct StoredOffset {
    bot_id: i64,
    offset: i64,
}

/// The offset to poll from for `bot_id` ([`Offset::START`] when none is stored or it is
/// another bot's). Never negative: a negative offset would make the server forget updates.
pub(super) async fn load_offset(state: &AccountState, bot_id: i64) -> Result<Offset, StoreError> {
    let raw = state.get(OFFSET).await?;
    Ok(raw
        .and_then(|r| serde_json::from_str::<StoredOffset>(&r).ok())
        .filter(|o| o.bot_id == bot_id)
        .map(|o| Offset::new(o.offset))
        .unwrap_or(Offset::START))
}

/// Stores the offset inside `s`, the transaction that journals the batch it confirms: the
/// next poll carries it and so tells the server the batch is safe here.
pub(super) fn save_offset_in(
    s: &StateTxn<'_>,
    bot_id: i64,
    offset: Offset,
) -> Result<(), StateError> {
    s.put_json(
        OFFSET,
        &StoredOffset {
            bot_id,
            offset: offset.get(),
        },
    )
}

//! How many outbox items wait per account, for the metrics page.

use super::Conversation;
use crate::store::StoreError;

impl Conversation {
    /// `(account, items waiting to be sent)` for every account with any, by account.
    pub async fn outbox_depth(&self) -> Result<Vec<(String, u64)>, StoreError> {
        self.store
            .call(|t| {
                let mut st = t.prepare_cached(
                    "SELECT account, count(*) FROM outbox WHERE state = 'pending'
                     GROUP BY account ORDER BY account",
                )?;
                let rows = st.query_map([], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?.max(0) as u64))
                })?;
                rows.collect()
            })
            .await
    }
}

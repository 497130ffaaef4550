//! Questions by outcome, for metrics.

use super::ConfirmService;

impl ConfirmService {
    /// How many stored questions are in each state (`pending`, `yes`, `no`, `expired`, ...).
    pub async fn outcome_counts(&self) -> Vec<(String, u64)> {
        self.store
            .call(|t| {
                let mut st = t.prepare(
                    "SELECT state, count(*) FROM confirm_questions GROUP BY state ORDER BY state",
                )?;
                let rows = st.query_map([], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
                })?;
                rows.collect()
            })
            .await
            .unwrap_or_default()
    }
}

//! Counts of what the fake recorded, read without copying the records: benches poll these
//! while thousands of records accumulate, and a copy per poll would slow the fake it measures.

use super::FakeFeishu;

impl FakeFeishu {
    /// ACK frames received so far.
    pub fn ack_count(&self) -> usize {
        self.shared.lock().acks.len()
    }

    /// Messages sent or replied so far.
    pub fn sent_count(&self) -> usize {
        self.shared.lock().sent.len()
    }

    /// Events pushed so far (re-pushes included).
    pub fn push_count(&self) -> usize {
        self.shared.lock().pushes.len()
    }
}

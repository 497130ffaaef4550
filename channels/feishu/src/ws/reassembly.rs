//! Fragment reassembly: parts of one message share the header `message_id`, carry `sum` and a
//! 0-based `seq`; a message is complete when all parts arrived, and dropped after a timeout.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

use crate::frame::Frame;

/// Most fragments accepted for one message.
const MAX_FRAGMENTS: usize = 256;
/// Most messages being reassembled at once.
const MAX_PARTIALS: usize = 256;

/// Buffers fragments until messages complete.
#[derive(Debug)]
pub struct Reassembler {
    timeout: Duration,
    max_bytes: usize,
    partials: HashMap<String, Partial>,
}

#[derive(Debug)]
struct Partial {
    parts: Vec<Option<Vec<u8>>>,
    received: usize,
    bytes: usize,
    deadline: Instant,
}

impl Reassembler {
    /// Drops incomplete messages after `timeout`; refuses messages larger than `max_bytes`.
    pub fn new(timeout: Duration, max_bytes: usize) -> Self {
        Self {
            timeout,
            max_bytes,
            partials: HashMap::new(),
        }
    }

    /// Adds a data frame; returns the completing frame (payload taken out) and the whole payload.
    pub fn push(&mut self, mut frame: Frame, now: Instant) -> Option<(Frame, Vec<u8>)> {
        let payload = frame.payload.take().unwrap_or_default();
        let sum = frame
            .header("sum")
            .map_or(Some(1), |s| s.trim().parse::<usize>().ok())?;
        let seq = frame
            .header("seq")
            .map_or(Some(0), |s| s.trim().parse::<usize>().ok())?;
        if sum <= 1 {
            return (payload.len() <= self.max_bytes).then_some((frame, payload));
        }
        if sum > MAX_FRAGMENTS || seq >= sum {
            tracing::warn!(sum, seq, "dropping fragment with impossible sum/seq");
            return None;
        }
        let id = frame.header("message_id")?.to_string();
        if !self.partials.contains_key(&id) && self.partials.len() >= MAX_PARTIALS {
            tracing::warn!("too many partial messages; dropping a fragment");
            return None;
        }
        let deadline = now + self.timeout;
        let p = self.partials.entry(id.clone()).or_insert_with(|| Partial {
            parts: vec![None; sum],
            received: 0,
            bytes: 0,
            deadline,
        });
        if p.parts.len() != sum {
            // Same id with another sum: the old parts cannot belong to this message.
            *p = Partial {
                parts: vec![None; sum],
                received: 0,
                bytes: 0,
                deadline,
            };
        }
        if p.parts[seq].is_none() {
            p.bytes += payload.len();
            p.received += 1;
            p.parts[seq] = Some(payload);
        }
        if p.bytes > self.max_bytes {
            tracing::warn!("fragmented message over the size limit; dropped");
            self.partials.remove(&id);
            return None;
        }
        if p.received < sum {
            return None;
        }
        let done = self.partials.remove(&id)?;
        let whole = done.parts.into_iter().flatten().flatten().collect();
        Some((frame, whole))
    }

    /// Drops messages whose timeout passed; returns how many.
    pub fn purge(&mut self, now: Instant) -> usize {
        let before = self.partials.len();
        self.partials.retain(|_, p| p.deadline > now);
        before - self.partials.len()
    }

    /// When the oldest incomplete message times out.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.partials.values().map(|p| p.deadline).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::Header;

    fn part(id: &str, sum: usize, seq: usize, data: &str) -> Frame {
        Frame {
            seq_id: seq as u64 + 1,
            method: 1,
            headers: vec![
                Header::new("type", "event"),
                Header::new("message_id", id),
                Header::new("sum", sum.to_string()),
                Header::new("seq", seq.to_string()),
            ],
            payload: Some(data.as_bytes().to_vec()),
            ..Default::default()
        }
    }

    #[test]
    fn out_of_order_parts_complete_once() {
        let mut r = Reassembler::new(Duration::from_secs(5), 1 << 20);
        let now = Instant::now();
        assert!(r.push(part("m", 3, 2, "c"), now).is_none());
        assert!(r.push(part("m", 3, 0, "a"), now).is_none());
        assert!(r.push(part("m", 3, 0, "a"), now).is_none());
        let (frame, whole) = r.push(part("m", 3, 1, "b"), now).unwrap();
        assert_eq!(whole, b"abc");
        assert_eq!(frame.seq_id, 2, "the completing frame is returned");
        assert_eq!(frame.payload, None);
        assert!(r.next_deadline().is_none());
    }

    #[test]
    fn single_part_passes_through() {
        let mut r = Reassembler::new(Duration::from_secs(5), 1 << 20);
        let (_, whole) = r.push(part("m", 1, 0, "x"), Instant::now()).unwrap();
        assert_eq!(whole, b"x");
    }

    #[test]
    fn incomplete_messages_time_out() {
        let mut r = Reassembler::new(Duration::from_secs(5), 1 << 20);
        let t0 = Instant::now();
        assert!(r.push(part("m", 2, 0, "a"), t0).is_none());
        assert_eq!(r.next_deadline(), Some(t0 + Duration::from_secs(5)));
        assert_eq!(r.purge(t0 + Duration::from_secs(4)), 0);
        assert_eq!(r.purge(t0 + Duration::from_secs(5)), 1);
        // The late second half alone never completes the message.
        assert!(
            r.push(part("m", 2, 1, "b"), t0 + Duration::from_secs(6))
                .is_none()
        );
    }

    #[test]
    fn hostile_headers_are_dropped() {
        let mut r = Reassembler::new(Duration::from_secs(5), 4);
        let now = Instant::now();
        assert!(r.push(part("m", 2, 2, "a"), now).is_none());
        assert!(r.push(part("m", 100_000, 0, "a"), now).is_none());
        let mut bad = part("m", 2, 0, "a");
        bad.headers[2].value = "x".into();
        assert!(r.push(bad, now).is_none());
        assert!(r.push(part("big", 2, 0, "abc"), now).is_none());
        assert!(
            r.push(part("big", 2, 1, "def"), now).is_none(),
            "over max_bytes"
        );
        assert!(r.push(part("one", 1, 0, "too long"), now).is_none());
    }
}

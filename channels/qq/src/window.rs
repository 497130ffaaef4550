//! The reply budget of one trigger (§4.1), as a plain value the daemon keeps and persists with
//! the journaled message: how many replies are left, which `msg_seq` is next, and until when.
//! Times are the caller's wall clock in unix milliseconds, so a restart keeps the window.

use std::time::Duration;

use crate::event::{Message, Scene};
use crate::limits::REPLIES_PER_MESSAGE;
use crate::send::{Reply, Trigger};

/// Replies are not attempted this close to the end of a window: a send on the last second can
/// arrive after it closed and fail with `40034024` (the platform's clock is not ours).
pub const WINDOW_MARGIN: Duration = Duration::from_secs(10);

/// What is left of one trigger. Made by the daemon from a journaled message or event; its
/// fields are what the daemon persists (stable).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyBudget {
    /// What replies answer.
    pub trigger: Trigger,
    /// When the trigger arrived (unix ms, the caller's clock).
    pub opened_at_ms: u64,
    /// How long it can be answered.
    pub window: Duration,
    /// Replies allowed in all.
    pub allowed: u32,
    /// `msg_seq` values handed out so far (the last one used is this number).
    pub used: u32,
}

impl ReplyBudget {
    /// The budget of an inbound message received at `now_ms`: 60 min in C2C, 5 min in groups,
    /// 5 replies.
    pub fn for_message(m: &Message, now_ms: u64) -> Self {
        Self {
            trigger: m.trigger(),
            opened_at_ms: now_ms,
            window: m.scene.reply_window(),
            allowed: REPLIES_PER_MESSAGE,
            used: 0,
        }
    }

    /// The budget of an event id (a click, `FRIEND_ADD`...): one passive message (§2.4).
    pub fn for_event(event_id: &str, scene: &Scene, now_ms: u64) -> Self {
        Self {
            trigger: Trigger::Event(event_id.to_owned()),
            opened_at_ms: now_ms,
            window: scene.reply_window(),
            allowed: 1,
            used: 0,
        }
    }

    /// Replies still possible at `now_ms` (0 once the window, less the margin, has passed).
    pub fn remaining(&self, now_ms: u64) -> u32 {
        let closes = self.opened_at_ms.saturating_add(window_ms(self.window));
        if now_ms.saturating_add(window_ms(WINDOW_MARGIN)) >= closes {
            return 0;
        }
        self.allowed.saturating_sub(self.used)
    }

    /// Takes the next reply handle, or `None` when the budget or the window is spent (queue the
    /// message for the owner's next one). Persist `used` before sending: a retry takes a new
    /// `msg_seq`, never the same one twice.
    pub fn take(&mut self, now_ms: u64) -> Option<Reply> {
        if self.remaining(now_ms) == 0 {
            return None;
        }
        self.used += 1;
        Some(Reply {
            trigger: self.trigger.clone(),
            msg_seq: self.used,
        })
    }
}

fn window_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(scene: Scene) -> Message {
        Message {
            id: "m1".into(),
            scene,
            content: String::new(),
            timestamp: None,
            attachments: Vec::new(),
            from_bot: false,
            addressed: true,
        }
    }

    #[test]
    fn five_replies_with_rising_seq_inside_the_window() {
        let c2c = message(Scene::C2c {
            user_openid: "U".into(),
        });
        let mut b = ReplyBudget::for_message(&c2c, 1_000);
        let seqs: Vec<u32> = (0..6)
            .filter_map(|_| b.take(2_000))
            .map(|r| r.msg_seq)
            .collect();
        assert_eq!(seqs, vec![1, 2, 3, 4, 5]);
        assert_eq!(b.remaining(2_000), 0);
    }

    #[test]
    fn the_window_closes_a_margin_early() {
        let group = message(Scene::Group {
            group_openid: "G".into(),
            member_openid: "M".into(),
        });
        let mut b = ReplyBudget::for_message(&group, 0);
        let five_min = 5 * 60 * 1000;
        assert!(b.take(five_min - 11_000).is_some());
        assert_eq!(b.take(five_min - 10_000), None);
        let c2c = message(Scene::C2c {
            user_openid: "U".into(),
        });
        let b = ReplyBudget::for_message(&c2c, 0);
        assert_eq!(b.remaining(30 * 60 * 1000), 5);
        assert_eq!(b.remaining(60 * 60 * 1000), 0);
    }

    #[test]
    fn an_event_grants_one_reply() {
        let mut b = ReplyBudget::for_event(
            "i1",
            &Scene::C2c {
                user_openid: "U".into(),
            },
            0,
        );
        assert_eq!(
            b.take(1).map(|r| r.trigger),
            Some(Trigger::Event("i1".into()))
        );
        assert_eq!(b.take(2), None);
    }
}

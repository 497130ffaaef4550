//! Owner pairing, for every platform whose login names no owner (Feishu, Telegram, WeCom,
//! DingTalk, QQ): the login stores a one-time code; the first person who sends exactly that code
//! to the bot in a private chat within 10 minutes becomes the owner. The steps an adapter takes
//! with an attempt are in [`super::pair_owner`].
//!
//! The code lives in the account's credentials (`pairing_code`, `pairing_expires`), next to the
//! platform's own secrets, so the login command and the daemon share it without the login
//! opening the store. This module is the pure part: code generation and the attempt rules; an
//! adapter judges a private, code-shaped message with it before any policy.

use std::collections::{HashMap, HashSet};

use rand::Rng;

/// Credential field holding the pending code.
pub const CODE_FIELD: &str = "pairing_code";
/// Credential field holding the code's expiry (Unix seconds).
pub const EXPIRES_FIELD: &str = "pairing_expires";
/// Credential field holding the owner's open_id once paired.
pub use crate::secrets::OWNER_FIELD;

/// How long a code is valid.
pub const CODE_TTL_SECS: u64 = 600;
/// Digits in a code.
pub const CODE_DIGITS: usize = 6;
/// Wrong attempts one sender may make before their further attempts are ignored.
pub const MAX_WRONG_PER_SENDER: u32 = 3;
/// Wrong attempts in all before the code is burned (a million codes, ten guesses).
pub const MAX_WRONG_TOTAL: u32 = 10;

/// A fresh random code.
pub fn new_code() -> String {
    let mut rng = rand::rng();
    (0..CODE_DIGITS)
        .map(|_| char::from(b'0' + rng.random_range(0..10u8)))
        .collect()
}

/// True when `text` has the shape of a code (so ordinary chat never counts as an attempt).
pub fn looks_like_code(text: &str) -> bool {
    let t = text.trim();
    t.len() == CODE_DIGITS && t.bytes().all(|b| b.is_ascii_digit())
}

/// What one private message did to a pending pairing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// Not code-shaped, or no code pending: the message takes the normal path.
    Ignored,
    /// The right code: the sender becomes the owner (the code is now spent).
    Paired,
    /// A wrong code (consumed, never answered: silence does not confirm the bot exists).
    Wrong,
    /// Refused without comparing: expired, burned, or this sender used up their tries.
    Refused(&'static str),
}

/// A pending code and its attempt counters; lives for one run of the component.
#[derive(Debug, Clone)]
pub struct Pairing {
    code: String,
    expires_unix: u64,
    wrong_total: u32,
    wrong_by_sender: HashMap<String, u32>,
    /// Message ids already judged, so a re-push of an attempt is not counted twice.
    seen: HashSet<String>,
    spent: bool,
}

impl Pairing {
    /// A pending code valid until `expires_unix`.
    pub fn new(code: impl Into<String>, expires_unix: u64) -> Self {
        Pairing {
            code: code.into(),
            expires_unix,
            wrong_total: 0,
            wrong_by_sender: HashMap::new(),
            seen: HashSet::new(),
            spent: false,
        }
    }

    /// Whether a code can still pair someone at `now_unix`.
    pub fn is_open(&self, now_unix: u64) -> bool {
        !self.spent && now_unix < self.expires_unix && self.wrong_total < MAX_WRONG_TOTAL
    }

    /// Whether message `msg_id` was already judged (its re-push must not reach the agent).
    pub fn has_judged(&self, msg_id: &str) -> bool {
        self.seen.contains(msg_id)
    }

    /// Judges a private message `text` from `sender` (message `msg_id`) at `now_unix`.
    pub fn attempt(&mut self, sender: &str, msg_id: &str, text: &str, now_unix: u64) -> Attempt {
        if !looks_like_code(text) {
            return Attempt::Ignored;
        }
        if self.has_judged(msg_id) {
            // A re-push of a message already judged: consumed again, counted once.
            return Attempt::Refused("already judged");
        }
        if self.spent {
            return Attempt::Ignored;
        }
        self.seen.insert(msg_id.to_string());
        if now_unix >= self.expires_unix {
            return Attempt::Refused("code expired");
        }
        if self.wrong_total >= MAX_WRONG_TOTAL {
            return Attempt::Refused("code burned after too many wrong attempts");
        }
        let mine = self.wrong_by_sender.entry(sender.to_string()).or_default();
        if *mine >= MAX_WRONG_PER_SENDER {
            return Attempt::Refused("too many wrong attempts from this sender");
        }
        if constant_time_eq(text.trim().as_bytes(), self.code.as_bytes()) {
            self.spent = true;
            return Attempt::Paired;
        }
        *mine += 1;
        self.wrong_total += 1;
        Attempt::Wrong
    }
}

/// Compares without an early exit, so timing says nothing about how much of a guess was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The account's note while nobody is answered for want of an owner: `None` once an owner is
/// known or when the account answers anyone; else how to pair, `to` saying where the code goes
/// ("the bot in a private chat"). Every platform whose login names no owner shows it.
pub fn owner_note(
    spec: &crate::config::AccountSpec,
    owned: bool,
    pairing: Option<&Pairing>,
    to: &str,
) -> Option<String> {
    if owned || spec.senders != crate::protocol::Senders::Owner {
        return None;
    }
    if pairing.is_some_and(|p| p.is_open(crate::supervisor::unix_now())) {
        return Some(format!(
            "no owner paired yet: send the pairing code to {to}"
        ));
    }
    let login = crate::port::login_hint(spec);
    Some(format!(
        "no owner paired: {login}, then send the code to {to}"
    ))
}

impl crate::port::AccountPort {
    /// Counts and logs a pairing attempt that did not pair (a wrong code, a refused attempt);
    /// true when it paired, for the platform to make the sender the owner.
    pub fn pairing_attempted(&self, attempt: Attempt) -> bool {
        let key = &self.spec().key;
        match attempt {
            Attempt::Paired => return true,
            Attempt::Wrong => {
                self.dropped("pairing_wrong");
                tracing::info!(account = %key, "pairing: wrong code");
            }
            Attempt::Refused(why) => {
                self.dropped("pairing_refused");
                tracing::info!(account = %key, why, "pairing attempt refused");
            }
            Attempt::Ignored => {}
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_six_digits() {
        for _ in 0..20 {
            let c = new_code();
            assert!(looks_like_code(&c), "{c}");
        }
        assert!(looks_like_code(" 123456\n"));
        assert!(!looks_like_code("12345"));
        assert!(!looks_like_code("hello!"));
        assert!(!looks_like_code("1234567"));
    }

    #[test]
    fn right_code_pairs_once() {
        let mut p = Pairing::new("123456", 100);
        assert_eq!(p.attempt("ou_a", "m0", "hello", 10), Attempt::Ignored);
        assert_eq!(p.attempt("ou_a", "m1", "654321", 10), Attempt::Wrong);
        assert_eq!(p.attempt("ou_a", "m2", " 123456 ", 10), Attempt::Paired);
        assert!(!p.is_open(10));
        // Spent: the same code from anyone else is an ordinary message now.
        assert_eq!(p.attempt("ou_b", "m3", "123456", 10), Attempt::Ignored);
        // The pairing message itself, re-pushed, is still consumed.
        assert_eq!(
            p.attempt("ou_a", "m2", "123456", 11),
            Attempt::Refused("already judged")
        );
    }

    #[test]
    fn expiry_and_repushes() {
        let mut p = Pairing::new("123456", 100);
        assert_eq!(p.attempt("ou_a", "m1", "000000", 10), Attempt::Wrong);
        assert_eq!(
            p.attempt("ou_a", "m1", "000000", 11),
            Attempt::Refused("already judged")
        );
        assert_eq!(
            p.attempt("ou_a", "m2", "123456", 100),
            Attempt::Refused("code expired")
        );
        assert!(!p.is_open(100));
    }

    #[test]
    fn attempts_are_rate_limited_per_sender_and_in_all() {
        let mut p = Pairing::new("123456", 1000);
        for i in 0..MAX_WRONG_PER_SENDER {
            assert_eq!(
                p.attempt("ou_a", &format!("a{i}"), "000000", 1),
                Attempt::Wrong
            );
        }
        assert_eq!(
            p.attempt("ou_a", "a-last", "123456", 1),
            Attempt::Refused("too many wrong attempts from this sender")
        );
        let mut n = MAX_WRONG_PER_SENDER;
        let mut s = 0;
        while n < MAX_WRONG_TOTAL {
            let who = format!("ou_{s}");
            assert_eq!(
                p.attempt(&who, &format!("b{n}"), "000000", 1),
                Attempt::Wrong
            );
            n += 1;
            if n.is_multiple_of(MAX_WRONG_PER_SENDER) {
                s += 1;
            }
        }
        assert!(!p.is_open(1));
        assert_eq!(
            p.attempt("ou_new", "c", "123456", 1),
            Attempt::Refused("code burned after too many wrong attempts")
        );
    }
}

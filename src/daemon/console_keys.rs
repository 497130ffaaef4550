//! The web console's keys: one-time login links, the sessions they open, and the pace of
//! login attempts. Held by the daemon's [`super::Core`], so the control socket (which makes a
//! link for `scv-bridge console`) and the console's server (which redeems it) share them; in
//! memory only, so a restart signs everybody out.
//!
//! A link's token is single use and expires ([`LINK_TTL_MS`]); a session lasts
//! [`SESSION_TTL_MS`] and carries its own CSRF token. Times come from the injected clock.

use std::collections::HashMap;
use std::sync::Mutex;

use rand::RngCore;

use crate::clock::Clock;

/// How long a login link works.
pub const LINK_TTL_MS: u64 = 5 * 60_000;
/// How long a session lasts.
pub const SESSION_TTL_MS: u64 = 12 * 60 * 60_000;
/// Failed login attempts allowed per [`ATTEMPT_WINDOW_MS`]; more are refused unread.
pub const MAX_FAILED_ATTEMPTS: u32 = 10;
/// The window failed attempts are counted in.
pub const ATTEMPT_WINDOW_MS: u64 = 60_000;
/// Links waiting at once; making one more drops the oldest (a link nobody uses is not kept).
const MAX_LINKS: usize = 16;
/// Sessions at once; opening one more ends the oldest.
const MAX_SESSIONS: usize = 16;

/// An open session: the value of its cookie and the CSRF token its forms carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// The session cookie's value.
    pub cookie: String,
    /// The token every state-changing request of this session must carry.
    pub csrf: String,
}

/// Why a login link was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Unknown, used or expired.
    Invalid,
    /// Too many failed attempts lately; try again after the window.
    TooMany,
}

#[derive(Default)]
struct Inner {
    /// Token → when it stops working (Unix ms).
    links: HashMap<String, u64>,
    /// Cookie → (CSRF token, when it ends).
    sessions: HashMap<String, (String, u64)>,
    /// Failed attempts in the current window, and when the window started.
    failed: (u32, u64),
}

/// The console's links and sessions.
pub struct ConsoleKeys {
    clock: Clock,
    inner: Mutex<Inner>,
}

impl ConsoleKeys {
    /// Keys on `clock`.
    pub fn new(clock: Clock) -> Self {
        ConsoleKeys {
            clock,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// A new one-time login token.
    pub fn make_link(&self) -> String {
        let token = random_token();
        let now = self.clock.now_ms();
        let mut inner = self.lock();
        inner.links.retain(|_, until| *until > now);
        if inner.links.len() >= MAX_LINKS
            && let Some(oldest) = inner
                .links
                .iter()
                .min_by_key(|(_, until)| **until)
                .map(|(t, _)| t.clone())
        {
            inner.links.remove(&oldest);
        }
        inner.links.insert(token.clone(), now + LINK_TTL_MS);
        token
    }

    /// Exchanges a link's token for a session; the token never works again.
    pub fn redeem(&self, token: &str) -> Result<Session, Refused> {
        let now = self.clock.now_ms();
        let mut inner = self.lock();
        let (count, since) = inner.failed;
        if now.saturating_sub(since) >= ATTEMPT_WINDOW_MS {
            inner.failed = (0, now);
        } else if count >= MAX_FAILED_ATTEMPTS {
            return Err(Refused::TooMany);
        }
        match inner.links.remove(token) {
            Some(until) if until > now => {}
            _ => {
                inner.failed.0 += 1;
                return Err(Refused::Invalid);
            }
        }
        inner.sessions.retain(|_, (_, until)| *until > now);
        if inner.sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = inner
                .sessions
                .iter()
                .min_by_key(|(_, (_, until))| *until)
                .map(|(c, _)| c.clone())
        {
            inner.sessions.remove(&oldest);
        }
        let session = Session {
            cookie: random_token(),
            csrf: random_token(),
        };
        inner.sessions.insert(
            session.cookie.clone(),
            (session.csrf.clone(), now + SESSION_TTL_MS),
        );
        Ok(session)
    }

    /// The session a cookie value opens, while it lasts.
    pub fn session(&self, cookie: &str) -> Option<Session> {
        let now = self.clock.now_ms();
        let inner = self.lock();
        let (csrf, until) = inner.sessions.get(cookie)?;
        (*until > now).then(|| Session {
            cookie: cookie.to_string(),
            csrf: csrf.clone(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// 32 random bytes as 64 hex digits (from the operating system's generator).
fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether two tokens are equal, in time that does not depend on where they differ.
pub fn same_token(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_opens_one_session_once() {
        let keys = ConsoleKeys::new(Clock::manual(1_000_000));
        let token = keys.make_link();
        let s = keys.redeem(&token).expect("first use");
        assert_eq!(keys.session(&s.cookie), Some(s.clone()));
        assert_eq!(keys.redeem(&token), Err(Refused::Invalid), "single use");
        assert_ne!(s.cookie, s.csrf);
        assert_eq!(s.cookie.len(), 64);
    }

    #[test]
    fn a_link_expires_and_so_does_a_session() {
        let clock = Clock::manual(1_000_000);
        let keys = ConsoleKeys::new(clock.clone());
        let late = keys.make_link();
        let token = keys.make_link();
        let s = keys.redeem(&token).expect("in time");
        clock.advance(std::time::Duration::from_millis(LINK_TTL_MS));
        assert_eq!(keys.redeem(&late), Err(Refused::Invalid), "expired");
        clock.advance(std::time::Duration::from_millis(SESSION_TTL_MS));
        assert_eq!(keys.session(&s.cookie), None);
    }

    #[test]
    fn failed_attempts_are_paced() {
        let clock = Clock::manual(1_000_000);
        let keys = ConsoleKeys::new(clock.clone());
        for _ in 0..MAX_FAILED_ATTEMPTS {
            assert_eq!(keys.redeem("guess"), Err(Refused::Invalid));
        }
        let token = keys.make_link();
        assert_eq!(keys.redeem(&token), Err(Refused::TooMany));
        clock.advance(std::time::Duration::from_millis(ATTEMPT_WINDOW_MS));
        assert!(keys.redeem(&token).is_ok(), "the window passed");
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same_token("abc", "abc"));
        assert!(!same_token("abc", "abd"));
        assert!(!same_token("abc", "ab"));
    }
}

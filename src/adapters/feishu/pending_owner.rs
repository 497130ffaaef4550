//! The scanner of "scan to create" as a *pending owner* (spec A1.8): the login stores the
//! open_id the accounts host reported; the first private message from that open_id binds them
//! as the owner with no code. Whether that id is the scanner's as the new app sees it is
//! unconfirmed, so it is only ever a candidate: never the bot's own id, never from a group,
//! only while no owner is set, and only for 24 hours; the pairing code stays valid beside it.
//!
//! Written by `login` (through the Feishu login flow), read by the component's setup, dropped
//! with the pairing fields when anyone becomes the owner. The field names must stay stable:
//! a stored login carries them across restarts.

use crate::secrets::Credentials;

/// The stored candidate's open_id.
pub(super) const FIELD: &str = "pending_owner";
/// Until when (Unix seconds) the candidate may bind.
pub(super) const UNTIL_FIELD: &str = "pending_owner_until";
/// How long a scan's candidate waits for their first private message.
pub(super) const TTL_SECS: u64 = 24 * 3600;

/// `entry` with `open_id` as the pending owner until `now_unix` + 24 h, unless it is missing
/// or is the bot's own id (cc-connect saw the accounts host return the bot's).
pub(super) fn with_candidate(
    entry: Credentials,
    open_id: Option<&str>,
    bot_open_id: &str,
    now_unix: u64,
) -> Credentials {
    match open_id.filter(|o| !o.is_empty() && *o != bot_open_id) {
        Some(o) => entry
            .with(FIELD, o)
            .with(UNTIL_FIELD, (now_unix + TTL_SECS).to_string()),
        None => entry,
    }
}

/// The candidate still allowed to bind at `now_unix`: stored, not expired, not the bot.
pub(super) fn candidate(creds: &Credentials, bot_open_id: &str, now_unix: u64) -> Option<String> {
    let get = |k: &str| creds.get(k).map(|s| s.expose().to_string());
    let until: u64 = get(UNTIL_FIELD)?.parse().ok()?;
    get(FIELD).filter(|o| !o.is_empty() && o != bot_open_id && now_unix < until)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_fresh_candidate_who_is_not_the_bot() {
        let e = with_candidate(Credentials::default(), Some("ou_me"), "ou_bot", 100);
        assert_eq!(candidate(&e, "ou_bot", 100).as_deref(), Some("ou_me"));
        assert_eq!(candidate(&e, "ou_bot", 100 + TTL_SECS), None, "expired");
        let bot = with_candidate(Credentials::default(), Some("ou_bot"), "ou_bot", 100);
        assert_eq!(bot.get(FIELD), None, "never the bot's own id");
        let none = with_candidate(Credentials::default(), None, "ou_bot", 100);
        assert_eq!(candidate(&none, "ou_bot", 100), None);
    }
}

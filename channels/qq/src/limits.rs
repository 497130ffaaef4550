//! The platform's limits and windows as constants, for the daemon to pace and split by. Section
//! numbers point to `shared/specs/qq-bot.md`. Where the spec says **unconfirmed**, the value is
//! the safe side of what clients use, and the comment says so. Renaming one is an API change.

use std::time::Duration;

/// Access token lifetime the platform documents (§1.2); the live value comes in `expires_in`.
pub const TOKEN_LIFETIME: Duration = Duration::from_secs(7200);
/// The token endpoint hands out a new token only in the last minute of the old one (§1.2).
pub const TOKEN_NEW_WINDOW: Duration = Duration::from_secs(60);
/// How long before expiry the cache fetches again: inside [`TOKEN_NEW_WINDOW`] (earlier would
/// only get the same token back) and far enough from expiry for a slow answer.
pub const TOKEN_REFRESH_AHEAD: Duration = Duration::from_secs(30);

/// A one-to-one (C2C) message can be answered for 60 minutes (§4.1).
pub const C2C_REPLY_WINDOW: Duration = Duration::from_secs(60 * 60);
/// A group @-message can be answered for 5 minutes (§4.1, §5).
pub const GROUP_REPLY_WINDOW: Duration = Duration::from_secs(5 * 60);
/// Replies allowed per inbound message (§4.1). One report says more went out; 5 is the budget.
pub const REPLIES_PER_MESSAGE: u32 = 5;

/// Longest text sent in one message, in characters. **Unconfirmed** (§4.2: clients split at
/// 2000 or 4000); we take the smaller, which no report says was refused.
pub const MAX_TEXT_CHARS: usize = 2000;
/// An answer is sent in at most this many passive chunks (§4.3's fallback for streaming), which
/// leaves one reply of the budget for the next thing the owner is waiting for.
pub const MAX_ANSWER_CHUNKS: u32 = 4;

/// Largest inbound attachment downloaded. **Unconfirmed** (§2.1, §7: cc-connect caps at 20 MB).
pub const MAX_INBOUND_ATTACHMENT_BYTES: u64 = 20 * 1024 * 1024;
/// Largest file sent inline as `file_data`. **Unconfirmed** (§4.4: nonebot switches to the
/// chunked upload above 10 MB); bigger files go in blocks.
pub const MAX_INLINE_UPLOAD_BYTES: u64 = 10 * 1024 * 1024;
/// Largest file uploaded at all (the chunked path). The platform's limit is **unconfirmed**
/// (§7); this is the cap the WeChat side uses for media, and the file is held in memory.
pub const MAX_UPLOAD_BYTES: u64 = 100 * 1024 * 1024;

/// First wait after a rate-limit signal (HTTP 429, `22009`, `100001`): none is documented, so
/// 1 s doubling to [`RATE_LIMIT_MAX_WAIT`] (§6).
pub const RATE_LIMIT_FIRST_WAIT: Duration = Duration::from_secs(1);
/// Longest wait after repeated rate-limit signals (§6).
pub const RATE_LIMIT_MAX_WAIT: Duration = Duration::from_secs(60);
/// Wait after the gateway closed with 4008 "sending too fast" (§1.3: the Tencent plugin waits 60 s).
pub const GATEWAY_TOO_FAST_WAIT: Duration = Duration::from_secs(60);

/// Typing (`input_notify`) lasts 1..=60 s (§4.3).
pub const MAX_TYPING_SECONDS: u32 = 60;
/// A keyboard has at most 5 rows of 5 buttons (§4.5).
pub const MAX_KEYBOARD_ROWS: usize = 5;
/// Buttons per keyboard row (§4.5).
pub const MAX_BUTTONS_PER_ROW: usize = 5;

/// Client timeout for OpenAPI calls: at least 5 s, or the result of a sent message can be lost
/// (§4.2).
pub const API_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the dedupe set keeps a message id: at least 24 h (§2.3).
pub const DEDUPE_WINDOW: Duration = Duration::from_secs(24 * 60 * 60);

/// `GROUP_AND_C2C_EVENT` (1<<25): C2C and group @ messages, friend and group membership events.
pub const INTENT_GROUP_AND_C2C: u32 = 1 << 25;
/// `INTERACTION` (1<<26): button clicks.
pub const INTENT_INTERACTION: u32 = 1 << 26;
/// The intents we identify with (the doc's example value 100663296).
pub const DEFAULT_INTENTS: u32 = INTENT_GROUP_AND_C2C | INTENT_INTERACTION;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intents_match_the_documented_value() {
        assert_eq!(DEFAULT_INTENTS, 100_663_296);
        assert!(TOKEN_REFRESH_AHEAD < TOKEN_NEW_WINDOW);
        assert!(API_TIMEOUT >= Duration::from_secs(5));
    }
}

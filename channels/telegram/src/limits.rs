//! The platform's limits and paces (spec §7, §4.6), public so the daemon splits, paces and
//! refuses by the same numbers the fake enforces. Changing one changes both sides: keep them
//! the spec's values.

use std::time::Duration;

/// Longest message text, in UTF-16 code units after entity parsing (spec §4.1: "1–4096
/// characters"; UTF-16 is assumed, unconfirmed, and is the stricter count for astral characters).
pub const MAX_TEXT_UTF16: usize = 4096;
/// Longest media caption, in UTF-16 code units after parsing.
pub const MAX_CAPTION_UTF16: usize = 1024;
/// Longest `sendMessageDraft` text.
pub const MAX_DRAFT_UTF16: usize = 4096;
/// Longest `callback_data` of an inline button, in bytes.
pub const MAX_CALLBACK_DATA_BYTES: usize = 64;
/// Longest `answerCallbackQuery` text, in characters.
pub const MAX_CALLBACK_ANSWER_CHARS: usize = 200;
/// Longest `/start` deep-link payload (pairing codes), characters from `A-Za-z0-9_-`.
pub const MAX_START_PAYLOAD: usize = 64;
/// The most updates one `getUpdates` returns.
pub const MAX_UPDATES_PER_POLL: u8 = 100;
/// How long the server keeps an unconfirmed update.
pub const PENDING_UPDATES_KEPT: Duration = Duration::from_secs(24 * 3600);

/// Largest file `getFile` lets a bot download. Telegram says "20 MB" without saying which
/// megabyte (unconfirmed); the decimal one is the smaller, so nothing we accept is refused.
pub const MAX_DOWNLOAD_BYTES: u64 = 20_000_000;
/// A `getFile` link lives at least this long; after it, call `getFile` again.
pub const FILE_LINK_LIFETIME: Duration = Duration::from_secs(3600);
/// Largest photo a multipart upload may carry (decimal MB, as above).
pub const MAX_UPLOAD_PHOTO_BYTES: u64 = 10_000_000;
/// Largest other file (document, voice, video) a multipart upload may carry.
pub const MAX_UPLOAD_FILE_BYTES: u64 = 50_000_000;

/// How long one `sendChatAction` shows "typing".
pub const CHAT_ACTION_SHOWN: Duration = Duration::from_secs(5);
/// How often to repeat `sendChatAction` while the agent works: under the 5 s it shows.
pub const TYPING_REPEAT: Duration = Duration::from_secs(4);

/// At most one message a second into one chat (FAQ; short bursts pass, then 429).
pub const CHAT_SEND_INTERVAL: Duration = Duration::from_secs(1);
/// At most this many messages a minute into one group.
pub const GROUP_SENDS_PER_MINUTE: u32 = 20;
/// At most this many messages a second over the whole bot.
pub const BOT_SENDS_PER_SECOND: u32 = 30;

/// A draft preview lapses after about this long unless refreshed (spec §4.3).
pub const DRAFT_PREVIEW_LIFETIME: Duration = Duration::from_secs(30);
/// How often to refresh a draft during a long pause: well inside its lifetime.
pub const DRAFT_REFRESH: Duration = Duration::from_secs(10);
/// Least time between two draft frames. The draft rate limit is unconfirmed; the spec says
/// 0.5–1 s, and the slower end is the safe one.
pub const DRAFT_MIN_INTERVAL: Duration = Duration::from_secs(1);
/// Least time between two edits of a streamed message in a private chat.
pub const EDIT_MIN_INTERVAL_PRIVATE: Duration = Duration::from_secs(1);
/// Least time between two edits in a group (~20 edits a minute per group, folklore).
pub const EDIT_MIN_INTERVAL_GROUP: Duration = Duration::from_secs(3);

/// The long-poll time the client asks for (the spec says 25–50 s).
pub const DEFAULT_POLL_TIMEOUT: Duration = Duration::from_secs(30);
/// What the client adds to the poll time before it gives up on a long poll, so the server,
/// not the client, normally ends an idle poll.
pub const POLL_MARGIN: Duration = Duration::from_secs(10);
/// The longest answer time for every call but long polls and file transfers.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest time for one upload or download (50 MB over a slow link).
pub const TRANSFER_TIMEOUT: Duration = Duration::from_secs(600);

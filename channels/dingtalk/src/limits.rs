//! The platform's limits and the pace the daemon keeps, as public constants (spec §6). The
//! daemon paces and splits by these; the fake enforces the ones the platform enforces.
//! Values marked unconfirmed in the spec are chosen on the safe side and say so.

use std::time::Duration;

/// A Stream ticket is good for one connection within this long (spec §1.3).
pub const TICKET_LIFETIME: Duration = Duration::from_secs(90);
/// An access token lives this long; asking again while valid returns the same one (§1.2).
pub const TOKEN_LIFETIME: Duration = Duration::from_secs(7200);
/// Refresh the access token this long before it expires (Python SDK, cc-connect: 5 min).
pub const TOKEN_REFRESH_MARGIN: Duration = Duration::from_secs(300);
/// ACK a push within this long (spec §1.6 "target < 1 s"): journal, then ACK at once.
pub const ACK_TARGET: Duration = Duration::from_secs(1);
/// Never later than this (spec §1.6); the Node SDK says unanswered pushes are retried within 60 s.
pub const ACK_DEADLINE: Duration = Duration::from_secs(5);
/// The server closes a socket about this long after its `disconnect` frame (spec §1.7); the
/// old socket is read this long at most (a little more than the server's 10 s).
pub const DISCONNECT_GRACE: Duration = Duration::from_secs(15);
/// No frame of any kind (SYSTEM pings included) for this long means a zombie socket: reconnect
/// (spec §1.8; unconfirmed, default 120 s, configurable in `StreamOptions`).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// WebSocket-level ping cadence (spec §1.8 recommendation).
pub const WS_PING_INTERVAL: Duration = Duration::from_secs(30);
/// A WebSocket pong must come within this long of our ping.
pub const WS_PONG_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest inbound frame accepted. The Java SDK caps at 256 KiB; we take up to 1 MiB so that no
/// frame an official SDK accepts is refused (a refused robot message is never re-pushed), while
/// a hostile frame stays bounded.
pub const MAX_FRAME_BYTES: usize = 1 << 20;
/// Reconnect backoff: first wait, doubling to [`RECONNECT_MAX`], plus up to 20 % jitter (Go SDK).
pub const RECONNECT_BASE: Duration = Duration::from_secs(3);
/// Longest reconnect wait.
pub const RECONNECT_MAX: Duration = Duration::from_secs(60);

/// Check a session webhook's expiry with this margin (spec §4.2: ≥ 5 min).
pub const WEBHOOK_MARGIN: Duration = Duration::from_secs(300);
/// Recipients per `oToMessages/batchSend` (spec §4.3).
pub const BATCH_SEND_MAX_USERS: usize = 20;
/// Largest group `msgParam`, in bytes (spec §4.3). Unconfirmed for one-to-one sends; the
/// markdown chunker stays far below it for both.
pub const GROUP_MSG_PARAM_MAX_BYTES: usize = 15_000;
/// Markdown chunk size, in characters (spec §4.4: ≈ 3 500–3 800 observed; the low end).
pub const MARKDOWN_CHUNK_CHARS: usize = 3_500;
/// The notification title shown on mobile (spec §4.4: about 15 characters).
pub const MARKDOWN_TITLE_CHARS: usize = 15;

/// New-API calls per second per app per API (spec §4.9, observed ≈ 20).
pub const API_QPS: u32 = 20;
/// Wait at least this long after a QPS refusal (spec §4.9: "wait ≥ 1 s").
pub const QPS_SLOW_DOWN: Duration = Duration::from_secs(1);
/// Wait this long after a robot-send throttle (`flowControlledStaffIdList`, `send.too.fast`,
/// webhook 130101). The platform gives no figure (unconfirmed); custom robots are blocked for
/// 10 min after 20 msgs/min, so a minute is the floor the caller backs off from.
pub const THROTTLE_SLOW_DOWN: Duration = Duration::from_secs(60);

/// Image, video and file uploads: 20 MB (spec §4.5).
pub const MEDIA_MAX_BYTES: u64 = 20 * 1024 * 1024;
/// Voice uploads: 2 MB (spec §4.5).
pub const VOICE_MAX_BYTES: u64 = 2 * 1024 * 1024;

/// A card parameter key, in bytes (spec §6).
pub const CARD_PARAM_KEY_MAX_BYTES: usize = 100;
/// A card parameter value, in bytes (spec §6: 1 KB, strings only).
pub const CARD_PARAM_VALUE_MAX_BYTES: usize = 1024;
/// Streamed card content past which the card is finished and a new one started (spec §4.6:
/// ≤ 3 K advised; what the service does past it is unconfirmed).
pub const CARD_CONTENT_MAX_CHARS: usize = 3_000;
/// At most one card update per this interval, one in flight (spec §4.6, observed 1 000 ms).
pub const CARD_UPDATE_INTERVAL: Duration = Duration::from_secs(1);
/// After a 403/429/5xx on a card call, answer in markdown for this long (spec §4.6).
pub const CARD_DEGRADE_FOR: Duration = Duration::from_secs(30 * 60);

//! The platform's limits and windows (spec §6), as the daemon paces and checks by them.
//!
//! Each constant names its source in the spec; where the spec says unconfirmed, the value is
//! the safe side of what is known and the comment says so. Changing one changes what the
//! fake enforces too, so a test notices.

use std::time::Duration;

/// The public endpoint (§1.1). Privately deployed WeCom shows its own URL in the console.
pub const DEFAULT_WS_URL: &str = "wss://openws.work.weixin.qq.com";

/// Heartbeat period (§1.4).
pub const PING_INTERVAL: Duration = Duration::from_secs(30);
/// Unanswered pings after which the link is dead and is dialled again (§1.4).
pub const MISSED_PONGS: u32 = 2;
/// How long to wait for the subscribe response (§1.3).
pub const SUBSCRIBE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long to wait for the ack of an ordinary command frame (§6).
pub const ACK_TIMEOUT: Duration = Duration::from_secs(5);
/// How long to wait for the ack of an upload frame (§4.6).
pub const UPLOAD_ACK_TIMEOUT: Duration = Duration::from_secs(30);

/// First reconnect delay; it doubles per failure (§1.6).
pub const RECONNECT_MIN: Duration = Duration::from_secs(1);
/// Largest reconnect delay (§1.6).
pub const RECONNECT_MAX: Duration = Duration::from_secs(30);
/// Jitter on reconnect delays, as a fraction (the daemon's rule in §1.6).
pub const RECONNECT_JITTER: f64 = 0.2;
/// Wait after `45009` on subscribe; the exact window is unconfirmed, so at least a minute (§5).
pub const SUBSCRIBE_RATE_LIMIT_WAIT: Duration = Duration::from_secs(60);
/// Subscribe refusals with an unknown code in a row that make the credentials invalid (§5).
pub const AUTH_FAILURES_FATAL: u32 = 3;

/// Stream window on the platform: ~6 min from the user's message (§4.2; 10 min claimed,
/// unconfirmed, so the shorter one).
pub const STREAM_WINDOW: Duration = Duration::from_secs(6 * 60);
/// Finish a stream by this long after the user's message and send the rest proactively (§4.2).
pub const STREAM_FINISH_BY: Duration = Duration::from_secs(330);
/// Welcome replies and card updates must go out this soon after their event (§4.7, §4.8).
pub const EVENT_REPLY_WINDOW: Duration = Duration::from_secs(5);
/// Least gap between intermediate stream frames (§4.5 recommendation).
pub const STREAM_FRAME_INTERVAL: Duration = Duration::from_millis(500);

/// `stream.content` limit, bytes of UTF-8 (§4.4).
pub const STREAM_CONTENT_MAX_BYTES: usize = 20_480;
/// Markdown message split size in characters: no limit is documented, others use 2000 bytes to
/// 4000 characters; 3500 is the spec's recommendation (§4.4, unconfirmed).
pub const MARKDOWN_MAX_CHARS: usize = 3_500;
/// Images on one finish frame (§4.5).
pub const FINISH_IMAGES_MAX: usize = 10;
/// `feedback.id` limit in bytes (§4.5).
pub const FEEDBACK_ID_MAX_BYTES: usize = 256;

/// Proactive sends per minute (§4.3; scope unconfirmed, so paced per bot, the stricter reading).
pub const SEND_PER_MINUTE: u32 = 30;
/// Proactive sends per hour (§4.3; scope unconfirmed, paced per bot).
pub const SEND_PER_HOUR: u32 = 1_000;
/// Least gap between proactive sends (§4.3).
pub const SEND_SPACING: Duration = Duration::from_secs(2);
/// Wait after a send refused with `45009` (the send-rate code is unconfirmed; a minute window).
pub const SEND_RATE_LIMIT_WAIT: Duration = Duration::from_secs(60);
/// Messages a user may have in progress with the bot at once (§2.3).
pub const IN_PROGRESS_PER_USER: usize = 3;

/// Inbound download URLs stay valid about this long (§2.6): download right after journaling.
pub const MEDIA_URL_VALIDITY: Duration = Duration::from_secs(5 * 60);
/// Inbound media size cap (none documented; the spec recommends 20 MB, §2.6).
pub const INBOUND_MEDIA_MAX_BYTES: u64 = 20 * 1024 * 1024;
/// Download timeout for images (§2.6).
pub const IMAGE_DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(30);
/// Download timeout for other files (§2.6).
pub const FILE_DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(60);

/// Upload chunk size before base64 (§4.6).
pub const UPLOAD_CHUNK_BYTES: usize = 512 * 1024;
/// Chunks per upload (§4.6).
pub const UPLOAD_MAX_CHUNKS: usize = 100;
/// How long an uploaded `media_id` stays valid (§4.6).
pub const MEDIA_ID_LIFETIME: Duration = Duration::from_secs(3 * 24 * 3600);
/// Outbound image limit (§4.6).
pub const IMAGE_MAX_BYTES: u64 = 10 * 1024 * 1024;
/// Outbound video limit (§4.6).
pub const VIDEO_MAX_BYTES: u64 = 10 * 1024 * 1024;
/// Outbound voice limit, AMR only (§4.6).
pub const VOICE_MAX_BYTES: u64 = 2 * 1024 * 1024;
/// Outbound file limit; anything larger is refused (§4.6).
pub const FILE_MAX_BYTES: u64 = 20 * 1024 * 1024;

/// Buttons on a card (§4.7).
pub const CARD_BUTTONS_MAX: usize = 6;
/// Button key limit in bytes (§4.7).
pub const CARD_KEY_MAX_BYTES: usize = 1_024;
/// `task_id` limit in bytes (§4.7).
pub const TASK_ID_MAX_BYTES: usize = 128;

/// Largest inbound WebSocket message accepted: none documented, clients cap at 1 MiB (§1.2).
pub const MAX_INBOUND_FRAME_BYTES: usize = 1 << 20;

//! The `[dingtalk.ACCOUNT]` table: DingTalk's own keys, checked at load through [`TABLE`].

use linkme::distributed_slice;

use crate::config::{Channel, KeyRange, PLATFORM_TABLES, TableSchema, account_range};
use crate::port::setup::{Said, Setup};

crate::platform_table!(
    /// DingTalk-only settings (every key optional).
    DingtalkSettings {
    /// The owner's staff id (`senderStaffId`, the org userId in the robot's corp); unset: the
    /// owner pairs with the code `login` shows.
    owner: Option<String>,
    /// The new-API base (default `https://api.dingtalk.com`; a test's fake).
    api_base: Option<String>,
    /// The old-API base (default `https://oapi.dingtalk.com`: media uploads, session webhooks).
    oapi_base: Option<String>,
    /// Seconds without any Stream frame (the server's pings included) before the connection
    /// counts as a zombie and is replaced (default 120).
    idle_timeout_seconds: Option<u64>,
    /// The AI-card template answers are streamed into (`….schema`); unset: whole answers.
    card_template_id: Option<String>,
    /// The template's streaming variable (default `content`).
    card_content_key: Option<String>,
    /// A card template for confirm questions and tool approvals (spec §4.7 B): string
    /// variables `question` and `answered` (empty while open; the template shows its buttons
    /// only then), two buttons whose callback params carry `answer`: `yes` / `no`. Unset: Yes /
    /// No links that need no template.
    question_card_template_id: Option<String>,
    /// The "🤔Thinking" reaction on the owner's message while the agent works (default on;
    /// two API calls an answer, which may count against the app's monthly quota).
    thinking_reaction: Option<bool>,
});

const RANGES: &[KeyRange] = &[
    // Below the server's own ping cadence (20–30 s, unconfirmed) a healthy socket is replaced
    // needlessly; short values are for tests against the fake.
    account_range(
        Channel::Dingtalk,
        "idle_timeout_seconds",
        2,
        3_600,
        "seconds",
    ),
];

/// DingTalk's account tables, for the configuration.
#[distributed_slice(PLATFORM_TABLES)]
static TABLE: TableSchema = TableSchema {
    channel: Channel::Dingtalk,
    check: check_table,
    ranges: RANGES,
};

/// What `init` asks when it adds a DingTalk robot: its name (the client id and secret are the
/// login's).
pub static SETUP: Setup = Setup {
    name: Said {
        en: "A name for the DingTalk robot",
        zh: "钉钉机器人的名称",
    },
    default_name: "team",
    questions: &[],
};

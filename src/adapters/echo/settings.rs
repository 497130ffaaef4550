//! The `[echo.ACCOUNT]` table: Echo's own keys, checked at load through [`TABLE`].

use linkme::distributed_slice;

use crate::config::{Channel, KeyRange, PLATFORM_TABLES, TableSchema};
use crate::port::setup::{Goes, Question, Said, Setup};

crate::platform_table!(
    /// Echo-only settings.
    EchoSettings {
    /// The Echo server's `host:port`.
    address: Option<String>,
    /// The owner's Echo id; unset: the owner pairs with the code `login` shows.
    owner: Option<String>,
});

/// Echo's table has no numeric keys.
const RANGES: &[KeyRange] = &[];

/// Echo's account tables, for the configuration.
#[distributed_slice(PLATFORM_TABLES)]
static TABLE: TableSchema = TableSchema {
    channel: Channel::Echo,
    check: check_table,
    ranges: RANGES,
};

/// What `init` asks when it adds an Echo account: its name and the server's address.
pub static SETUP: Setup = Setup {
    name: Said {
        en: "A name for the Echo bot",
        zh: "Echo 机器人的名称",
    },
    default_name: "bot",
    questions: &[Question {
        key: "address",
        goes: Goes::Table,
        prompt: Said {
            en: "The Echo server's host:port",
            zh: "Echo 服务器的 host:port",
        },
        choices: &[],
        default: None,
    }],
};

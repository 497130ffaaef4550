//! Typed ids of chats, senders and platform messages; each is created by an adapter from platform data.

use std::fmt;

use serde::{Deserialize, Serialize};

macro_rules! id_type {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl $name {
            /// Wraps a platform value.
            pub fn new(s: impl Into<String>) -> Self {
                $name(s.into())
            }

            /// The platform value.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

id_type!(
    /// A conversation on one account: a WeChat peer's user id (direct chats), a Feishu `chat_id`.
    /// Stable for the life of the conversation; per-chat order and history are keyed by it.
    ChatId
);
id_type!(
    /// Who wrote a message: the platform's user id (WeChat `from_user_id`, Feishu `open_id`).
    /// Compared exactly with the stored owner id; never a display name.
    SenderId
);
id_type!(
    /// The platform's id of one message (WeChat `message_id` or its fallback key, Feishu
    /// `message_id`). The journal deduplicates inbound messages by (account, this id), so
    /// redeliveries map to it; the outbox keeps it for sent messages that may be updated later.
    PlatformMsgId
);

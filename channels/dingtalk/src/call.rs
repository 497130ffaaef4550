//! The calls this crate makes, named for errors and logs. Names are stable: the daemon may show
//! them in status lines.

use std::fmt;

/// One kind of call to the platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Call {
    /// `POST /v1.0/oauth2/accessToken`.
    Token,
    /// `POST /v1.0/gateway/connections/open`.
    OpenConnection,
    /// The Stream WebSocket (handshake and frames).
    Stream,
    /// `POST /v1.0/robot/oToMessages/batchSend`.
    BatchSend,
    /// `POST /v1.0/robot/groupMessages/send`.
    GroupSend,
    /// `POST <sessionWebhook>`.
    SessionWebhook,
    /// `POST /v1.0/card/instances/createAndDeliver`.
    CardCreate,
    /// `PUT /v1.0/card/streaming`.
    CardStream,
    /// `PUT /v1.0/card/instances`.
    CardUpdate,
    /// `POST /v1.0/robot/messageFiles/download`.
    Download,
    /// `GET <downloadUrl>`.
    DownloadUrl,
    /// `POST {oapi}/media/upload`.
    Upload,
    /// `POST /v1.0/robot/emotion/reply` and `/recall` (the typing reaction).
    Emotion,
}

impl Call {
    /// The short name used in messages.
    pub fn name(self) -> &'static str {
        match self {
            Call::Token => "accessToken",
            Call::OpenConnection => "connections/open",
            Call::Stream => "stream",
            Call::BatchSend => "oToMessages/batchSend",
            Call::GroupSend => "groupMessages/send",
            Call::SessionWebhook => "sessionWebhook",
            Call::CardCreate => "card createAndDeliver",
            Call::CardStream => "card streaming",
            Call::CardUpdate => "card instances",
            Call::Download => "messageFiles/download",
            Call::DownloadUrl => "downloadUrl",
            Call::Upload => "media/upload",
            Call::Emotion => "emotion",
        }
    }

    /// True for the AI-card calls, where trouble means "answer in markdown for a while".
    pub fn is_card(self) -> bool {
        matches!(self, Call::CardCreate | Call::CardStream | Call::CardUpdate)
    }
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

//! The iLink endpoints this crate speaks, with their paths and client timeouts.

use std::fmt;
use std::time::Duration;

/// One iLink bot API endpoint (spec §2, §3, §5, §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// `get_bot_qrcode`: fetch a login QR code.
    GetBotQrcode,
    /// `get_qrcode_status`: poll a QR code's login status (GET).
    GetQrcodeStatus,
    /// `getupdates`: the inbound long poll.
    GetUpdates,
    /// `sendmessage`: send one message item.
    SendMessage,
    /// `getconfig`: fetch a user's typing ticket.
    GetConfig,
    /// `sendtyping`: show or cancel the typing indicator.
    SendTyping,
    /// `msg/notifystart`: announce that the client starts polling.
    NotifyStart,
    /// `msg/notifystop`: announce that the client stops.
    NotifyStop,
    /// `getuploadurl`: where to upload one media file (media spec §2.1).
    GetUploadUrl,
}

impl Endpoint {
    /// Every endpoint, for tables and routing.
    pub const ALL: [Endpoint; 9] = [
        Endpoint::GetBotQrcode,
        Endpoint::GetQrcodeStatus,
        Endpoint::GetUpdates,
        Endpoint::SendMessage,
        Endpoint::GetConfig,
        Endpoint::SendTyping,
        Endpoint::NotifyStart,
        Endpoint::NotifyStop,
        Endpoint::GetUploadUrl,
    ];

    /// The path below `<baseurl>/ilink/bot/`.
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::GetBotQrcode => "get_bot_qrcode",
            Endpoint::GetQrcodeStatus => "get_qrcode_status",
            Endpoint::GetUpdates => "getupdates",
            Endpoint::SendMessage => "sendmessage",
            Endpoint::GetConfig => "getconfig",
            Endpoint::SendTyping => "sendtyping",
            Endpoint::NotifyStart => "msg/notifystart",
            Endpoint::NotifyStop => "msg/notifystop",
            Endpoint::GetUploadUrl => "getuploadurl",
        }
    }

    /// The endpoint served at `path` (below `ilink/bot/`), if any.
    pub fn from_path(path: &str) -> Option<Endpoint> {
        Endpoint::ALL.into_iter().find(|e| e.path() == path)
    }

    /// Whether the endpoint is called with GET (only the QR status poll) rather than POST.
    pub fn is_get(self) -> bool {
        matches!(self, Endpoint::GetQrcodeStatus)
    }

    /// Whether the request carries `Authorization: Bearer <bot token>` (not the login calls).
    pub fn needs_token(self) -> bool {
        !matches!(self, Endpoint::GetBotQrcode | Endpoint::GetQrcodeStatus)
    }

    /// The client timeout the official plugin uses (spec §1.3). `getupdates` is computed per
    /// poll from the server's suggested hold instead; see `Client::get_updates`.
    pub fn timeout(self) -> Duration {
        match self {
            // The plugin sets none; an unbounded request could hang login forever, so we
            // bound it like the status poll (safe choice).
            Endpoint::GetBotQrcode | Endpoint::GetQrcodeStatus => Duration::from_secs(35),
            Endpoint::GetUpdates => Duration::from_secs(45),
            Endpoint::SendMessage | Endpoint::GetUploadUrl => Duration::from_secs(15),
            Endpoint::GetConfig
            | Endpoint::SendTyping
            | Endpoint::NotifyStart
            | Endpoint::NotifyStop => Duration::from_secs(10),
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.path())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_round_trip() {
        for e in Endpoint::ALL {
            assert_eq!(Endpoint::from_path(e.path()), Some(e));
        }
        assert_eq!(Endpoint::from_path("nope"), None);
    }
}

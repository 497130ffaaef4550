//! The one error type of the crate; [`crate::classify`] decides what a caller does with it.

use std::time::Duration;

/// Anything that can go wrong talking to the platform.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Connect, TLS, timeout or read failure below HTTP.
    #[error("network error: {0}")]
    Network(String),
    /// A non-JSON HTTP response (proxy page, 5xx from a gateway).
    #[error("HTTP {status} without a JSON body")]
    Http {
        /// HTTP status code.
        status: u16,
        /// Delay asked by `x-ogw-ratelimit-reset`, if sent.
        retry_after: Option<Duration>,
    },
    /// The token endpoint refused the app credentials or failed.
    #[error("tenant_access_token request failed: code {code}: {msg}")]
    Token {
        /// Business code (10014 = bad app secret).
        code: i64,
        /// Server message.
        msg: String,
    },
    /// An OpenAPI call answered with a non-zero `code`.
    #[error("API error {code} (HTTP {http_status}): {msg}")]
    Api {
        /// Business code from the `{code,msg,data}` envelope.
        code: i64,
        /// Server message.
        msg: String,
        /// HTTP status of the response.
        http_status: u16,
        /// Delay asked by `x-ogw-ratelimit-reset`, if sent.
        retry_after: Option<Duration>,
    },
    /// `POST /callback/ws/endpoint` answered with a non-zero `code`.
    #[error("WebSocket endpoint discovery failed: code {code}: {msg}")]
    Endpoint {
        /// Business code (1000040345 = bad credentials).
        code: i64,
        /// Server message.
        msg: String,
    },
    /// The WebSocket upgrade was refused (non-101).
    #[error(
        "WebSocket handshake refused: HTTP {http_status}, Handshake-Status {status:?}, auth code {auth_code:?}, {msg:?}"
    )]
    Handshake {
        /// HTTP status of the refusal.
        http_status: u16,
        /// `Handshake-Status` header (514 auth failed, 403 forbidden).
        status: Option<i64>,
        /// `Handshake-Autherrcode` header (1000040350 = connection limit).
        auth_code: Option<i64>,
        /// `Handshake-Msg` header.
        msg: Option<String>,
    },
    /// The WebSocket failed after the handshake.
    #[error("WebSocket error: {0}")]
    WebSocket(String),
    /// The server closed the long connection.
    #[error("server closed the long connection")]
    Closed,
    /// No inbound frame within the liveness window.
    #[error("no frame from the server for {0:?}; reconnecting")]
    Stalled(Duration),
    /// A response that does not parse as the documented shape.
    #[error("unexpected response: {0}")]
    Decode(String),
    /// A media item over a size limit (the platform's or the caller's); nothing was kept.
    #[error("the media item is larger than the {limit}-byte limit")]
    TooLarge {
        /// The limit it exceeded, in bytes.
        limit: u64,
    },
    /// Reading or writing a local media file failed.
    #[error("media file error: {0}")]
    Io(String),
    /// Bad input given by the caller (not sent).
    #[error("invalid request: {0}")]
    Invalid(String),
}

impl From<reqwest::Error> for Error {
    fn from(e: reqwest::Error) -> Self {
        // Drop the URL: the WS endpoint URL carries a ticket and access key.
        Error::Network(scv_net::transport(&e.without_url()))
    }
}

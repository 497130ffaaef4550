//! Connection settings for IMAP and SMTP, with the defaults the daemon should use.

use std::path::PathBuf;
use std::time::Duration;

use crate::secret::Password;

/// How a connection is protected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Security {
    /// TLS from the first byte (IMAPS 993, SMTPS 465).
    Tls,
    /// Plain connect, then upgrade with STARTTLS before any credentials are sent.
    StartTls,
    /// No encryption at all. Refused unless every resolved address is loopback.
    Plain,
}

/// Which IMAP command logs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ImapAuth {
    /// `AUTHENTICATE PLAIN` when the server advertises `AUTH=PLAIN`, otherwise `LOGIN`.
    Auto,
    /// Always `LOGIN`.
    Login,
    /// Always `AUTHENTICATE PLAIN`.
    Plain,
}

/// Bounds applied when decoding mail, so hostile or huge messages cost a fixed amount.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseLimits {
    /// Header bytes parsed per message; the rest is ignored (cut at a line end).
    pub max_header_bytes: usize,
    /// Bytes of the raw message fetched for the excerpt (`BODY.PEEK[]<0.N>`).
    pub max_fetch_bytes: u32,
    /// Bytes of decoded text kept as the excerpt (cut at a character boundary).
    pub max_excerpt_bytes: usize,
    /// Characters kept of the subject, a display name or a single header value.
    pub max_field_chars: usize,
    /// Addresses kept per address header, and Message-IDs kept from References.
    pub max_list_items: usize,
}

impl Default for ParseLimits {
    fn default() -> Self {
        ParseLimits {
            max_header_bytes: 32 * 1024,
            max_fetch_bytes: 64 * 1024,
            max_excerpt_bytes: 4 * 1024,
            max_field_chars: 512,
            max_list_items: 50,
        }
    }
}

/// Everything needed to open one IMAP session.
#[derive(Clone, Debug)]
pub struct ImapSettings {
    /// Server host name or IP address; also the name checked against the certificate.
    pub host: String,
    /// Server port (993 for `Tls`, 143 for `StartTls`).
    pub port: u16,
    /// Transport protection.
    pub security: Security,
    /// Login name.
    pub user: String,
    /// Password or app token.
    pub password: Password,
    /// Extra trusted CA certificates (PEM), added to the system roots.
    pub tls_ca: Option<PathBuf>,
    /// Login command.
    pub auth: ImapAuth,
    /// Limit for connecting and for each command round trip.
    pub timeout: Duration,
    /// Name and version sent with the `ID` command when the server advertises it.
    pub client_id: (String, String),
    /// Use IDLE when the server advertises it; `false` forces NOOP polling.
    pub use_idle: bool,
    /// IDLE is ended and re-issued this often (servers drop IDLE after 30 minutes).
    pub idle_refresh: Duration,
    /// NOOP interval when IDLE is not available.
    pub poll_interval: Duration,
    /// UIDs per `UID FETCH` command.
    pub fetch_batch: usize,
    /// Decoding bounds.
    pub limits: ParseLimits,
}

impl ImapSettings {
    /// Settings with the recommended defaults for everything but the account itself.
    pub fn new(
        host: impl Into<String>,
        port: u16,
        security: Security,
        user: impl Into<String>,
        password: Password,
    ) -> Self {
        ImapSettings {
            host: host.into(),
            port,
            security,
            user: user.into(),
            password,
            tls_ca: None,
            auth: ImapAuth::Auto,
            timeout: Duration::from_secs(60),
            client_id: (
                "scv-bridge".to_owned(),
                env!("CARGO_PKG_VERSION").to_owned(),
            ),
            use_idle: true,
            idle_refresh: Duration::from_secs(25 * 60),
            poll_interval: Duration::from_secs(120),
            fetch_batch: 200,
            limits: ParseLimits::default(),
        }
    }
}

/// Everything needed to send over SMTP.
#[derive(Clone, Debug)]
pub struct SmtpSettings {
    /// Server host name or IP address; also the name checked against the certificate.
    pub host: String,
    /// Server port (465 for `Tls`, 587 for `StartTls`).
    pub port: u16,
    /// Transport protection.
    pub security: Security,
    /// Login name and password; `None` sends without AUTH.
    pub credentials: Option<(String, Password)>,
    /// Extra trusted CA certificates (PEM), added to the system roots.
    pub tls_ca: Option<PathBuf>,
    /// Limit for each SMTP command.
    pub timeout: Duration,
}

impl SmtpSettings {
    /// Settings with the recommended defaults for everything but the account itself.
    pub fn new(
        host: impl Into<String>,
        port: u16,
        security: Security,
        credentials: Option<(String, Password)>,
    ) -> Self {
        SmtpSettings {
            host: host.into(),
            port,
            security,
            credentials,
            tls_ca: None,
            timeout: Duration::from_secs(60),
        }
    }
}

//! The crate's one error type, and its conversions from the IMAP, TLS and SMTP libraries.
//!
//! Conversions keep only what is safe to log: server status texts are cut short, parse errors
//! lose the response bytes (which may be mail text), SMTP replies keep only their code (their
//! text often echoes addresses).

use std::io;

use tokio_rustls::rustls;

/// Everything that can go wrong talking to a mail server. See [`MailError::classify`].
#[derive(Debug, thiserror::Error)]
pub enum MailError {
    /// The settings cannot work (plain text to a remote host, unreadable CA file, bad address).
    #[error("invalid mail settings: {0}")]
    Config(String),
    /// The server lacks something these settings need (STARTTLS, a mailbox).
    #[error("not supported by the server: {0}")]
    Unsupported(String),
    /// Connecting, reading or writing failed.
    #[error("{op}: network error: {source}")]
    Network {
        /// What was being done.
        op: &'static str,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// The server did not answer in time.
    #[error("{op}: no answer within {secs} s")]
    Timeout {
        /// What was being done.
        op: &'static str,
        /// The limit that ran out.
        secs: u64,
    },
    /// The server's certificate was not accepted (unknown CA, wrong name, expired).
    #[error("TLS certificate rejected: {0}")]
    Certificate(String),
    /// The TLS handshake or record layer failed for another reason.
    #[error("TLS error: {0}")]
    Tls(String),
    /// The server rejected the user name or password.
    #[error("credentials rejected by the server: {0}")]
    AuthRejected(String),
    /// The server closed the connection (BYE, shutdown, restart).
    #[error("connection closed by the server: {0}")]
    ServerBye(String),
    /// The session was lost earlier (a failed IDLE) and must be reconnected.
    #[error("the IMAP session is closed; reconnect")]
    SessionClosed,
    /// The selected mailbox does not exist or cannot be selected.
    #[error("mailbox not available: {0}")]
    NoMailbox(String),
    /// A command got NO.
    #[error("{op}: server answered NO: {text}")]
    ServerNo {
        /// The command.
        op: &'static str,
        /// The server's status text (shortened).
        text: String,
    },
    /// A command got BAD, or the server's answer could not be understood.
    #[error("{op}: protocol error: {detail}")]
    Protocol {
        /// The command.
        op: &'static str,
        /// What went wrong, without response data.
        detail: String,
    },
    /// An SMTP command got a 4xx reply.
    #[error("SMTP temporary failure (code {code})")]
    SmtpTemporary {
        /// The reply code.
        code: u16,
    },
    /// An SMTP command got a 5xx reply other than an authentication failure.
    #[error("SMTP rejected the message (code {code})")]
    SmtpRejected {
        /// The reply code.
        code: u16,
    },
    /// The outgoing message could not be built (an invalid address, a bad header).
    #[error("message could not be built: {0}")]
    Build(String),
}

/// Shorthand for results of this crate.
pub type Result<T, E = MailError> = std::result::Result<T, E>;

/// Server texts are kept for diagnosis but bounded: a hostile server should not fill logs.
pub(crate) fn short(text: &str) -> String {
    const MAX: usize = 200;
    let clean: String = text.chars().filter(|c| !c.is_control()).take(MAX).collect();
    clean
}

impl MailError {
    /// Converts an async-imap error raised while doing `op`.
    pub(crate) fn from_imap(op: &'static str, err: async_imap::error::Error) -> Self {
        use async_imap::error::Error as E;
        match err {
            E::Io(source) => MailError::from_io(op, source),
            E::ConnectionLost => MailError::ServerBye("connection lost".to_owned()),
            E::No(text) if is_temporary_no(&text) => MailError::ServerNo {
                op,
                text: short(&text),
            },
            E::No(text) if op == "login" => MailError::AuthRejected(short(&text)),
            E::No(text) if op == "select" || op == "examine" => MailError::NoMailbox(short(&text)),
            E::No(text) => MailError::ServerNo {
                op,
                text: short(&text),
            },
            E::Bad(text) => MailError::Protocol {
                op,
                detail: format!("BAD {}", short(&text)),
            },
            E::Parse(_) => MailError::Protocol {
                op,
                detail: "unparsable server response".into(),
            },
            E::Validate(v) => MailError::Config(format!("{op}: invalid character {:?}", v.0)),
            E::Append => MailError::Protocol {
                op,
                detail: "APPEND was not accepted".into(),
            },
            _ => MailError::Protocol {
                op,
                detail: "unexpected library error".into(),
            },
        }
    }

    /// Converts an I/O error, finding TLS failures that tokio-rustls wraps in `io::Error`.
    pub(crate) fn from_io(op: &'static str, source: io::Error) -> Self {
        if let Some(tls) = source
            .get_ref()
            .and_then(|e| e.downcast_ref::<rustls::Error>())
        {
            return MailError::from_rustls(tls);
        }
        // async-imap reports an untagged BYE as an io::Error of kind Other whose text names it.
        let text = source.to_string();
        if text.contains("Bye") || text.contains("BYE") {
            return MailError::ServerBye(short(&text));
        }
        MailError::Network { op, source }
    }

    /// Sorts a rustls error into certificate problems (fatal) and the rest.
    pub(crate) fn from_rustls(err: &rustls::Error) -> Self {
        match err {
            rustls::Error::InvalidCertificate(_)
            | rustls::Error::NoCertificatesPresented
            | rustls::Error::UnsupportedNameType => MailError::Certificate(err.to_string()),
            other => MailError::Tls(other.to_string()),
        }
    }
}

/// Response codes of a NO that say "try again later", not "your request is wrong".
fn is_temporary_no(text: &str) -> bool {
    ["UNAVAILABLE", "SERVERBUG", "INUSE", "LIMIT", "OVERQUOTA"]
        .iter()
        .any(|code| text.contains(code))
}

//! What the caller should do about an error: retry later, stop, or drop just this message.

use crate::error::MailError;

/// The decision an error asks for; the daemon maps it to backoff or `failed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// Network, timeout, server restart, temporary server trouble: retry with backoff.
    Transient,
    /// Retrying cannot help until something changes. `auth` is true when new credentials
    /// (a new login) are what is needed; false for settings or certificate problems.
    Fatal {
        /// Whether the user must log in again.
        auth: bool,
    },
    /// This one outgoing message was refused for good; the session itself is fine.
    Rejected,
}

impl MailError {
    /// Classifies the error once, here, so that every caller decides the same way.
    pub fn classify(&self) -> ErrorClass {
        match self {
            MailError::AuthRejected(_) => ErrorClass::Fatal { auth: true },
            MailError::Config(_)
            | MailError::Unsupported(_)
            | MailError::Certificate(_)
            | MailError::NoMailbox(_) => ErrorClass::Fatal { auth: false },
            MailError::Network { .. }
            | MailError::Timeout { .. }
            | MailError::Tls(_)
            | MailError::ServerBye(_)
            | MailError::SessionClosed
            | MailError::ServerNo { .. }
            | MailError::Protocol { .. }
            | MailError::SmtpTemporary { .. } => ErrorClass::Transient,
            MailError::SmtpRejected { .. } | MailError::Build(_) => ErrorClass::Rejected,
        }
    }

    /// A stable machine code for health reports and metrics (never contains server text).
    pub fn code(&self) -> &'static str {
        match self {
            MailError::Config(_) => "config",
            MailError::Unsupported(_) => "unsupported",
            MailError::Network { .. } => "network",
            MailError::Timeout { .. } => "timeout",
            MailError::Certificate(_) => "tls_certificate",
            MailError::Tls(_) => "tls",
            MailError::AuthRejected(_) => "auth_rejected",
            MailError::ServerBye(_) => "server_bye",
            MailError::SessionClosed => "session_closed",
            MailError::NoMailbox(_) => "no_mailbox",
            MailError::ServerNo { .. } => "server_no",
            MailError::Protocol { .. } => "protocol",
            MailError::SmtpTemporary { .. } => "smtp_temporary",
            MailError::SmtpRejected { .. } => "smtp_rejected",
            MailError::Build(_) => "build",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_imap::error::Error as ImapError;
    use std::io;
    use tokio_rustls::rustls;

    fn imap(op: &'static str, e: ImapError) -> ErrorClass {
        MailError::from_imap(op, e).classify()
    }

    const FATAL_AUTH: ErrorClass = ErrorClass::Fatal { auth: true };
    const FATAL_OTHER: ErrorClass = ErrorClass::Fatal { auth: false };

    #[test]
    fn imap_errors_classify_by_table() {
        let no = |s: &str| ImapError::No(s.to_owned());
        let rows: Vec<(&'static str, ImapError, ErrorClass)> = vec![
            (
                "login",
                no("code: None, info: Some(\"[AUTHENTICATIONFAILED] failed.\")"),
                FATAL_AUTH,
            ),
            (
                "login",
                no("[UNAVAILABLE] Temporary authentication failure"),
                ErrorClass::Transient,
            ),
            ("login", ImapError::ConnectionLost, ErrorClass::Transient),
            ("select", no("Mailbox doesn't exist: Nope"), FATAL_OTHER),
            (
                "select",
                no("[SERVERBUG] Internal error"),
                ErrorClass::Transient,
            ),
            ("fetch", no("[LIMIT] too many"), ErrorClass::Transient),
            (
                "fetch",
                ImapError::Bad("Error in IMAP command".into()),
                ErrorClass::Transient,
            ),
            (
                "fetch",
                ImapError::Io(io::Error::from(io::ErrorKind::ConnectionReset)),
                ErrorClass::Transient,
            ),
            (
                "idle",
                ImapError::Io(io::Error::other("status: Bye, information: shutting down")),
                ErrorClass::Transient,
            ),
            ("append", ImapError::Append, ErrorClass::Transient),
        ];
        for (op, err, want) in rows {
            let shown = format!("{op} {err:?}");
            assert_eq!(imap(op, err), want, "{shown}");
        }
    }

    #[test]
    fn bye_is_recognised_as_server_bye() {
        let e = MailError::from_imap("idle", ImapError::Io(io::Error::other("status: Bye")));
        assert_eq!(e.code(), "server_bye");
    }

    #[test]
    fn tls_errors_split_certificate_from_handshake() {
        let bad_cert = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let wrapped = io::Error::new(io::ErrorKind::InvalidData, bad_cert);
        let e = MailError::from_io("connect", wrapped);
        assert_eq!(e.classify(), FATAL_OTHER);
        assert_eq!(e.code(), "tls_certificate");

        let alert = rustls::Error::AlertReceived(rustls::AlertDescription::HandshakeFailure);
        let e = MailError::from_io("connect", io::Error::new(io::ErrorKind::InvalidData, alert));
        assert_eq!(e.classify(), ErrorClass::Transient);
        assert_eq!(e.code(), "tls");
    }

    #[test]
    fn every_variant_has_a_class_and_code() {
        let rows = [
            (MailError::Config("x".into()), FATAL_OTHER, "config"),
            (
                MailError::Unsupported("STARTTLS".into()),
                FATAL_OTHER,
                "unsupported",
            ),
            (
                MailError::Timeout {
                    op: "fetch",
                    secs: 60,
                },
                ErrorClass::Transient,
                "timeout",
            ),
            (
                MailError::SessionClosed,
                ErrorClass::Transient,
                "session_closed",
            ),
            (
                MailError::AuthRejected("no".into()),
                FATAL_AUTH,
                "auth_rejected",
            ),
            (
                MailError::SmtpTemporary { code: 451 },
                ErrorClass::Transient,
                "smtp_temporary",
            ),
            (
                MailError::SmtpRejected { code: 550 },
                ErrorClass::Rejected,
                "smtp_rejected",
            ),
            (
                MailError::Build("bad address".into()),
                ErrorClass::Rejected,
                "build",
            ),
        ];
        for (err, class, code) in rows {
            assert_eq!(err.classify(), class, "{err}");
            assert_eq!(err.code(), code, "{err}");
        }
    }

    #[test]
    fn server_text_is_bounded_and_stripped_of_controls() {
        let long = format!("[AUTHENTICATIONFAILED] {}\r\n\x1b[31m", "x".repeat(10_000));
        let e = MailError::from_imap("login", ImapError::No(long));
        let shown = e.to_string();
        assert!(shown.len() < 300, "{}", shown.len());
        assert!(!shown.contains('\x1b') && !shown.contains('\r'));
    }
}

//! The one table from the mail crate's errors to the daemon's [`Failure`].

use scv_mail::{ErrorClass, MailError};

use crate::failure::{Action, Code, Failure, general};
use crate::ids::AccountKey;

/// The settings cannot work (plain text to a remote host, an unreadable CA file).
pub const BAD_SETTINGS: Code = Code::new("mail.bad_settings");
/// The server lacks something these settings need (STARTTLS).
pub const UNSUPPORTED: Code = Code::new("mail.unsupported");
/// The server's certificate was not accepted.
pub const TLS_CERTIFICATE: Code = Code::new("mail.tls_certificate");
/// The TLS handshake or record layer failed for another reason.
pub const TLS: Code = Code::new("mail.tls");
/// The server rejected the user name or password.
pub const AUTH_REJECTED: Code = Code::new("mail.auth_rejected");
/// The server closed the connection (BYE, shutdown, restart).
pub const SERVER_BYE: Code = Code::new("mail.server_bye");
/// The IMAP session was lost earlier and must be reconnected.
pub const SESSION_CLOSED: Code = Code::new("mail.session_closed");
/// The mailbox does not exist or cannot be selected.
pub const NO_MAILBOX: Code = Code::new("mail.no_mailbox");
/// A command got NO (temporary server trouble).
pub const SERVER_NO: Code = Code::new("mail.server_no");
/// A command got BAD, or the answer could not be understood.
pub const PROTOCOL: Code = Code::new("mail.protocol");
/// An SMTP command got a 4xx reply.
pub const SMTP_TEMPORARY: Code = Code::new("mail.smtp_temporary");
/// An SMTP command got a 5xx reply: this message was refused.
pub const SMTP_REJECTED: Code = Code::new("mail.smtp_rejected");
/// The outgoing message could not be built.
pub const BUILD: Code = Code::new("mail.build");
/// The stored credentials hold no password.
pub const NO_PASSWORD: Code = Code::new("mail.no_password");

/// Every mail code, for the documentation check.
#[cfg(test)]
const CODES: &[Code] = &[
    BAD_SETTINGS,
    UNSUPPORTED,
    TLS_CERTIFICATE,
    TLS,
    AUTH_REJECTED,
    SERVER_BYE,
    SESSION_CLOSED,
    NO_MAILBOX,
    SERVER_NO,
    PROTOCOL,
    SMTP_TEMPORARY,
    SMTP_REJECTED,
    BUILD,
    NO_PASSWORD,
];

/// What `e`, met by `account`, means for the daemon and for the person.
pub fn failure(e: &MailError, account: &AccountKey) -> Failure {
    let code = code(e);
    match e.classify() {
        // The server's words may echo the login; say it plainly instead.
        ErrorClass::Fatal { auth: true } => Failure::fatal(
            code,
            "the mail server rejected the credentials",
            Action::Relogin(account.clone()),
        ),
        ErrorClass::Fatal { auth: false } => Failure::fatal(
            code,
            e.to_string(),
            Action::Reload {
                first: format!("fix the [mail.{}] settings", account.account).into(),
            },
        ),
        ErrorClass::Transient => Failure::transient(code, e.to_string()),
        ErrorClass::Rejected => Failure::rejected(code, e.to_string()),
    }
}

/// The cause of `e`, as a stable code.
fn code(e: &MailError) -> Code {
    match e {
        MailError::Config(_) => BAD_SETTINGS,
        MailError::Unsupported(_) => UNSUPPORTED,
        MailError::Network { .. } => general::NETWORK,
        MailError::Timeout { .. } => general::TIMEOUT,
        MailError::Certificate(_) => TLS_CERTIFICATE,
        MailError::Tls(_) => TLS,
        MailError::AuthRejected(_) => AUTH_REJECTED,
        MailError::ServerBye(_) => SERVER_BYE,
        MailError::SessionClosed => SESSION_CLOSED,
        MailError::NoMailbox(_) => NO_MAILBOX,
        MailError::ServerNo { .. } => SERVER_NO,
        MailError::Protocol { .. } => PROTOCOL,
        MailError::SmtpTemporary { .. } => SMTP_TEMPORARY,
        MailError::SmtpRejected { .. } => SMTP_REJECTED,
        MailError::Build(_) => BUILD,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure::Class;
    use crate::ids::Channel;

    #[test]
    fn every_error_has_one_row() {
        let key = AccountKey::new(Channel::Mail, "work");
        let relogin = Action::Relogin(key.clone());
        let settings = Action::Reload {
            first: "fix the [mail.work] settings".into(),
        };
        let none = Action::None;
        let io = || std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        // (error, class, code, message when not the error's own text, action)
        let rows: Vec<(MailError, Class, &str, Option<&str>, Action)> = vec![
            (
                MailError::Config("x".into()),
                Class::Fatal,
                "mail.bad_settings",
                None,
                settings.clone(),
            ),
            (
                MailError::Unsupported("STARTTLS".into()),
                Class::Fatal,
                "mail.unsupported",
                None,
                settings.clone(),
            ),
            (
                MailError::Network {
                    op: "connect",
                    source: io(),
                },
                Class::Transient,
                "network",
                None,
                none.clone(),
            ),
            (
                MailError::Timeout {
                    op: "fetch",
                    secs: 60,
                },
                Class::Transient,
                "timeout",
                None,
                none.clone(),
            ),
            (
                MailError::Certificate("unknown issuer".into()),
                Class::Fatal,
                "mail.tls_certificate",
                None,
                settings.clone(),
            ),
            (
                MailError::Tls("alert".into()),
                Class::Transient,
                "mail.tls",
                None,
                none.clone(),
            ),
            (
                MailError::AuthRejected("[AUTHENTICATIONFAILED] user@example.com".into()),
                Class::Fatal,
                "mail.auth_rejected",
                Some("the mail server rejected the credentials"),
                relogin,
            ),
            (
                MailError::ServerBye("bye".into()),
                Class::Transient,
                "mail.server_bye",
                None,
                none.clone(),
            ),
            (
                MailError::SessionClosed,
                Class::Transient,
                "mail.session_closed",
                None,
                none.clone(),
            ),
            (
                MailError::NoMailbox("Nope".into()),
                Class::Fatal,
                "mail.no_mailbox",
                None,
                settings,
            ),
            (
                MailError::ServerNo {
                    op: "fetch",
                    text: "[LIMIT]".into(),
                },
                Class::Transient,
                "mail.server_no",
                None,
                none.clone(),
            ),
            (
                MailError::Protocol {
                    op: "fetch",
                    detail: "BAD".into(),
                },
                Class::Transient,
                "mail.protocol",
                None,
                none.clone(),
            ),
            (
                MailError::SmtpTemporary { code: 451 },
                Class::Transient,
                "mail.smtp_temporary",
                None,
                none.clone(),
            ),
            (
                MailError::SmtpRejected { code: 550 },
                Class::Rejected,
                "mail.smtp_rejected",
                None,
                none.clone(),
            ),
            (
                MailError::Build("bad address".into()),
                Class::Rejected,
                "mail.build",
                None,
                none,
            ),
        ];
        for (e, class, code, message, action) in rows {
            let shown = e.to_string();
            crate::failure::assert_row(&failure(&e, &key), &shown, class, code, message, &action);
        }
    }

    #[test]
    fn every_code_is_documented() {
        crate::failure::assert_documented(CODES);
    }
}

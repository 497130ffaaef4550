//! A mail account's own checks at load, each error naming its key.

use super::{MailSettings, MailTls};

/// Checks a mail account; the error names the key.
pub(super) fn check_mail(m: &MailSettings) -> Result<(), (&'static str, String)> {
    if m.imap_host.trim().is_empty() {
        return Err((
            "imap_host",
            "expected a host name, found an empty string".into(),
        ));
    }
    if m.username.trim().is_empty() {
        return Err((
            "username",
            "expected the mailbox login, found an empty string".into(),
        ));
    }
    let loopback =
        |h: &str| matches!(h, "127.0.0.1" | "::1" | "localhost") || h.starts_with("127.");
    if m.tls == MailTls::None && !loopback(&m.imap_host) {
        return Err((
            "tls",
            format!(
                "tls = \"none\" is allowed only for loopback hosts, not '{}'; expected implicit or starttls",
                m.imap_host
            ),
        ));
    }
    if m.smtp_tls.unwrap_or(m.tls) == MailTls::None
        && let Some(h) = &m.smtp_host
        && !loopback(h)
    {
        return Err((
            "smtp_tls",
            format!("no TLS is allowed only for loopback hosts, not '{h}'"),
        ));
    }
    Ok(())
}

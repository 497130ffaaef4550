//! `doctor` against a real Dovecot and SMTP receiver: IMAPS and STARTTLS handshakes verified
//! against the test CA, LOGIN/LOGOUT and SMTP AUTH with the stored password, and the failures a
//! person meets (a private CA without `tls_ca`, a wrong password, an https endpoint whose
//! certificate this machine does not trust), each with its fix.

use crate::server;

use std::path::Path;
use std::process::Command;

use scv_bridge::secrets::{CredentialStore, Credentials};
use server::MailServer;

const BIN: &str = env!("CARGO_BIN_EXE_scv-bridge");

fn doctor(config: &Path) -> (i32, String) {
    let out = Command::new(BIN)
        .arg("--config")
        .arg(config)
        .arg("doctor")
        .output()
        .expect("run");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn mail_servers_are_checked_for_real() {
    let mail = MailServer::start(&[]);
    let dir = tempfile::tempdir().expect("tempdir");
    let (imap, imaps, smtp) = (
        mail.var("IMAP_PORT"),
        mail.var("IMAPS_PORT"),
        mail.var("SMTP_PORT"),
    );
    let (user, ca) = (mail.var("IMAP_USER"), mail.var("MAIL_TLS_CA"));
    let account = |name: &str, port: &str, tls: &str, ca_line: &str, extra: &str| {
        format!(
            "[mail.{name}]\nimap_host = \"localhost\"\nimap_port = {port}\ntls = \"{tls}\"\n{ca_line}username = \"{user}\"\n{extra}"
        )
    };
    let with_ca = format!("tls_ca = \"{ca}\"\n");
    let body = [
        account("implicit", imaps, "implicit", &with_ca, ""),
        account(
            "starttls",
            imap,
            "starttls",
            &with_ca,
            &format!("smtp_host = \"localhost\"\nsmtp_port = {smtp}\n"),
        ),
        account("noca", imaps, "implicit", "", ""),
        account("badpw", imaps, "implicit", &with_ca, ""),
        // An https endpoint with a certificate from a CA this machine does not trust.
        format!("[wechat.phone]\nbase_url = \"https://localhost:{imaps}\"\n"),
    ]
    .concat();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "state_dir = \"{}\"\ncredentials = \"file\"\nsocket = \"{}\"\n{body}",
            dir.path().join("state").display(),
            dir.path().join("state/daemon.sock").display()
        ),
    )
    .expect("write");
    let store = CredentialStore::Files(dir.path().join("state/credentials"));
    for (id, pass) in [
        ("mail:implicit", mail.var("IMAP_PASS")),
        ("mail:starttls", mail.var("IMAP_PASS")),
        ("mail:noca", mail.var("IMAP_PASS")),
        ("mail:badpw", "not-the-password"),
    ] {
        store
            .save(id, &Credentials::default().with("password", pass))
            .expect("save");
    }
    store
        .save("wechat:phone", &Credentials::default().with("token", "t"))
        .expect("save");

    let (code, out) = doctor(&config);
    assert_eq!(code, 1, "{out}");
    let line = |prefix: &str| {
        out.lines()
            .position(|l| l.starts_with(prefix))
            .map(|i| {
                let next = out.lines().nth(i + 1).unwrap_or("");
                format!("{}\n{next}", out.lines().nth(i).unwrap_or(""))
            })
            .unwrap_or_else(|| panic!("no line starting {prefix:?} in\n{out}"))
    };
    assert!(
        line("ok    mail:implicit: IMAP localhost:").contains(&format!(
            "(implicit TLS): certificate verified, LOGIN as {user} accepted, then LOGOUT"
        )),
        "{out}"
    );
    assert!(
        line("ok    mail:starttls: IMAP localhost:")
            .contains("(STARTTLS): certificate verified, LOGIN as"),
        "{out}"
    );
    assert!(
        line("ok    mail:starttls: SMTP localhost:")
            .contains("(STARTTLS): certificate verified, EHLO and AUTH as"),
        "{out}"
    );
    let noca = line("FAIL  mail:noca: IMAP localhost:");
    assert!(
        noca.contains("the TLS certificate is not trusted")
            && noca.contains(
                "fix: if the server's certificate comes from a private CA, set tls_ca = "
            )
            && noca.contains("under [mail.noca]"),
        "{noca}"
    );
    let badpw = line("FAIL  mail:badpw: IMAP localhost:");
    assert!(
        badpw.contains(&format!("rejected the login for {user}"))
            && badpw.contains(" login mail badpw` with the right password"),
        "{badpw}"
    );
    let https = line("FAIL  wechat:phone: https://localhost:");
    assert!(
        https.contains("the TLS certificate is not trusted"),
        "{https}"
    );
}

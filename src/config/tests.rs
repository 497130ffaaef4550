//! Configuration parsing and validation tests.

use super::*;

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(Path::new("/etc/scv/config.toml"), text)
}

fn err(text: &str) -> String {
    parse(text).expect_err("must be refused").to_string()
}

#[test]
fn example_config_parses_with_every_account() {
    let text = include_str!("../../config/example.toml");
    let cfg = parse(text).expect("example parses");
    let ids: Vec<String> = cfg.accounts.keys().map(|k| k.to_string()).collect();
    assert_eq!(
        ids,
        [
            "wechat:inbox",
            "wechat:phone",
            "feishu:work",
            "telegram:bot",
            "mail:personal"
        ]
    );
    let inbox = &cfg.accounts[&AccountKey::new(Channel::Wechat, "inbox")];
    assert_eq!(inbox.purpose, Purpose::Mail);
    assert!(
        inbox.enabled,
        "accounts are enabled unless they say otherwise"
    );
    assert_eq!(cfg.notify, Some(AccountKey::new(Channel::Feishu, "work")));
    assert_eq!(cfg.timezone, Some(chrono_tz::Asia::Shanghai));
}

#[test]
fn bad_enum_value_names_file_line_key_and_choices() {
    let e = err("[feishu.work]\nenabled = true\nsenders = \"all\"\n");
    assert_eq!(
        e,
        "/etc/scv/config.toml:3: feishu.work.senders: expected owner or anyone, found 'all'"
    );
}

#[test]
fn unknown_keys_are_errors_that_name_the_key() {
    let e = err("[wechat.phone]\nsender = \"owner\"\n");
    assert!(
        e.starts_with("/etc/scv/config.toml:2: wechat.phone.sender: unknown field `sender`"),
        "{e}"
    );
    let e = err("stat_dir = \"/x\"\n");
    assert!(e.contains(":1: stat_dir: unknown field `stat_dir`"), "{e}");
    let e = err("[slack.x]\n");
    assert!(e.contains("unknown field `slack`"), "{e}");
}

#[test]
fn unknown_keys_suggest_the_nearest_key() {
    let e = err("[wechat.phone]\nsendrs = \"owner\"\n");
    assert!(e.ends_with("; did you mean `senders`?"), "{e}");
    let e = err("stat_dir = \"/x\"\n");
    assert!(e.ends_with("; did you mean `state_dir`?"), "{e}");
    let e = err("[agent]\nbackend = \"acp\"\ncomand = \"codex-acp\"\n");
    assert!(
        e.contains(":3: agent.comand: unknown field `comand`"),
        "{e}"
    );
    assert!(e.ends_with("; did you mean `command`?"), "{e}");
    // Nothing close: no guess.
    let e = err("[wechat.phone]\nzzzzzz = 1\n");
    assert!(!e.contains("did you mean"), "{e}");
}

#[test]
fn semantic_errors_are_located() {
    let e = err("[mail.m]\nimap_host = \"imap.example.com\"\nusername = \"u\"\ntls = \"none\"\n");
    assert!(
        e.starts_with(
            "/etc/scv/config.toml:4: mail.m.tls: tls = \"none\" is allowed only for loopback"
        ),
        "{e}"
    );
    let e = err("[mail.m]\nimap_host = \"h\"\nusername = \"u\"\nreport_to = \"wechat:nope\"\n");
    assert!(
        e.contains(":4: mail.m.report_to: expected a configured wechat, feishu, telegram")
            && e.contains("found 'wechat:nope'"),
        "{e}"
    );
    let e = err("notify = \"feishu:work\"\n");
    assert!(e.contains(":1: notify: expected a configured"), "{e}");
    let e = err("[wechat.inbox]\npurpose = \"mail\"\nremote_tools = \"owner\"\n");
    assert!(e.contains(":3: wechat.inbox.remote_tools:"), "{e}");
    let e = err("[mail.m]\nimap_host = \"h\"\nusername = \"u\"\nsenders = \"anyone\"\n");
    assert!(
        e.contains(":4: mail.m.senders: mail accounts have no such setting"),
        "{e}"
    );
    let e = err("[wechat.\"bad name\"]\n");
    assert!(e.contains("account names use letters"), "{e}");
    let e = err("timezone = \"Mars/Olympus\"\n");
    assert!(
        e.contains(":1: timezone: expected an IANA time zone"),
        "{e}"
    );
    let e = err("[mail.m]\nimap_host = \"h\"\n");
    assert!(e.contains("username"), "{e}");
}

#[test]
fn defaults_are_owner_only_and_tool_free() {
    let cfg = parse("[wechat.a]\n[feishu.b]\nenabled = false\n").expect("parses");
    let a = &cfg.accounts[&AccountKey::new(Channel::Wechat, "a")];
    assert_eq!(
        (a.senders, a.remote_tools, a.purpose),
        (Senders::Owner, RemoteTools::None, Purpose::Chat)
    );
    assert!(!cfg.accounts[&AccountKey::new(Channel::Feishu, "b")].enabled);
    assert_eq!(cfg.credentials, CredentialsMode::Auto);
    assert_eq!(a.approvals, Approvals::Auto);
}

#[test]
fn approvals_ask_needs_owner_tools_and_is_not_a_mail_setting() {
    let cfg =
        parse("[feishu.work]\nremote_tools = \"owner\"\napprovals = \"ask\"\n").expect("parses");
    let a = &cfg.accounts[&AccountKey::new(Channel::Feishu, "work")];
    assert_eq!(
        (a.remote_tools, a.approvals),
        (RemoteTools::Owner, Approvals::Ask)
    );
    let e = err("[wechat.phone]\napprovals = \"ask\"\n");
    assert!(
        e.contains(":2: wechat.phone.approvals: approvals = \"ask\" asks the owner")
            && e.contains("set remote_tools = \"owner\""),
        "{e}"
    );
    let e = err("[wechat.phone]\napprovals = \"sometimes\"\n");
    assert!(e.contains("approvals"), "{e}");
    let e = err("[mail.m]\nimap_host = \"h\"\nusername = \"u\"\napprovals = \"ask\"\n");
    assert!(
        e.contains(":4: mail.m.approvals: mail accounts have no such setting"),
        "{e}"
    );
}

#[test]
fn socket_and_state_paths_resolve() {
    let cfg = parse("state_dir = \"/srv/scv\"\nsocket = \"/run/scv.sock\"\n").expect("parses");
    assert_eq!(cfg.state_dir, PathBuf::from("/srv/scv"));
    assert_eq!(cfg.socket, PathBuf::from("/run/scv.sock"));
    assert_eq!(
        socket_path(None, Path::new("/s")).file_name(),
        Some("daemon.sock".as_ref())
    );
    let old = parse("state_dir = \"/a\"\nsocket = \"/s.sock\"\n").expect("parses");
    let new = parse("state_dir = \"/b\"\nsocket = \"/s.sock\"\n").expect("parses");
    assert_eq!(old.unreloadable_changes(&new), vec!["state_dir"]);
}

#[test]
fn account_keys_parse_strictly() {
    assert_eq!(
        AccountKey::parse("wechat:phone"),
        Some(AccountKey::new(Channel::Wechat, "phone"))
    );
    for bad in ["wechat", "slack:x", "mail:", "feishu:a b", "wechat:a:b"] {
        assert_eq!(AccountKey::parse(bad), None, "{bad}");
    }
}

#[test]
fn language_is_global_and_per_account_and_checked() {
    use crate::words::Language;
    let cfg = parse("language = \"zh-CN\"\n[wechat.a]\n[wechat.b]\nlanguage = \"en\"\n[feishu.c]\nlanguage = \"auto\"\n[mail.m]\nimap_host = \"h\"\nusername = \"u\"\n")
        .expect("parses");
    let lang = |c, n| cfg.accounts[&AccountKey::new(c, n)].language;
    assert_eq!(lang(Channel::Wechat, "a"), Language::ZhCn, "the global one");
    assert_eq!(
        lang(Channel::Wechat, "b"),
        Language::En,
        "the account's own"
    );
    assert_eq!(lang(Channel::Feishu, "c"), Language::Auto);
    assert_eq!(lang(Channel::Mail, "m"), Language::ZhCn);
    let plain = parse("[wechat.a]\n").expect("parses");
    assert_eq!(
        plain.accounts[&AccountKey::new(Channel::Wechat, "a")].language,
        Language::Auto,
        "auto by default"
    );
    let e = err("[wechat.phone]\nlanguage = \"fr\"\n");
    assert!(e.contains(":2") && e.contains("language"), "{e}");
    assert!(e.contains("zh-CN"), "the error names the choices: {e}");
    let e = err("language = \"zh\"\n");
    assert!(e.contains(":1") && e.contains("language"), "{e}");
}

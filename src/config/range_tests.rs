//! Every numeric key has a range: found by asking the parser itself for every key, so a numeric
//! key added without an entry in `RANGES` or its platform's `TableSchema` fails here.

use super::key_range::Scope;
use super::ranges::all;
use super::*;

const FILE: &str = "/etc/scv/config.toml";

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(Path::new(FILE), text)
}

/// The keys that must be present in an account table of `channel` for it to parse.
fn required(channel: &str) -> &'static [(&'static str, &'static str)] {
    match channel {
        "mail" => &[("imap_host", "\"h\""), ("username", "\"u\"")],
        _ => &[],
    }
}

/// `header`, then `key = value`, then the required keys not already set.
fn table_text(header: &str, channel: &str, key: &str, value: &str) -> String {
    let mut text = String::new();
    if !header.is_empty() {
        text.push_str(&format!("[{header}]\n"));
    }
    text.push_str(&format!("{key} = {value}\n"));
    for (k, v) in required(channel) {
        if *k != key {
            text.push_str(&format!("{k} = {v}\n"));
        }
    }
    text
}

/// Every key the table at `header` accepts, as listed by the unknown-field error.
fn keys_of(header: &str, channel: &str) -> Vec<String> {
    let e = parse(&table_text(header, channel, "zz_probe", "1"))
        .expect_err("an unknown key is refused")
        .message;
    let list = e
        .split_once("expected ")
        .map(|(_, l)| l)
        .unwrap_or_else(|| panic!("no key list in {e}"));
    list.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// Walks the whole schema: every (table, key) whose value is a number, with `*` for account names.
fn numeric_keys() -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut tables = vec![(String::new(), String::new(), String::new())];
    // The chat platforms' tables are not the top level's keys: each platform checks its own.
    for c in chat_channels() {
        tables.push((format!("{c}.probe"), format!("{c}.*"), c.to_string()));
    }
    while let Some((header, shown, channel)) = tables.pop() {
        for key in keys_of(&header, &channel) {
            // A string where a number belongs is refused with the number type (or our range).
            let e = match parse(&table_text(&header, &channel, &key, "\"x\"")) {
                Ok(_) => continue,
                Err(e) => e.message,
            };
            let sub = |h: &str| {
                if h.is_empty() {
                    key.clone()
                } else {
                    format!("{h}.{key}")
                }
            };
            if e.contains("expected struct") {
                tables.push((sub(&header), sub(&shown), channel.clone()));
            } else if e.contains("expected a map") {
                tables.push((
                    format!("{}.probe", sub(&header)),
                    format!("{}.*", sub(&shown)),
                    key.clone(),
                ));
            } else if is_number_error(&e) {
                found.push((shown.clone(), key.clone()));
            }
        }
    }
    found.sort();
    found
}

/// The channels whose account tables a platform checks.
fn chat_channels() -> Vec<&'static str> {
    Channel::ALL
        .into_iter()
        .filter(|c| schema(*c).is_some())
        .map(Channel::as_str)
        .collect()
}

fn is_number_error(e: &str) -> bool {
    e.contains("expected a whole number")
        || [
            "u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64", "f32", "f64",
        ]
        .iter()
        .any(|t| e.ends_with(&format!("expected {t}")))
}

fn shown(scope: Scope) -> String {
    match scope {
        Scope::Agent => "agent".into(),
        Scope::Chats => "chats".into(),
        Scope::Media => "media".into(),
        Scope::Owner => "owner".into(),
        Scope::Speech => "speech".into(),
        s => format!("{}.*", s.table()),
    }
}

#[test]
fn every_numeric_key_has_a_range() {
    let found = numeric_keys();
    let mut ranged: Vec<(String, String)> =
        all().map(|r| (shown(r.scope), r.key.to_string())).collect();
    // Every chat account table may hold its own `media` caps, with the `[media]` ranges (a mail
    // table refuses them; the walk cannot reach below it, its required keys get in the way).
    for r in all().filter(|r| r.scope == Scope::Media) {
        for c in chat_channels() {
            ranged.push((format!("{c}.*.media"), r.key.to_string()));
        }
    }
    ranged.sort();
    assert!(
        found.len() >= 9,
        "the schema walk found too few numeric keys: {found:?}"
    );
    assert_eq!(
        found, ranged,
        "every numeric key needs an entry in config/ranges.rs RANGES or its platform's TableSchema (and nothing else does)"
    );
}

#[test]
fn every_numeric_key_is_checked_at_zero_its_maximum_and_u64_max() {
    for r in all() {
        let (header, channel, line) = match r.scope {
            Scope::Agent => ("agent".to_string(), "", 2),
            Scope::Agents => ("agents.a".to_string(), "", 2),
            Scope::Chats => ("chats".to_string(), "", 2),
            Scope::Account(c) => (format!("{c}.a"), c.as_str(), 2),
            Scope::Mail => ("mail.m".to_string(), "mail", 2),
            Scope::Media => ("media".to_string(), "", 2),
            Scope::Owner => ("owner".to_string(), "", 2),
            Scope::Speech => ("speech".to_string(), "", 2),
        };
        let mut values: Vec<String> = [0, r.min, r.max, u64::MAX]
            .iter()
            .map(u64::to_string)
            .collect();
        if r.max < u64::MAX {
            values.push((r.max + 1).to_string());
        }
        if r.min > 0 {
            values.push((r.min - 1).to_string());
        }
        values.extend(["-1".to_string(), "99999999999999999999".to_string()]);
        for v in values {
            let text = table_text(&header, channel, r.key, &v);
            let inside = v.parse::<u64>().is_ok_and(|n| (r.min..=r.max).contains(&n));
            match parse(&text) {
                Ok(_) => assert!(inside, "{header}.{} = {v} was accepted", r.key),
                Err(e) => {
                    assert!(!inside, "{header}.{} = {v} was refused: {e}", r.key);
                    assert_eq!(
                        e.to_string(),
                        format!(
                            "{FILE}:{line}: {header}.{}: expected {}, found {v}",
                            r.key,
                            r.expected()
                        )
                    );
                }
            }
        }
    }
}

#[test]
fn an_accounts_own_media_caps_win_over_the_global_ones_and_take_their_ranges() {
    let c = parse(
        "[media]\nmax_item_mb = 50\nmax_workspace_mb = 900\n\
         [wechat.a]\n[wechat.b.media]\nmax_item_mb = 2\n\
         [feishu.c.media]\nmax_workspace_mb = 10\n",
    )
    .expect("parses");
    const MB: u64 = 1024 * 1024;
    let caps = |k: &str| {
        let s = &c.accounts[&AccountKey::parse(k).expect("key")];
        (
            s.media.max_item_bytes / MB,
            s.media.max_workspace_bytes / MB,
        )
    };
    assert_eq!(caps("wechat:a"), (50, 900));
    assert_eq!(caps("wechat:b"), (2, 900));
    assert_eq!(caps("feishu:c"), (50, 10));
    let e = parse("[wechat.b.media]\nmax_item_mb = 0\n").expect_err("out of range");
    assert_eq!(
        e.to_string(),
        format!(
            "{FILE}:2: wechat.b.media.max_item_mb: expected a whole number of MB from 1 to 1024, found 0"
        )
    );
    let e =
        parse("[mail.m]\nimap_host = \"h\"\nusername = \"u\"\n[mail.m.media]\nmax_item_mb = 5\n")
            .expect_err("mail keeps no media");
    assert!(e.to_string().contains("media"), "{e}");
}

#[test]
fn a_number_of_the_wrong_kind_names_the_range() {
    let e = parse("[mail.m]\nimap_host = \"h\"\nusername = \"u\"\nbackfill_days = \"ten\"\n")
        .expect_err("refused")
        .to_string();
    assert_eq!(
        e,
        format!(
            "{FILE}:4: mail.m.backfill_days: expected a whole number of days from 0 to 3650, found \"ten\""
        )
    );
}

#[test]
fn the_example_documents_every_range() {
    let text = include_str!("../../config/example.toml");
    for r in all() {
        let documented = text
            .lines()
            .any(|l| l.contains(r.key) && l.contains(&format!("({} to {})", r.min, r.max)));
        assert!(
            documented,
            "config/example.toml must show `{}` with its range ({} to {})",
            r.key, r.min, r.max
        );
    }
}

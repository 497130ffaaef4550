//! Applies a [`Plan`] to configuration text with toml_edit: keys the plan does not set, their
//! comments and the order of everything stay byte for byte; a changed value keeps its trailing
//! comment; new tables go at the end.

use toml_edit::{DocumentMut, Item, Table, Value};

use super::plan::{AgentPlan, Plan};

/// The head of a file `init` writes from nothing.
const NEW_FILE_HEAD: &str = "\
# scv-bridge configuration, written by `scv-bridge init` (run it again to change what you pick).
# Every key, documented: `scv-bridge config example`. Secrets never live here: `scv-bridge login ...`
# keeps them in the OS keyring or in 0600 files under state_dir.

";

/// The new text: `existing` (or a new file) with the plan applied.
pub fn apply(existing: Option<&str>, plan: &Plan) -> Result<String, String> {
    let mut doc: DocumentMut = match existing {
        Some(text) => text
            .parse()
            .map_err(|e| format!("the configuration is not valid TOML: {e}"))?,
        None => {
            let mut d = DocumentMut::new();
            d.decor_mut().set_prefix(NEW_FILE_HEAD);
            d
        }
    };
    let fresh = existing.is_none();
    let root = doc.as_table_mut();
    if let Some(dir) = &plan.state_dir {
        set_str(root, "state_dir", dir);
    }
    if let Some(c) = plan.credentials {
        set_str(root, "credentials", c.as_str());
    }
    if let Some(n) = &plan.notify {
        set_str(root, "notify", n);
    }
    if let Some(z) = &plan.timezone {
        set_str(root, "timezone", z);
    }
    apply_agent(root, plan);
    if let Some(u) = &plan.speech_url {
        set_str(table(root, "speech"), "base_url", u);
    }
    if let Some(m) = &plan.speech_model {
        set_str(table(root, "speech"), "model", m);
    }
    for chat in &plan.chats {
        let t = account(root, chat.channel.as_str(), &chat.name, fresh);
        for (key, value) in &chat.table {
            set_str(t, key, value);
        }
        if let Some(w) = &plan.workspace {
            set_str(t, "workspace", w);
        }
    }
    for m in &plan.mail {
        if let Some(chat) = &m.chat {
            // The digests' chat: one the file has already stays as it is (digests may share an
            // ordinary chat with the agent); a new one is made a mail chat.
            if let Some((channel, name)) = chat.split_once(':') {
                let existed = root
                    .get(channel)
                    .and_then(Item::as_table)
                    .is_some_and(|t| t.contains_key(name));
                let t = account(root, channel, name, fresh);
                if !existed {
                    set_str(t, "purpose", "mail");
                }
            }
        }
        let t = account(root, "mail", &m.name, fresh);
        if let Some(h) = &m.imap_host {
            set_str(t, "imap_host", h);
        }
        if let Some(p) = m.imap_port
            && t.get("imap_port").and_then(Item::as_integer) != Some(i64::from(p))
        {
            t.insert("imap_port", toml_edit::value(i64::from(p)));
        }
        if let Some(tls) = m.tls {
            set_str(t, "tls", tls.as_str());
        }
        if let Some(ca) = &m.tls_ca {
            set_str(t, "tls_ca", ca);
        }
        if let Some(u) = &m.username {
            set_str(t, "username", u);
        }
        if let Some(chat) = &m.chat {
            set_str(t, "report_to", chat);
        }
    }
    Ok(doc.to_string())
}

fn apply_agent(root: &mut Table, plan: &Plan) {
    agent_table(root, "agent", &plan.agent);
    for (name, a) in &plan.named {
        let agents = table(root, "agents");
        // `[agents.NAME]` headers, not one `[agents]` table holding inline ones.
        agents.set_implicit(true);
        agent_table(agents, name, a);
    }
}

/// Writes what `a` sets into `root[name]`, made when missing and `a` sets anything.
fn agent_table(root: &mut Table, name: &str, a: &AgentPlan) {
    let any = a.backend.is_some()
        || a.base_url.is_some()
        || a.model.is_some()
        || a.command.is_some()
        || a.args.is_some()
        || a.socket.is_some()
        || a.api_key_env.is_some()
        || a.timeout_seconds.is_some();
    if !any {
        return;
    }
    let t = table(root, name);
    if let Some(b) = a.backend {
        set_str(t, "backend", b.as_str());
    }
    for (key, v) in [
        ("base_url", &a.base_url),
        ("model", &a.model),
        ("command", &a.command),
        ("socket", &a.socket),
        ("api_key_env", &a.api_key_env),
    ] {
        if let Some(v) = v {
            set_str(t, key, v);
        }
    }
    if let Some(secs) = a.timeout_seconds.and_then(|s| i64::try_from(s).ok())
        && t.get("timeout_seconds").and_then(Item::as_integer) != Some(secs)
    {
        t.insert("timeout_seconds", toml_edit::value(secs));
    }
    if let Some(args) = &a.args {
        let same = t.get("args").and_then(Item::as_array).is_some_and(|old| {
            old.iter()
                .map(|v| v.as_str())
                .eq(args.iter().map(|a| Some(a.as_str())))
        });
        if !same {
            t.insert(
                "args",
                toml_edit::value(args.iter().collect::<toml_edit::Array>()),
            );
        }
    }
}

/// `root[name]` as a table, created (explicit, at the end) when missing.
fn table<'a>(root: &'a mut Table, name: &str) -> &'a mut Table {
    let item = root
        .entry(name)
        .or_insert_with(|| Item::Table(Table::new()));
    if !item.is_table() {
        // `agent = ...` as an inline value would not parse as our configuration anyway.
        *item = Item::Table(Table::new());
    }
    item.as_table_mut().expect("made a table above")
}

/// `[channel.name]`, created with `enabled = true` when missing.
fn account<'a>(root: &'a mut Table, channel: &str, name: &str, fresh: bool) -> &'a mut Table {
    let parent = root.entry(channel).or_insert_with(|| {
        let mut t = Table::new();
        // `[wechat.phone]` alone, never an empty `[wechat]` header.
        t.set_implicit(true);
        Item::Table(t)
    });
    if !parent.is_table() {
        *parent = Item::Table(Table::new());
    }
    let parent = parent.as_table_mut().expect("made a table above");
    let item = parent.entry(name).or_insert_with(|| {
        let mut t = Table::new();
        if !fresh {
            t.decor_mut()
                .set_prefix("\n# Added by `scv-bridge init`.\n");
        }
        t.insert("enabled", toml_edit::value(true));
        Item::Table(t)
    });
    if !item.is_table() {
        *item = Item::Table(Table::new());
    }
    item.as_table_mut().expect("made a table above")
}

/// Sets `key` to `v` only when it differs, keeping the old value's comments.
fn set_str(t: &mut Table, key: &str, v: &str) {
    match t.get_mut(key).and_then(Item::as_value_mut) {
        Some(old) if old.as_str() == Some(v) => {}
        Some(old) => {
            let decor = old.decor().clone();
            *old = Value::from(v);
            *old.decor_mut() = decor;
        }
        None => {
            t.insert(key, toml_edit::value(v));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::plan::{AgentChoice, AgentPlan, ChatPlan, MailPlan, TlsChoice};
    use super::*;
    use crate::config::Channel;

    #[test]
    fn a_new_file_holds_only_what_was_picked() {
        let plan = Plan {
            agent: AgentPlan {
                backend: Some(AgentChoice::Openai),
                base_url: Some("http://127.0.0.1:11434/v1".into()),
                model: Some("qwen2.5:7b".into()),
                ..AgentPlan::default()
            },
            chats: vec![ChatPlan::new(Channel::Wechat, "phone")],
            ..Plan::default()
        };
        let text = apply(None, &plan).expect("applies");
        assert!(text.starts_with("# scv-bridge configuration, written by"));
        assert!(!text.contains("[wechat]\n"), "{text}");
        assert!(text.contains("[wechat.phone]\nenabled = true\n"), "{text}");
        assert!(!text.contains("feishu") && !text.contains("mail"), "{text}");
        let cfg = crate::config::Config::parse(std::path::Path::new("/x.toml"), &text)
            .expect("the written file parses");
        assert_eq!(cfg.agent.model.as_deref(), Some("qwen2.5:7b"));
        assert_eq!(cfg.accounts.len(), 1);
    }

    #[test]
    fn a_named_agent_is_its_own_table_beside_the_first() {
        let claude = AgentPlan {
            backend: Some(AgentChoice::Acp),
            command: Some("claude-agent-acp".into()),
            api_key_env: Some("ANTHROPIC_API_KEY".into()),
            timeout_seconds: Some(600),
            ..AgentPlan::default()
        };
        let plan = Plan {
            agent: AgentPlan {
                backend: Some(AgentChoice::Acp),
                command: Some("codex-acp".into()),
                ..AgentPlan::default()
            },
            named: vec![("claude".into(), claude)],
            ..Plan::default()
        };
        let text = apply(None, &plan).expect("applies");
        assert!(!text.contains("[agents]\n"), "{text}");
        assert!(
            text.contains("[agents.claude]\nbackend = \"acp\"\ncommand = \"claude-agent-acp\"\n"),
            "{text}"
        );
        let cfg = crate::config::Config::parse(std::path::Path::new("/x.toml"), &text)
            .expect("the written file parses");
        assert_eq!(cfg.agent.command.as_deref(), Some("codex-acp"));
        let named = &cfg.agents["claude"];
        assert_eq!(named.api_key_env.as_deref(), Some("ANTHROPIC_API_KEY"));
        assert_eq!(named.timeout_seconds, Some(600));
        // A second run adding it again changes nothing.
        assert_eq!(apply(Some(&text), &plan).expect("applies"), text);
    }

    #[test]
    fn a_rerun_changes_only_what_was_picked_and_keeps_comments() {
        let before = "# mine\nstate_dir = \"/srv/s\"   # keep\n\n[agent]\n# the model\nmodel = \"old\" # trailing\nbase_url = \"http://127.0.0.1:1/v1\"\n\n[wechat.phone]\n# who\nsenders = \"anyone\"\n";
        let plan = Plan {
            agent: AgentPlan {
                model: Some("new".into()),
                ..AgentPlan::default()
            },
            chats: vec![
                ChatPlan::new(Channel::Wechat, "phone"),
                ChatPlan::new(Channel::Feishu, "work"),
            ],
            mail: vec![MailPlan {
                name: "personal".into(),
                imap_host: Some("imap.example.com".into()),
                imap_port: None,
                tls: None,
                tls_ca: None,
                username: Some("me@example.com".into()),
                chat: Some("wechat:inbox".into()),
            }],
            ..Plan::default()
        };
        let after = apply(Some(before), &plan).expect("applies");
        assert!(after.starts_with("# mine\nstate_dir = \"/srv/s\"   # keep\n"));
        assert!(
            after.contains("# the model\nmodel = \"new\" # trailing\n"),
            "{after}"
        );
        assert!(
            after.contains("\n\n[wechat.phone]\n# who\nsenders = \"anyone\"\n"),
            "{after}"
        );
        assert!(after.contains("[feishu.work]\nenabled = true\n"), "{after}");
        assert!(after.contains("purpose = \"mail\""), "{after}");
        crate::config::Config::parse(std::path::Path::new("/x.toml"), &after).expect("parses");
        // Applying the same plan again changes nothing at all.
        assert_eq!(apply(Some(&after), &plan).expect("applies"), after);
        // An empty plan is the file itself.
        assert_eq!(
            apply(Some(before), &Plan::default()).expect("applies"),
            before
        );
    }

    /// What a real set-up needs is written: the mail server's port, TLS and CA, the Feishu
    /// domain, the WeChat endpoint, the chats' workspace, `notify`, the timezone and an ACP
    /// agent; the digests and `notify` default to the chat being set up.
    #[test]
    fn a_real_setup_writes_what_it_needs() {
        let mut plan = Plan {
            agent: AgentPlan {
                backend: Some(AgentChoice::Acp),
                command: Some("gemini".into()),
                args: Some(vec!["--experimental-acp".into()]),
                api_key_env: Some("GEMINI_API_KEY".into()),
                ..AgentPlan::default()
            },
            chats: vec![
                ChatPlan::new(Channel::Wechat, "phone"),
                ChatPlan::new(Channel::Feishu, "work"),
            ],
            mail: vec![MailPlan {
                name: "box".into(),
                imap_host: Some("mail.example.com".into()),
                imap_port: Some(1143),
                tls: Some(TlsChoice::Starttls),
                tls_ca: Some("/etc/ssl/private-ca.pem".into()),
                username: Some("me".into()),
                chat: None,
            }],
            workspace: Some("/srv/ws".into()),
            timezone: Some("Asia/Shanghai".into()),
            ..Plan::default()
        };
        // Each platform takes the set-up answers it asks, and only those.
        assert!(plan.chats[0].answer("base_url", "https://ilink.example.com".into()));
        assert!(!plan.chats[0].answer("domain", "lark".into()));
        assert!(plan.chats[1].answer("domain", "lark".into()));
        assert!(plan.chats[1].answer("app-id", "cli_1".into()));
        plan.default_to_new_chat(false);
        let text = apply(None, &plan).expect("applies");
        assert!(
            !text.contains("cli_1"),
            "a login answer is never written: {text}"
        );
        let cfg = crate::config::Config::parse(std::path::Path::new("/x.toml"), &text)
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(cfg.agent.backend, crate::config::AgentBackend::Acp);
        assert_eq!(cfg.agent.command.as_deref(), Some("gemini"));
        assert_eq!(cfg.agent.args, Some(vec!["--experimental-acp".to_string()]));
        assert_eq!(cfg.agent.api_key_env.as_deref(), Some("GEMINI_API_KEY"));
        assert_eq!(cfg.timezone, Some(chrono_tz::Asia::Shanghai));
        let key = |s: &str| crate::config::AccountKey::parse(s).expect("key");
        assert_eq!(cfg.notify, Some(key("wechat:phone")));
        for chat in ["wechat:phone", "feishu:work"] {
            let a = &cfg.accounts[&key(chat)];
            assert_eq!(
                a.workspace.as_deref(),
                Some(std::path::Path::new("/srv/ws"))
            );
        }
        assert!(text.contains("domain = \"lark\""), "{text}");
        assert!(
            text.contains("base_url = \"https://ilink.example.com\""),
            "{text}"
        );
        let crate::config::ChannelSettings::Mail(m) = &cfg.accounts[&key("mail:box")].settings
        else {
            panic!("mail settings")
        };
        assert_eq!(m.imap_port, Some(1143));
        assert_eq!(m.tls, crate::config::MailTls::Starttls);
        assert_eq!(m.tls_ca.as_deref(), Some("/etc/ssl/private-ca.pem"));
        assert_eq!(m.report_to, Some(key("wechat:phone")));
        // Again: nothing changes.
        assert_eq!(apply(Some(&text), &plan).expect("applies"), text);
        // A file that names its own notify keeps it.
        let mut again = plan.clone();
        again.notify = None;
        again.default_to_new_chat(true);
        assert_eq!(again.notify, None);
    }
}

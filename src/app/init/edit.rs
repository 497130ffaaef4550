//! Applies a [`Plan`] to configuration text with toml_edit: keys the plan does not set, their
//! comments and the order of everything stay byte for byte; a changed value keeps its trailing
//! comment; new tables go at the end.

use toml_edit::{DocumentMut, Item, Table, Value};

use super::plan::{AgentChoice, Plan};

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
    apply_agent(root, plan);
    for name in &plan.wechat {
        let t = account(root, "wechat", name, fresh);
        if let Some(url) = &plan.wechat_base_url {
            set_str(t, "base_url", url);
        }
    }
    for name in &plan.feishu {
        account(root, "feishu", name, fresh);
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
    let a = &plan.agent;
    let any = a.backend.is_some()
        || a.base_url.is_some()
        || a.model.is_some()
        || a.command.is_some()
        || a.socket.is_some();
    if !any {
        return;
    }
    let t = table(root, "agent");
    if let Some(b) = a.backend {
        set_str(
            t,
            "backend",
            match b {
                AgentChoice::Openai => "openai",
                AgentChoice::Scv => "scv",
            },
        );
    }
    for (key, v) in [
        ("base_url", &a.base_url),
        ("model", &a.model),
        ("command", &a.command),
        ("socket", &a.socket),
    ] {
        if let Some(v) = v {
            set_str(t, key, v);
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
    use super::super::plan::{AgentPlan, MailPlan};
    use super::*;

    #[test]
    fn a_new_file_holds_only_what_was_picked() {
        let plan = Plan {
            agent: AgentPlan {
                backend: Some(AgentChoice::Openai),
                base_url: Some("http://127.0.0.1:11434/v1".into()),
                model: Some("qwen2.5:7b".into()),
                ..AgentPlan::default()
            },
            wechat: vec!["phone".into()],
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
    fn a_rerun_changes_only_what_was_picked_and_keeps_comments() {
        let before = "# mine\nstate_dir = \"/srv/s\"   # keep\n\n[agent]\n# the model\nmodel = \"old\" # trailing\nbase_url = \"http://127.0.0.1:1/v1\"\n\n[wechat.phone]\n# who\nsenders = \"anyone\"\n";
        let plan = Plan {
            agent: AgentPlan {
                model: Some("new".into()),
                ..AgentPlan::default()
            },
            wechat: vec!["phone".into()],
            feishu: vec!["work".into()],
            mail: vec![MailPlan {
                name: "personal".into(),
                imap_host: Some("imap.example.com".into()),
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
}

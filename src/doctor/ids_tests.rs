//! The ids `doctor --json` prints, pinned.

use crate::probe::CheckId;

/// Scripts key on these: a rename breaks them, so it must break this test first.
#[test]
fn the_ids_are_pinned() {
    let ids: Vec<&str> = CheckId::ALL
        .iter()
        .map(|i| i.as_str())
        .chain(
            crate::ids::Channel::REAL
                .into_iter()
                .flat_map(|c| crate::adapters::platform(c).check_ids().iter().copied()),
        )
        .collect();
    assert_eq!(
        ids,
        [
            "config",
            "daemon",
            "daemon.account",
            "daemon.agent",
            "credential_store",
            "credentials",
            "same_bot",
            "store",
            "socket_dir",
            "clock",
            "agent.key",
            "agent.endpoint",
            "agent.server",
            "approvals",
            "console",
            "speech",
            "wechat.endpoint",
            "feishu.endpoint",
            "feishu.app",
            "telegram.bot",
            "telegram.webhook",
            "wecom.endpoint",
            "dingtalk.app",
            "qq.bot",
            "qq.gateway",
            "mail.imap",
            "mail.smtp",
        ]
    );
}

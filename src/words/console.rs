//! The web console's words, in English and Simplified Chinese (`console/`): headings, column
//! names, buttons and the lines around them. What the daemon reports (states, notes, commands,
//! a login's progress lines) is shown as the daemon wrote it, like `status` shows it.

use super::Lang;

/// Every word of the console's pages.
#[derive(Debug)]
pub struct Console {
    pub title: &'static str,
    pub accounts: &'static str,
    pub account: &'static str,
    pub state: &'static str,
    pub since: &'static str,
    pub note: &'static str,
    pub fix: &'static str,
    pub no_accounts: &'static str,
    pub agent: &'static str,
    pub agent_none: &'static str,
    pub mail: &'static str,
    pub mail_seen: &'static str,
    pub mail_reported: &'static str,
    pub mail_queued: &'static str,
    pub mail_tokens: &'static str,
    pub questions: &'static str,
    pub no_questions: &'static str,
    pub deadline: &'static str,
    pub yes: &'static str,
    pub no: &'static str,
    pub always: &'static str,
    pub scan: &'static str,
    pub scan_title: &'static str,
    pub scan_with: &'static str,
    pub scan_send: &'static str,
    pub scan_busy: &'static str,
    pub scan_unknown: &'static str,
    pub setup_title: &'static str,
    pub setup_model: &'static str,
    pub setup_base_url: &'static str,
    pub setup_model_name: &'static str,
    pub setup_key: &'static str,
    pub setup_test_save: &'static str,
    pub setup_key_refused: &'static str,
    pub setup_unreachable: &'static str,
    pub setup_model_saved: &'static str,
    pub setup_speech: &'static str,
    pub setup_speech_url: &'static str,
    pub setup_speech_failed: &'static str,
    pub setup_speech_saved: &'static str,
    pub setup_add_chat: &'static str,
    pub setup_platform: &'static str,
    pub setup_name: &'static str,
    pub setup_add: &'static str,
    pub setup_bad_chat: &'static str,
    pub setup_exists: &'static str,
    pub scan_open: &'static str,
    pub login_done: &'static str,
    pub login_failed: &'static str,
    pub answered: &'static str,
    pub not_answered: &'static str,
    pub warning: &'static str,
    pub language: &'static str,
    pub signed_out: &'static str,
    pub link_refused: &'static str,
    pub too_many: &'static str,
    pub refused: &'static str,
    pub fix_login: &'static str,
    pub fix_reconnect: &'static str,
    pub fix_enable: &'static str,
    pub fix_unknown: &'static str,
    pub fix_failed: &'static str,
    pub setup_local_found: &'static str,
    pub setup_local_use: &'static str,
    pub setup_bad_answer: &'static str,
}

const EN: Console = Console {
    title: "scv-bridge console",
    accounts: "Accounts",
    account: "Account",
    state: "State",
    since: "For",
    note: "Note",
    fix: "Fix",
    no_accounts: "No accounts are configured.",
    agent: "Agent",
    agent_none: "This daemon runs no agent.",
    mail: "Mail",
    mail_seen: "seen today",
    mail_reported: "reported today",
    mail_queued: "waiting to be reported",
    mail_tokens: "model tokens today",
    questions: "Questions",
    no_questions: "No question waits for an answer.",
    deadline: "No answer counts as no at",
    yes: "Yes",
    no: "No",
    always: "Always",
    scan: "Log in",
    scan_title: "Login:",
    scan_with: "Scan with {app} (code {n} of {of})",
    scan_send: "Send",
    scan_busy: "A login is already running; wait for it to end.",
    scan_unknown: "No such account in the configuration:",
    setup_title: "Set up",
    setup_model: "The model that answers",
    setup_base_url: "Address (OpenAI-compatible, ends before /chat/completions)",
    setup_model_name: "Model name",
    setup_key: "API key (empty: none)",
    setup_test_save: "Test and save",
    setup_key_refused: "The model endpoint refused the key; nothing was saved",
    setup_unreachable: "The model endpoint cannot be reached, so nothing was saved; start it or fix the address:",
    setup_model_saved: "Saved and in use: the next message is answered by this model.",
    setup_speech: "Speech server (voice notes into text, answers into voice)",
    setup_speech_url: "OpenAI-compatible address",
    setup_speech_failed: "The speech server did not transcribe a test sound, so nothing was saved:",
    setup_speech_saved: "Saved and in use: the next voice note is transcribed by this server.",
    setup_add_chat: "Add a chat",
    setup_platform: "Platform",
    setup_name: "A name for the account",
    setup_add: "Add",
    setup_bad_chat: "Expected a chat platform and a name of letters, digits, - or _, found",
    setup_exists: "The configuration already has",
    scan_open: "or open",
    login_done: "Logged in.",
    login_failed: "The login failed:",
    answered: "Answered from the console:",
    not_answered: "Not recorded:",
    warning: "Warning:",
    language: "中文",
    signed_out: "Not signed in. Run `scv-bridge console` on the daemon's machine for a login link.",
    link_refused: "This login link is used or expired. Run `scv-bridge console` for a new one.",
    too_many: "Too many login attempts. Wait a minute, then run `scv-bridge console` for a new link.",
    refused: "Refused: this request did not come from the console's own page. Reload the page and try again.",
    fix_login: "Log in again",
    fix_reconnect: "Reconnect",
    fix_enable: "Enable",
    fix_unknown: "Not a fix the console offers (log in, reconnect or enable):",
    fix_failed: "The fix did not go through; run the command shown in the account's row instead:",
    setup_local_found: "{name} answers on this machine at",
    setup_local_use: "Test and use {name}",
    setup_bad_answer: "Not one of the answers offered; pick one from the list for",
};

const ZH_CN: Console = Console {
    title: "scv-bridge 控制台",
    accounts: "账号",
    account: "账号",
    state: "状态",
    since: "持续",
    note: "说明",
    fix: "解决办法",
    no_accounts: "还没有配置账号。",
    agent: "智能体",
    agent_none: "这个守护进程没有运行智能体。",
    mail: "邮件",
    mail_seen: "今天已处理",
    mail_reported: "今天已报告",
    mail_queued: "等待报告",
    mail_tokens: "今天的模型 token",
    questions: "待回答的问题",
    no_questions: "没有等待回答的问题。",
    deadline: "不回答即视为否，截止于",
    yes: "是",
    no: "否",
    always: "总是允许",
    scan: "登录",
    scan_title: "登录：",
    scan_with: "用{app}扫码（第 {n} 个，共 {of} 个）",
    scan_send: "提交",
    scan_busy: "已有一个登录在进行，请等它结束。",
    scan_unknown: "配置中没有这个账号：",
    setup_title: "设置",
    setup_model: "回答的模型",
    setup_base_url: "地址（兼容 OpenAI，到 /chat/completions 之前）",
    setup_model_name: "模型名称",
    setup_key: "API 密钥（留空：不需要）",
    setup_test_save: "测试并保存",
    setup_key_refused: "模型接口拒绝了这个密钥；没有保存任何内容",
    setup_unreachable: "无法连接模型接口，所以没有保存；请启动它或改正地址：",
    setup_model_saved: "已保存并生效：下一条消息由这个模型回答。",
    setup_speech: "语音服务器（语音转文字，回答转语音）",
    setup_speech_url: "OpenAI 兼容地址",
    setup_speech_failed: "语音服务器没能转写测试声音，所以没有保存：",
    setup_speech_saved: "已保存并生效：下一条语音消息由这个服务器转写。",
    setup_add_chat: "添加聊天",
    setup_platform: "平台",
    setup_name: "账号名称",
    setup_add: "添加",
    setup_bad_chat: "需要一个聊天平台和由字母、数字、- 或 _ 组成的名称，收到的是",
    setup_exists: "配置里已经有",
    scan_open: "或打开",
    login_done: "已登录。",
    login_failed: "登录失败：",
    answered: "已在控制台回答：",
    not_answered: "未记录：",
    warning: "警告：",
    language: "English",
    signed_out: "未登录。请在守护进程所在的机器上运行 `scv-bridge console` 获取登录链接。",
    link_refused: "这个登录链接已用过或已过期。请运行 `scv-bridge console` 获取新的链接。",
    too_many: "登录尝试过多。请等一分钟，再运行 `scv-bridge console` 获取新的链接。",
    refused: "已拒绝：这个请求不是来自控制台自己的页面。请刷新页面后重试。",
    fix_login: "重新登录",
    fix_reconnect: "重新连接",
    fix_enable: "启用",
    fix_unknown: "控制台不提供这个修复（可用：登录、重新连接、启用）：",
    fix_failed: "修复未完成；请改为运行账号一行里显示的命令：",
    setup_local_found: "本机上的 {name} 可用，地址",
    setup_local_use: "测试并使用 {name}",
    setup_bad_answer: "不是给出的选项之一；请从列表中选择：",
};

/// The console's words in `lang`.
pub fn console(lang: Lang) -> &'static Console {
    match lang {
        Lang::En => &EN,
        Lang::ZhCn => &ZH_CN,
    }
}

/// The language an `Accept-Language` header asks for first among the two (by its q-values;
/// English when it names neither).
pub fn accept_language(header: &str) -> Lang {
    let mut best: Option<(f32, Lang)> = None;
    for part in header.split(',') {
        let mut bits = part.split(';');
        let tag = bits.next().unwrap_or("").trim().to_ascii_lowercase();
        let q = bits
            .find_map(|b| b.trim().strip_prefix("q="))
            .and_then(|q| q.parse::<f32>().ok())
            .unwrap_or(1.0);
        let lang = if tag == "zh" || tag.starts_with("zh-") {
            Lang::ZhCn
        } else if tag == "en" || tag.starts_with("en-") {
            Lang::En
        } else {
            continue;
        };
        if best.is_none_or(|(b, _)| q > b) {
            best = Some((q, lang));
        }
    }
    best.map_or(Lang::En, |(_, l)| l)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_language_picks_the_preferred_of_the_two() {
        assert_eq!(accept_language("zh-CN"), Lang::ZhCn);
        assert_eq!(accept_language("zh-CN,zh;q=0.9,en;q=0.8"), Lang::ZhCn);
        assert_eq!(accept_language("en-US,en;q=0.9,zh-CN;q=0.8"), Lang::En);
        assert_eq!(accept_language("fr;q=1,zh;q=0.5"), Lang::ZhCn);
        assert_eq!(accept_language("de"), Lang::En);
        assert_eq!(accept_language(""), Lang::En);
    }

    #[test]
    fn both_languages_fill_every_word() {
        for lang in [Lang::En, Lang::ZhCn] {
            let c = console(lang);
            let words = [
                c.title,
                c.accounts,
                c.yes,
                c.no,
                c.always,
                c.scan,
                c.scan_send,
                c.scan_busy,
                c.scan_unknown,
                c.setup_title,
                c.setup_model,
                c.setup_base_url,
                c.setup_model_name,
                c.setup_key,
                c.setup_test_save,
                c.setup_key_refused,
                c.setup_unreachable,
                c.setup_model_saved,
                c.setup_speech,
                c.setup_speech_url,
                c.setup_speech_failed,
                c.setup_speech_saved,
                c.setup_add_chat,
                c.setup_platform,
                c.setup_name,
                c.setup_add,
                c.setup_bad_chat,
                c.setup_exists,
                c.signed_out,
                c.fix_login,
                c.fix_reconnect,
                c.fix_enable,
                c.fix_unknown,
                c.fix_failed,
                c.setup_local_found,
                c.setup_local_use,
                c.setup_bad_answer,
            ];
            assert!(words.iter().all(|w| !w.is_empty()));
        }
        assert_ne!(console(Lang::En).yes, console(Lang::ZhCn).yes);
    }
}

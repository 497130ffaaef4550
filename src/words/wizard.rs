//! The questions `scv-bridge init` asks on a terminal, in English and Simplified Chinese: the one
//! command-line text that follows the locale (`LC_ALL`, `LC_MESSAGES`, `LANG`, or `--lang`), since
//! a person setting up reads every line of it. Made by `app/init/ask.rs`; commands, keys and
//! values (`CHANNEL:ACCOUNT`, `cli_...`) stay as typed.

use super::Lang;

/// Every question and choice of the wizard.
#[derive(Debug)]
pub struct Wizard {
    pub agent: &'static str,
    pub openai: &'static str,
    pub scv: &'static str,
    pub acp: &'static str,
    pub keep: &'static str,
    pub another_agent: &'static str,
    pub agent_name: &'static str,
    pub named_agent: &'static str,
    pub base_url: &'static str,
    pub model: &'static str,
    pub key: &'static str,
    pub key_local: &'static str,
    pub scv_command: &'static str,
    pub acp_agent: &'static str,
    pub acp_codex: &'static str,
    pub acp_claude: &'static str,
    pub acp_gemini: &'static str,
    pub acp_key: &'static str,
    pub channels: &'static str,
    pub workspace: &'static str,
    pub mail_name: &'static str,
    pub imap_host: &'static str,
    pub tls: &'static str,
    pub tls_implicit: &'static str,
    pub tls_starttls: &'static str,
    pub tls_none: &'static str,
    pub imap_port: &'static str,
    pub tls_ca: &'static str,
    pub username: &'static str,
    pub mail_chat: &'static str,
    pub notify: &'static str,
    pub timezone: &'static str,
    pub speech: &'static str,
    pub login: &'static str,
    pub service: &'static str,
    pub unanswered: &'static str,
}

const EN: Wizard = Wizard {
    agent: "Which agent answers the chats?",
    openai: "An OpenAI-compatible endpoint (Ollama, llama.cpp, a hosted API)",
    scv: "An SCV agent server",
    acp: "A coding agent over ACP (Codex, Claude, Gemini CLI)",
    keep: "Keep the agent as configured",
    another_agent: "Add another agent, which a chat can switch to with /agent NAME?",
    agent_name: "Its name (letters, digits, '-' and '_'; a chat sends /agent NAME)",
    named_agent: "Which agent is it?",
    base_url: "Base URL (ends before /chat/completions)",
    model: "Model name",
    key: "API key (empty: none, or keep the stored one)",
    key_local: "The endpoint is on this machine; does it need an API key?",
    scv_command: "The command that starts the agent server",
    acp_agent: "Which coding agent?",
    acp_codex: "Codex (codex-acp; its key in OPENAI_API_KEY)",
    acp_claude: "Claude (claude-agent-acp; its key in ANTHROPIC_API_KEY)",
    acp_gemini: "Gemini CLI (gemini --experimental-acp; its key in GEMINI_API_KEY)",
    acp_key: "The agent's API key, stored and handed to it (empty: the daemon's environment sets it)",
    channels: "Which channels? (space selects, enter goes on)",
    workspace: "The agent's workspace (photos and files people send are kept there)",
    mail_name: "A name for the mail account",
    imap_host: "IMAP server",
    tls: "How is IMAP secured?",
    tls_implicit: "TLS (port 993)",
    tls_starttls: "STARTTLS (port 143)",
    tls_none: "None (a server on this machine only)",
    imap_port: "IMAP port",
    tls_ca: "The CA certificate of a private server, a PEM file (empty: the system's CAs)",
    username: "Mail login",
    mail_chat: "The chat for mail digests (CHANNEL:ACCOUNT; a new one carries only digests)",
    notify: "The chat `scv-bridge confirm` asks in (CHANNEL:ACCOUNT)",
    timezone: "Timezone for digest times (an IANA name such as Asia/Shanghai)",
    speech: "A speech server for voice notes, an OpenAI-compatible base URL such as http://127.0.0.1:8000/v1 (empty: none; voice notes then reach the agent as files)",
    login: "Log in to the new channels now?",
    service: "Install and start the systemd user service?",
    unanswered: "the question was not answered",
};

const ZH_CN: Wizard = Wizard {
    agent: "由哪个智能体回答聊天？",
    openai: "OpenAI 兼容接口（Ollama、llama.cpp、托管 API）",
    scv: "SCV 智能体服务器",
    acp: "通过 ACP 的编程智能体（Codex、Claude、Gemini CLI）",
    keep: "保留现有的智能体设置",
    another_agent: "再添加一个智能体，让对话可以用 /agent NAME 切换过去？",
    agent_name: "它的名字（字母、数字、'-' 和 '_'；对话中发送 /agent NAME）",
    named_agent: "这是哪种智能体？",
    base_url: "Base URL（写到 /chat/completions 之前）",
    model: "模型名称",
    key: "API 密钥（留空：不用密钥，或保留已存储的）",
    key_local: "该接口在本机上；是否需要 API 密钥？",
    scv_command: "启动智能体服务器的命令",
    acp_agent: "用哪个编程智能体？",
    acp_codex: "Codex（codex-acp；密钥在 OPENAI_API_KEY）",
    acp_claude: "Claude（claude-agent-acp；密钥在 ANTHROPIC_API_KEY）",
    acp_gemini: "Gemini CLI（gemini --experimental-acp；密钥在 GEMINI_API_KEY）",
    acp_key: "智能体的 API 密钥，存储后交给它（留空：由守护进程的环境变量提供）",
    channels: "启用哪些渠道？（空格选择，回车继续）",
    workspace: "智能体的工作目录（收到的照片和文件保存在这里）",
    mail_name: "邮箱账号的名称",
    imap_host: "IMAP 服务器",
    tls: "IMAP 如何加密？",
    tls_implicit: "TLS（端口 993）",
    tls_starttls: "STARTTLS（端口 143）",
    tls_none: "不加密（仅限本机上的服务器）",
    imap_port: "IMAP 端口",
    tls_ca: "私有服务器的 CA 证书，PEM 文件（留空：使用系统的 CA）",
    username: "邮箱登录名",
    mail_chat: "接收邮件摘要的聊天（渠道:账号，如 wechat:inbox；新建的只用于摘要）",
    notify: "`scv-bridge confirm` 提问所用的聊天（渠道:账号）",
    timezone: "摘要时间所用的时区（IANA 名称，如 Asia/Shanghai）",
    speech: "语音转文字服务器，OpenAI 兼容的地址，如 http://127.0.0.1:8000/v1（留空：不用；语音消息将以文件交给智能体）",
    login: "现在登录新的渠道吗？",
    service: "安装并启动 systemd 用户服务吗？",
    unanswered: "问题没有得到回答",
};

/// The wizard's words in `lang`.
pub fn wizard(lang: Lang) -> &'static Wizard {
    match lang {
        Lang::En => &EN,
        Lang::ZhCn => &ZH_CN,
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Every question as (English, Chinese), field by field (read from the Debug text, so a
    /// field added later is covered too).
    pub fn every() -> Vec<(String, String)> {
        let fields = |w: &Wizard| -> Vec<String> {
            format!("{w:#?}")
                .lines()
                .filter_map(|l| {
                    l.split_once(": \"")
                        .map(|(_, v)| v.trim_end_matches("\",").to_string())
                })
                .collect()
        };
        let (en, zh) = (fields(&EN), fields(&ZH_CN));
        assert_eq!(en.len(), zh.len());
        en.into_iter().zip(zh).collect()
    }
}

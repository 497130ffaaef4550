//! What a chat reads about voice: a voice note the bridge could not transcribe, the `/voice`
//! setting, and the line `/help` gives it.

use std::borrow::Cow;

use super::Lang;

/// What a chat that asked for spoken answers lacks to get them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VoiceLacks {
    /// No `[speech]` server is configured.
    Speech,
    /// The account has no workspace, where a spoken answer is written before it is sent.
    Workspace,
}

impl VoiceLacks {
    fn text(self, lang: Lang) -> &'static str {
        match (lang, self) {
            (Lang::En, VoiceLacks::Speech) => {
                " But no answer can be spoken yet: no speech server is set. Add a [speech] table to the configuration (`scv-bridge guide` shows how)."
            }
            (Lang::En, VoiceLacks::Workspace) => {
                " But no answer can be spoken yet: this account has no workspace, where spoken answers are written first. Set workspace in its table."
            }
            (Lang::ZhCn, VoiceLacks::Speech) => {
                "但现在还不能用语音回答：没有设置语音服务。请在配置中加上 [speech] 表（`scv-bridge guide` 有说明）。"
            }
            (Lang::ZhCn, VoiceLacks::Workspace) => {
                "但现在还不能用语音回答：这个账号没有工作区，语音回答要先写入工作区。请在它的表中设置 workspace。"
            }
        }
    }
}

/// A line about voice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Voice {
    /// Starts the answer to a voice note the speech server did not transcribe: the agent got
    /// the file instead. `why` and `action` are operator words (English, from the failure).
    NotTranscribed {
        /// What failed.
        why: String,
        /// What to do.
        action: String,
    },
    /// The answer to `/voice on|off|auto` (and to `/voice` alone: the current setting).
    Mode {
        /// `on`, `off` or `auto`.
        mode: &'static str,
        /// Whether this platform has voice bubbles at all.
        bubbles: bool,
        /// What keeps answers from being spoken even so (never said for `off`).
        lacks: Option<VoiceLacks>,
    },
    /// `/voice` with something other than on, off or auto.
    Usage,
    /// The setting could not be read or kept (operator words, English).
    Failed {
        /// What failed.
        error: String,
    },
}

impl Voice {
    /// The text in `lang`.
    pub fn text(&self, lang: Lang) -> Cow<'static, str> {
        match (lang, self) {
            (Lang::En, Voice::NotTranscribed { why, action }) => format!(
                "(Your voice note was not transcribed: {why}. The agent got the audio file instead. To fix: {action}.)"
            )
            .into(),
            (Lang::ZhCn, Voice::NotTranscribed { why, action }) => format!(
                "（语音没有转成文字：{why}。已把音频文件交给智能体。处理方法：{action}。）"
            )
            .into(),
            (Lang::En, Voice::Mode { mode, bubbles, lacks }) => {
                let what = match *mode {
                    "on" => "Answers come as a voice message too.",
                    "off" => "Answers come as text only.",
                    _ => "Answers come as a voice message too when you ask by voice.",
                };
                if *bubbles {
                    let lacks = lacks.map(|l| l.text(lang)).unwrap_or_default();
                    format!("Voice: {mode}. {what}{lacks}").into()
                } else {
                    format!("Voice: {mode}. This chat app gets answers as text only.").into()
                }
            }
            (Lang::ZhCn, Voice::Mode { mode, bubbles, lacks }) => {
                let what = match *mode {
                    "on" => "回复同时以语音发送。",
                    "off" => "回复只发文字。",
                    _ => "用语音提问时，回复同时以语音发送。",
                };
                if *bubbles {
                    let lacks = lacks.map(|l| l.text(lang)).unwrap_or_default();
                    format!("语音：{mode}。{what}{lacks}").into()
                } else {
                    format!("语音：{mode}。这个聊天应用只收文字回复。").into()
                }
            }
            (Lang::En, Voice::Usage) => {
                "Send /voice on, /voice off or /voice auto (answer by voice when asked by voice)."
                    .into()
            }
            (Lang::En, Voice::Failed { error }) => {
                format!("The voice setting was not changed: {error}. Try again in a moment.").into()
            }
            (Lang::ZhCn, Voice::Failed { error }) => {
                format!("语音设置没有改变：{error}。请稍后再试。").into()
            }
            (Lang::ZhCn, Voice::Usage) => {
                "请发送 /voice on、/voice off 或 /voice auto（用语音提问时用语音回答）。".into()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_has_both_languages() {
        let all = [
            Voice::NotTranscribed {
                why: "w".into(),
                action: "a".into(),
            },
            Voice::Mode {
                mode: "auto",
                bubbles: true,
                lacks: None,
            },
            Voice::Mode {
                mode: "on",
                bubbles: false,
                lacks: None,
            },
            Voice::Mode {
                mode: "on",
                bubbles: true,
                lacks: Some(VoiceLacks::Speech),
            },
            Voice::Mode {
                mode: "on",
                bubbles: true,
                lacks: Some(VoiceLacks::Workspace),
            },
            Voice::Usage,
            Voice::Failed { error: "e".into() },
        ];
        for v in all {
            assert_ne!(v.text(Lang::En), v.text(Lang::ZhCn));
        }
    }

    #[test]
    fn what_keeps_answers_from_being_spoken_is_said_unless_voice_is_off() {
        let on = |lacks| Voice::Mode {
            mode: "on",
            bubbles: true,
            lacks,
        };
        assert!(
            on(Some(VoiceLacks::Speech))
                .text(Lang::En)
                .contains("no speech server")
        );
        assert!(
            on(Some(VoiceLacks::Workspace))
                .text(Lang::ZhCn)
                .contains("工作区")
        );
        assert!(!on(None).text(Lang::En).contains("But"));
    }
}

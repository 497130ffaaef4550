//! What a chat reads about voice: a voice note the bridge could not transcribe, the `/voice`
//! setting, and the line `/help` gives it.

use std::borrow::Cow;

use super::Lang;

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
            (Lang::En, Voice::Mode { mode, bubbles }) => {
                let what = match *mode {
                    "on" => "Answers come as a voice message too.",
                    "off" => "Answers come as text only.",
                    _ => "Answers come as a voice message too when you ask by voice.",
                };
                if *bubbles {
                    format!("Voice: {mode}. {what}").into()
                } else {
                    format!("Voice: {mode}. This chat app gets answers as text only.").into()
                }
            }
            (Lang::ZhCn, Voice::Mode { mode, bubbles }) => {
                let what = match *mode {
                    "on" => "回复同时以语音发送。",
                    "off" => "回复只发文字。",
                    _ => "用语音提问时，回复同时以语音发送。",
                };
                if *bubbles {
                    format!("语音：{mode}。{what}").into()
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
            },
            Voice::Mode {
                mode: "on",
                bubbles: false,
            },
            Voice::Usage,
            Voice::Failed { error: "e".into() },
        ];
        for v in all {
            assert_ne!(v.text(Lang::En), v.text(Lang::ZhCn));
        }
    }
}

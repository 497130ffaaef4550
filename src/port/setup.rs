//! What `init` asks when it adds an account of a chat platform: a name for the account, then the
//! platform's questions, each answer written into the account's table or handed to its login.
//!
//! Each chat platform makes its [`Setup`] (`Platform::setup`); `app/init` walks any of them on
//! a terminal (and from flags in scripts), so the wizard names no platform. The texts are the
//! platform's own, in English and Simplified Chinese like the rest of the wizard.

use crate::words::Lang;

/// A text in the wizard's two languages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Said {
    /// English.
    pub en: &'static str,
    /// Simplified Chinese.
    pub zh: &'static str,
}

impl Said {
    /// The text in `lang`.
    pub fn get(&self, lang: Lang) -> &'static str {
        match lang {
            Lang::En => self.en,
            Lang::ZhCn => self.zh,
        }
    }
}

/// Where an answer goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Goes {
    /// The key of the account's table named by [`Question::key`].
    Table,
    /// The flag of the account's login named by [`Question::key`] (never written to the file).
    Login,
}

/// One value to pick, with its label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Choice {
    /// The value written (`lark`).
    pub value: &'static str,
    /// What the person reads.
    pub label: Said,
}

/// One question of a platform's set-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Question {
    /// The table key or login flag (`base_url`, `app-id`).
    pub key: &'static str,
    /// Where the answer goes.
    pub goes: Goes,
    /// The question.
    pub prompt: Said,
    /// The values to pick from, the first the default; empty: typed.
    pub choices: &'static [Choice],
    /// A typed answer's default, offered and, when kept, not written (the platform's own).
    pub default: Option<&'static str>,
}

/// A chat platform's set-up questions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setup {
    /// The question for the account's name.
    pub name: Said,
    /// The name offered (`phone`).
    pub default_name: &'static str,
    /// The rest, in order; an answer given by a flag is not asked again.
    pub questions: &'static [Question],
}

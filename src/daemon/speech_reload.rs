//! `[speech]` into the pipeline: built at start and again by a reload that changes it, so a
//! new server, model or key is used by the next voice note (one in flight finishes on the old).

use std::sync::Arc;

use super::Core;
use crate::config::Config;

impl Core {
    /// Puts the speech server `config` names (or none) into the pipeline, when there is one.
    pub(super) fn apply_speech(&self, config: &Config) {
        if let Some(c) = &self.conversation {
            c.set_speech(crate::speech::Speech::from_config(&config.speech).map(Arc::new));
        }
    }

    /// The speech server's status row, when the daemon runs a pipeline.
    pub(super) fn speech_health(&self) -> Option<Box<crate::protocol::SpeechHealth>> {
        self.conversation
            .as_ref()
            .map(|c| Box::new(c.speech_health()))
    }
}

//! Files that travel with a turn: what the owner sent (saved in the account's workspace by the
//! adapter) and what the agent's backend hands back in its own attachment form.

use std::path::PathBuf;

/// What kind of media a file is; decides how a backend presents it (an image part, a path line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MediaKind {
    /// A photo or screenshot.
    Image,
    /// Any other file (PDF, archive, ...).
    File,
    /// A voice note or audio file.
    Audio,
    /// A video.
    Video,
}

/// One file the owner sent, already saved inside the account's workspace.
#[derive(Clone, PartialEq, Eq)]
pub struct Attachment {
    /// Where it was saved (absolute, inside the workspace).
    pub path: PathBuf,
    /// What it is.
    pub kind: MediaKind,
    /// The MIME type when known (`image/png`).
    pub mime: Option<String>,
}

impl std::fmt::Debug for Attachment {
    // A file name can say what a message is about: never in Debug, which reaches logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attachment")
            .field("kind", &self.kind)
            .field("mime", &self.mime)
            .finish()
    }
}

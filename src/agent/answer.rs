//! What an agent's answer may put into a chat: its first `[agent] max_answer_kib` of text. The
//! rest goes, as it arrives, into a file in the account's workspace (`answers/`), which the
//! pipeline sends after the answer as a document where the platform can, and the answer ends
//! with a line saying so. So a 50 MB answer neither floods the chat nor sits in memory: what a
//! backend holds of an answer is at most the cap and a write buffer.
//!
//! Every backend reads its answer into an [`Answer`] made from the turn's [`AnswerCap`]; the
//! streamed text events stop at the cap too, so streaming shows no more than the final answer.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use tracing::{info, warn};

use super::{TurnEvents, TurnRequest};
use crate::config::AgentConfig;
use crate::words::{Lang, Msg};

/// The most bytes of an answer put into the chat unless `[agent] max_answer_kib` says otherwise.
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 64 * 1024;

/// The workspace directory answers' overflow files go to.
pub const ANSWERS_DIR: &str = "answers";

/// `[agent] max_answer_kib` in bytes, or the default (the configuration checked its range).
pub fn max_answer_bytes(cfg: &AgentConfig) -> usize {
    cfg.max_answer_kib
        .and_then(|k| usize::try_from(k.saturating_mul(1024)).ok())
        .unwrap_or(DEFAULT_MAX_ANSWER_BYTES)
}

/// How one turn's answer is bounded: made by the backend from the request and its cap.
#[derive(Clone, Default)]
pub struct AnswerCap {
    max: usize,
    /// Where the rest goes (`None`: it is left out).
    workspace: Option<PathBuf>,
    /// The language of the line that says so (`None`: no line, as for mail triage's JSON).
    note: Option<Lang>,
    /// Where the part that fits is streamed.
    events: TurnEvents,
}

impl AnswerCap {
    /// `max` bytes in the chat (streamed to `events`), the rest in a file in `workspace`, and
    /// a line in `lang` saying so.
    pub fn new(max: usize, workspace: Option<PathBuf>, lang: Lang, events: TurnEvents) -> Self {
        AnswerCap {
            max,
            workspace,
            note: Some(lang),
            events,
        }
    }

    /// The cap of a chat turn: `max` bytes in the chat, the rest in the request's workspace.
    pub fn for_turn(req: &TurnRequest, max: usize) -> Self {
        AnswerCap::new(max, req.workspace.clone(), req.language, req.events.clone())
    }

    /// A bound on memory alone (a completion nobody reads in a chat): the rest is dropped.
    pub fn quiet(max: usize) -> Self {
        AnswerCap {
            max,
            ..AnswerCap::default()
        }
    }

    /// An empty answer under this cap.
    pub fn start(&self) -> Answer {
        Answer {
            cap: self.clone(),
            text: String::new(),
            rest: None,
        }
    }
}

/// An answer being read: the part that fits, and the file holding the rest once there is one.
pub struct Answer {
    cap: AnswerCap,
    text: String,
    rest: Option<Rest>,
}

/// The part past the cap.
struct Rest {
    /// The open file (`None`: no workspace, or it could not be written: the rest is dropped).
    file: Option<(PathBuf, std::io::BufWriter<std::fs::File>)>,
    /// Bytes past the cap.
    bytes: u64,
}

impl Answer {
    /// Appends a piece of the answer: into the chat's part while it fits (streamed as it
    /// comes), into the file after.
    pub fn push(&mut self, piece: &str) {
        if self.rest.is_none() {
            let room = self.cap.max.saturating_sub(self.text.len());
            if piece.len() <= room {
                self.text.push_str(piece);
                self.cap.events.text(piece);
                return;
            }
            let cut = floor_char_boundary(piece, room);
            let (fits, over) = piece.split_at(cut);
            if !fits.is_empty() {
                self.text.push_str(fits);
                self.cap.events.text(fits);
            }
            self.rest = Some(Rest::open(&self.cap));
            self.spill(over);
        } else {
            self.spill(piece);
        }
    }

    fn spill(&mut self, bytes: &str) {
        let Some(rest) = self.rest.as_mut() else {
            return;
        };
        rest.bytes += bytes.len() as u64;
        // A local file through a buffer: writes land in the page cache and return at once, so
        // they are made in place rather than handed to a blocking thread per piece.
        if let Some((path, f)) = rest.file.as_mut()
            && let Err(e) = f.write_all(bytes.as_bytes())
        {
            warn!(path = %path.display(), error = %e, "cannot write the rest of a long answer; it is left out");
            rest.drop_file();
        }
    }

    /// The part of the answer that fits so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether anything went past the cap.
    pub fn overflowed(&self) -> bool {
        self.rest.is_some()
    }

    /// The answer for the chat, the line saying where the rest is (streamed too) when it did not
    /// fit, and the file to send after it.
    pub fn finish(mut self) -> (String, Vec<PathBuf>) {
        let mut text = std::mem::take(&mut self.text);
        let Some(mut rest) = self.rest.take() else {
            return (text, Vec::new());
        };
        let file = rest.close();
        info!(
            over_bytes = rest.bytes,
            kept = file.is_some(),
            "an answer was longer than the chat's cap"
        );
        let Some(lang) = self.cap.note else {
            return (text, file.into_iter().collect());
        };
        let shown = file.as_ref().map(|f| {
            let root = self.cap.workspace.as_deref().unwrap_or(Path::new(""));
            f.strip_prefix(root).unwrap_or(f).display().to_string()
        });
        let max = crate::media::human_size(self.cap.max as u64);
        let note = Msg::AnswerCut { max, file: shown }.text(lang);
        let line = format!("\n\n{note}");
        self.cap.events.text(&line);
        text.push_str(&line);
        (text, file.into_iter().collect())
    }
}

impl Drop for Answer {
    /// An answer given up (the turn failed, or a backend took another text) leaves no file.
    fn drop(&mut self) {
        if let Some(mut rest) = self.rest.take() {
            rest.drop_file();
        }
    }
}

impl Rest {
    /// `<workspace>/answers/answer-<time>-<random>.md`, or no file (said in the log).
    fn open(cap: &AnswerCap) -> Rest {
        let file = cap.workspace.as_deref().and_then(|ws| {
            let dir = ws.join(ANSWERS_DIR);
            let name = format!(
                "answer-{}-{:08x}.md",
                chrono::Local::now().format("%Y%m%d-%H%M%S"),
                rand::random::<u32>()
            );
            let path = dir.join(name);
            let opened = std::fs::create_dir_all(&dir).and_then(|()| {
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&path)
            });
            match opened {
                Ok(f) => Some((path, std::io::BufWriter::new(f))),
                Err(e) => {
                    warn!(dir = %dir.display(), error = %e, "cannot keep the rest of a long answer; it is left out");
                    None
                }
            }
        });
        Rest { file, bytes: 0 }
    }

    /// Flushes and closes the file; its path, unless writing it failed.
    fn close(&mut self) -> Option<PathBuf> {
        let (path, mut f) = self.file.take()?;
        match f.flush() {
            Ok(()) => Some(path),
            Err(e) => {
                warn!(path = %path.display(), error = %e, "cannot write the rest of a long answer; it is left out");
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }

    fn drop_file(&mut self) {
        if let Some((path, f)) = self.file.take() {
            drop(f);
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The largest index `<= at` that is a character boundary of `s`.
fn floor_char_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    (0..=at).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::TurnEvent;

    fn cap(
        max: usize,
        ws: Option<&Path>,
    ) -> (AnswerCap, tokio::sync::mpsc::UnboundedReceiver<TurnEvent>) {
        let (events, rx) = TurnEvents::channel();
        let cap = AnswerCap::new(max, ws.map(Path::to_path_buf), Lang::En, events);
        (cap, rx)
    }

    fn streamed(rx: &mut tokio::sync::mpsc::UnboundedReceiver<TurnEvent>) -> String {
        std::iter::from_fn(|| rx.try_recv().ok())
            .map(|e| match e {
                TurnEvent::Text(t) => t,
                _ => String::new(),
            })
            .collect()
    }

    #[test]
    fn an_answer_within_the_cap_is_whole_and_has_no_file() {
        let (cap, mut rx) = cap(10, None);
        let mut a = cap.start();
        a.push("hello ");
        a.push("you");
        assert!(!a.overflowed());
        assert_eq!(a.finish(), ("hello you".to_string(), Vec::new()));
        assert_eq!(streamed(&mut rx), "hello you");
    }

    #[test]
    fn the_rest_goes_to_a_workspace_file_and_the_chat_is_told() {
        let ws = tempfile::tempdir().expect("dir");
        let (cap, mut rx) = cap(7, Some(ws.path()));
        let mut a = cap.start();
        // "é" straddles the cap: the chat's part ends before it.
        a.push("abcdefé");
        a.push("ghij");
        let (text, files) = a.finish();
        assert_eq!(files.len(), 1);
        let name = files[0]
            .strip_prefix(ws.path())
            .expect("inside")
            .display()
            .to_string();
        assert!(
            name.starts_with("answers/answer-") && name.ends_with(".md"),
            "{name}"
        );
        assert_eq!(std::fs::read_to_string(&files[0]).expect("file"), "éghij");
        assert_eq!(
            text,
            format!(
                "abcdef\n\n(The answer is longer than 7 bytes: the rest is in the workspace file {name}, sent after this.)"
            )
        );
        assert_eq!(
            streamed(&mut rx),
            text,
            "streaming shows what the chat gets"
        );
    }

    #[test]
    fn without_a_workspace_the_rest_is_left_out_and_said() {
        let (cap, _rx) = cap(4, None);
        let mut a = cap.start();
        a.push("abcdefgh");
        let (text, files) = a.finish();
        assert!(files.is_empty());
        assert_eq!(
            text,
            "abcd\n\n(The answer was longer than 4 bytes; the rest is left out.)"
        );
    }

    #[test]
    fn an_answer_given_up_leaves_no_file_and_a_quiet_cap_adds_no_line() {
        let ws = tempfile::tempdir().expect("dir");
        let (cap, _rx) = cap(2, Some(ws.path()));
        let mut a = cap.start();
        a.push("abcdef");
        drop(a);
        let left: Vec<_> = std::fs::read_dir(ws.path().join(ANSWERS_DIR))
            .expect("dir")
            .collect();
        assert!(left.is_empty(), "{left:?}");
        let mut q = AnswerCap::quiet(3).start();
        q.push("abcdef");
        assert_eq!(q.finish(), ("abc".to_string(), Vec::new()));
    }
}

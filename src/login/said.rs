//! What a login walk says: each line shown through the UI as it comes, and kept, so the walk
//! can also return everything it said.

use crate::port::login_flow::{LoginUi, Shown};

/// The lines a login says: shown as they come, and kept for the caller.
pub(super) struct Said<'a> {
    ui: &'a mut dyn LoginUi,
    lines: Vec<String>,
}

impl<'a> Said<'a> {
    pub(super) fn new(ui: &'a mut dyn LoginUi) -> Self {
        Said {
            ui,
            lines: Vec::new(),
        }
    }

    /// Shows `line` and keeps it.
    pub(super) fn line(&mut self, line: String) {
        self.ui.show(Shown::Line(line.clone()));
        self.lines.push(line);
    }

    pub(super) fn all(self) -> String {
        self.lines.join("\n")
    }
}

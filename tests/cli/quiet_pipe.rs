//! `scv-bridge completions bash | head` and the other printing commands end quietly when their
//! reader has gone: exit 0, nothing on stderr (no broken-pipe panic or error line).

use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_scv-bridge");

#[test]
fn printing_into_a_closed_pipe_exits_quietly() {
    for args in [
        &["completions", "bash"][..],
        &["man"][..],
        &["guide", "--lang", "en"][..],
        &["config", "example"][..],
    ] {
        // The reader is closed before the command starts, so every write meets a broken pipe.
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let out = Command::new(BIN)
            .args(args)
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .expect("run the binary");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {:?} {stderr}", out.status);
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
}

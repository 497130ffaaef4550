//! `init` asks its questions in the reader's language: the locale (`LANG`, `LC_ALL`) or `--lang`
//! (`zh`, `zh_CN` and `zh-CN` alike), on a real pseudo-terminal, as a person would run it.

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_scv-bridge");

/// Real time allowed for the first question to show; nothing waits this long unless broken.
const PATIENCE: Duration = Duration::from_secs(30);

/// Runs `init` on a new pseudo-terminal with `env` and `args`, returns what it printed up to
/// the first line that holds `until` (or everything, if it never came), then ends it.
fn first_question(env: &[(&str, &str)], args: &[&str], until: &str) -> String {
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty writes two descriptors into the integers given; no name, termios or size.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and are owned here alone.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = Command::new(BIN);
    cmd.arg("--config")
        .arg(dir.path().join("config.toml"))
        .arg("init")
        .args(args)
        .env_remove("LC_ALL")
        .env_remove("LC_MESSAGES")
        .env_remove("LANG")
        .envs(env.iter().copied())
        .env("TERM", "xterm")
        .stdin(Stdio::from(slave.try_clone().expect("dup")))
        .stdout(Stdio::from(slave.try_clone().expect("dup")))
        .stderr(Stdio::from(slave));
    // SAFETY: only async-signal-safe calls between fork and exec: a new session whose
    // controlling terminal is the pseudo-terminal (so /dev/tty is it, as in a real terminal).
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("spawn init");
    drop(cmd);
    let (tx, rx) = mpsc::channel();
    let mut reader = std::fs::File::from(master.try_clone().expect("dup"));
    let until = until.to_string();
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
            if String::from_utf8_lossy(&seen).contains(&until) {
                break;
            }
        }
        let _ = tx.send(String::from_utf8_lossy(&seen).into_owned());
    });
    let shown = rx.recv_timeout(PATIENCE).unwrap_or_default();
    let _ = child.kill();
    let _ = child.wait();
    // The terminal stays open until init has ended.
    drop(master);
    shown
}

#[test]
fn a_chinese_locale_asks_in_chinese() {
    let shown = first_question(&[("LANG", "zh_CN.UTF-8")], &[], "通过 ACP 的编程智能体");
    assert!(shown.contains("由哪个智能体回答聊天？"), "{shown}");
    assert!(shown.contains("通过 ACP 的编程智能体"), "{shown}");
    let shown = first_question(
        &[("LANG", "en_US.UTF-8"), ("LC_ALL", "zh_CN.UTF-8")],
        &[],
        "通过 ACP 的编程智能体",
    );
    assert!(
        shown.contains("由哪个智能体回答聊天？"),
        "LC_ALL wins: {shown}"
    );
}

#[test]
fn lang_flag_wins_over_the_locale_in_every_spelling() {
    for spelling in ["zh", "zh_CN", "zh-CN"] {
        let shown = first_question(
            &[("LANG", "en_US.UTF-8")],
            &["--lang", spelling],
            "通过 ACP 的编程智能体",
        );
        assert!(
            shown.contains("由哪个智能体回答聊天？"),
            "{spelling}: {shown}"
        );
    }
    let shown = first_question(
        &[("LANG", "zh_CN.UTF-8")],
        &["--lang", "en"],
        "A coding agent over ACP",
    );
    assert!(shown.contains("Which agent answers the chats?"), "{shown}");
}

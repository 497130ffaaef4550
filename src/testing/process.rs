//! Starting the real binary the way a test or bench needs it.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// Makes `cmd`'s child start under an open-file limit of `soft`/`hard` (`RLIMIT_NOFILE`),
/// leaving this process's own limit alone.
pub fn limit_open_files(cmd: &mut Command, soft: u64, hard: u64) {
    let lim = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: setrlimit is async-signal-safe and touches only the child being started.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
}

/// Runs `bin --config CONFIG login CHANNEL ACCOUNT`, answering its questions with `answers`
/// (one a line) on standard input, and waits up to a minute for it to end. Returns whether it
/// succeeded and what it printed (stdout, then stderr).
pub async fn login(
    bin: &str,
    config: &std::path::Path,
    channel: &str,
    account: &str,
    answers: &[&str],
) -> (bool, String) {
    use tokio::io::AsyncWriteExt;
    let mut child = tokio::process::Command::new(bin)
        .arg("--config")
        .arg(config)
        .args(["login", channel, account])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("run the binary");
    let mut stdin = child.stdin.take().expect("stdin");
    let input: String = answers.iter().map(|a| format!("{a}\n")).collect();
    stdin.write_all(input.as_bytes()).await.expect("answers");
    drop(stdin);
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("login returns")
        .expect("output");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

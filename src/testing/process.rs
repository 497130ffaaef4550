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

//! The state directory's exclusive lock: one daemon per state directory.

use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::StartError;

/// Creates the state directory (0700) and takes its exclusive lock; held for the daemon's life.
pub(super) fn lock_state_dir(dir: &Path) -> Result<std::fs::File, StartError> {
    let io = |source| StartError::StateDir {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(io)?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("daemon.lock"))
        .map_err(io)?;
    // SAFETY: flock on a descriptor we own; the lock is released when the file is closed.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc != 0 {
        return Err(StartError::Locked(dir.to_path_buf()));
    }
    Ok(file)
}

//! The database and its WAL/SHM files are readable by their owner only: they hold message text.

use std::fs::{OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Owner read and write, nothing for group or others.
const PRIVATE: u32 = 0o600;

/// Creates `path` 0600 before SQLite opens it (SQLite would create it 0644 under the usual umask,
/// and gives its WAL and SHM the database's mode), or tightens an existing, looser file.
pub(super) fn prepare(path: &Path) -> io::Result<()> {
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(PRIVATE)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => tighten(path),
        Err(e) => Err(e),
    }
}

/// Tightens the `-wal` and `-shm` files beside `path`, for files left by a version that made
/// them 0644 (SQLite keeps an existing file's mode).
pub(super) fn tighten_companions(path: &Path) -> io::Result<()> {
    for suffix in ["-wal", "-shm"] {
        match tighten(&companion(path, suffix)) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            other => other?,
        }
    }
    Ok(())
}

/// The file SQLite keeps beside the database at `path` (`suffix`: `-wal` or `-shm`).
pub(super) fn companion(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Sets `path` to 0600 unless it already allows no more than that.
fn tighten(path: &Path) -> io::Result<()> {
    let mode = std::fs::metadata(path)?.permissions().mode();
    if mode & 0o077 != 0 {
        std::fs::set_permissions(path, Permissions::from_mode(PRIVATE))?;
    }
    Ok(())
}

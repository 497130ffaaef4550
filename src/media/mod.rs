//! Media between the phone and the agent, kept inside the account's workspace: where a received
//! file is saved (`inbox/<YYYY-MM-DD>/<safe name>`, a stranger's in a per-sender folder), how its
//! name is made safe, what the workspace already holds against its cap, and which files an
//! answer names that may be sent back (only files inside the workspace, symlinks resolved).
//!
//! Pure file-system helpers: the pipeline (`conversation::media`) decides when they run and
//! records what they did in the store, so a crash neither loses nor duplicates a file.

pub mod inbox;
pub mod kind;
pub mod names;
pub mod outbound;

/// "900 bytes", "32 KiB", "9.5 MiB": sizes as people read them in notes.
pub fn human_size(bytes: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;
    match bytes {
        b if b < KIB => format!("{b} bytes"),
        b if b < MIB => format!("{} KiB", b / KIB),
        b => format!("{:.1} MiB", b as f64 / MIB as f64),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_read_as_people_say_them() {
        assert_eq!(super::human_size(900), "900 bytes");
        assert_eq!(super::human_size(5 * 1024 * 1024), "5.0 MiB");
    }
}

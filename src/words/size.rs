//! Sizes as people read them in notes ("900 bytes", "9.5 MiB"); the same in both languages. A
//! leaf, so the agent backends and the media inbox share it without importing each other.

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

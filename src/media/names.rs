//! File names made from what a sender wrote: never a path, never hidden, no control characters,
//! short enough for every file system, and different from the names already in the folder.

use std::collections::HashSet;
use std::path::Path;

/// The most bytes a saved name keeps (file systems allow 255; room is left for " (99)").
const MAX_NAME_BYTES: usize = 120;

/// A name safe to create inside a folder, from the sender's `untrusted` name or, without a
/// usable one, `fallback` (already safe, e.g. `image-3f2a.jpg`).
///
/// Only the last path component is kept (`../../etc/passwd` becomes `passwd`), control and
/// reserved characters become `_`, leading dots and spaces go (no hidden files), and `.`, `..`
/// or an empty result fall back.
pub fn safe_name(untrusted: Option<&str>, fallback: &str) -> String {
    let Some(raw) = untrusted else {
        return fallback.to_string();
    };
    let last = raw.rsplit(['/', '\\']).next().unwrap_or_default();
    let cleaned: String = last
        .chars()
        .map(|c| {
            if c.is_control() || matches!(c, '<' | '>' | ':' | '"' | '|' | '?' | '*') {
                '_'
            } else {
                c
            }
        })
        .collect();
    let trimmed = cleaned
        .trim_start_matches(['.', ' '])
        .trim_end_matches([' ', '.']);
    if trimmed.is_empty() {
        return fallback.to_string();
    }
    shorten(trimmed)
}

/// `name` cut to [`MAX_NAME_BYTES`] at a character boundary, keeping a short extension.
fn shorten(name: &str) -> String {
    if name.len() <= MAX_NAME_BYTES {
        return name.to_string();
    }
    let (stem, ext) = split_ext(name);
    let ext = if ext.len() <= 16 { ext } else { "" };
    let room = MAX_NAME_BYTES - ext.len();
    let mut end = room.min(stem.len());
    while !stem.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{ext}", &stem[..end])
}

/// `("report", ".pdf")`; a name without a dot (or only a leading one) has no extension.
fn split_ext(name: &str) -> (&str, &str) {
    match name.rfind('.') {
        Some(i) if i > 0 => (&name[..i], &name[i..]),
        _ => (name, ""),
    }
}

/// `name`, or `stem (2).ext`, `stem (3).ext`, ... : the first that neither exists in `dir` nor
/// is in `taken` (names other items of the same batch reserved).
pub fn unique(dir: &Path, name: &str, taken: &HashSet<String>) -> String {
    let free = |n: &str| !taken.contains(n) && std::fs::symlink_metadata(dir.join(n)).is_err();
    if free(name) {
        return name.to_string();
    }
    let (stem, ext) = split_ext(name);
    (2u32..)
        .map(|i| format!("{stem} ({i}){ext}"))
        .find(|n| free(n))
        .unwrap_or_else(|| name.to_string())
}

/// Eight hex characters that stand for `s` (FNV-1a), stable across releases: a saved name's tag,
/// so the message id itself never shows in a file name.
pub fn short_tag(s: &str) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in s.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    format!("{h:08x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_never_leaves_its_folder_nor_hides() {
        assert_eq!(safe_name(Some("../../etc/passwd"), "f"), "passwd");
        assert_eq!(safe_name(Some("..\\..\\boot.ini"), "f"), "boot.ini");
        assert_eq!(safe_name(Some(".bashrc"), "f"), "bashrc");
        assert_eq!(safe_name(Some(".."), "f"), "f");
        assert_eq!(safe_name(Some("a/"), "f"), "f");
        assert_eq!(safe_name(Some("   "), "f"), "f");
        assert_eq!(safe_name(Some("r\u{0}e\nport?.pdf"), "f"), "r_e_port_.pdf");
        assert_eq!(safe_name(None, "image-1.jpg"), "image-1.jpg");
        assert_eq!(safe_name(Some("报告.pdf"), "f"), "报告.pdf");
    }

    #[test]
    fn a_long_name_is_cut_at_a_character_and_keeps_its_extension() {
        let long = format!("{}.pdf", "文".repeat(100));
        let got = safe_name(Some(&long), "f");
        assert!(got.len() <= MAX_NAME_BYTES, "{}", got.len());
        assert!(got.ends_with(".pdf"));
    }

    #[test]
    fn collisions_get_a_number() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::write(dir.path().join("a.pdf"), b"x").expect("write");
        let mut taken = HashSet::new();
        assert_eq!(unique(dir.path(), "a.pdf", &taken), "a (2).pdf");
        taken.insert("a (2).pdf".to_string());
        assert_eq!(unique(dir.path(), "a.pdf", &taken), "a (3).pdf");
        assert_eq!(unique(dir.path(), "b", &taken), "b");
    }
}

//! The cap on what one chat message hands to the agent: a 10 MB paste reaches the model as its
//! first `max_message_bytes`, cut at a character boundary, and the sender is told in one line.

/// `text` cut to at most `max` bytes at a character boundary; `None` when it fits whole.
pub(super) fn cut(text: &str, max: usize) -> Option<&str> {
    if text.len() <= max {
        return None;
    }
    // `str::floor_char_boundary` is newer than the crate's MSRV; a char is at most 4 bytes.
    let end = (max.saturating_sub(3)..=max)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    Some(&text[..end])
}

/// The line that starts the reply to a message that was cut.
pub(super) fn note(original_bytes: usize, max: usize, lang: crate::words::Lang) -> String {
    let (original, max) = (size(original_bytes), size(max));
    crate::words::Msg::MessageCut { original, max }
        .text(lang)
        .into_owned()
}

/// "900 bytes", "32 KiB", "9.5 MiB".
fn size(bytes: usize) -> String {
    crate::media::human_size(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_at_a_char_boundary_never_past_the_cap() {
        assert_eq!(cut("hello", 5), None);
        assert_eq!(cut("hello", 4), Some("hell"));
        // "é" is two bytes: a cap in its middle keeps the whole characters before it.
        assert_eq!(cut("aéé", 4), Some("aé"));
        assert_eq!(cut("你好", 4), Some("你"));
        assert_eq!(cut("你好", 2), Some(""));
    }

    #[test]
    fn the_note_names_both_sizes() {
        assert_eq!(
            note(10 * 1024 * 1024, 32 * 1024, crate::words::Lang::En),
            "(Your message was 10.0 MiB; the agent read only its first 32 KiB.)"
        );
        assert_eq!(size(900), "900 bytes");
    }
}

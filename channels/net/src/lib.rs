//! What the channel crates share about transports, kept apart so that no channel crate depends
//! on another or on the daemon: the innermost cause of an error chain, in words people know.

pub mod qr;

use std::error::Error;

/// A transport error in the words people know: "error sending request: connection refused".
///
/// An HTTP client's own message says only "error sending request"; the innermost cause of the
/// chain says what happened. The cause is appended (first letter lowercased, OS error codes
/// left out) unless the message already says it.
pub fn transport(e: &dyn Error) -> String {
    let outer = e.to_string();
    let mut inner: &dyn Error = e;
    while let Some(next) = inner.source() {
        inner = next;
    }
    let cause = inner.to_string();
    let cause = match cause.find(" (os error ") {
        Some(i) => &cause[..i],
        None => cause.as_str(),
    };
    let mut chars = cause.chars();
    let cause = match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect::<String>(),
        None => String::new(),
    };
    if cause.is_empty() || outer.contains(&cause) {
        outer
    } else {
        format!("{outer}: {cause}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt;

    /// An error with a message and an optional cause.
    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);

    impl fmt::Display for Layer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }

    impl Error for Layer {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            self.1.as_deref().map(|l| l as &(dyn Error + 'static))
        }
    }

    #[test]
    fn the_innermost_cause_is_named_once_without_os_codes() {
        let refused = Layer(
            "error sending request",
            Some(Box::new(Layer(
                "client error (Connect)",
                Some(Box::new(Layer("Connection refused (os error 111)", None))),
            ))),
        );
        assert_eq!(
            transport(&refused),
            "error sending request: connection refused"
        );
        // Nothing underneath, or a cause the message already says: the message alone.
        assert_eq!(transport(&Layer("timed out", None)), "timed out");
        let said = Layer(
            "request failed: connection reset",
            Some(Box::new(Layer("Connection reset", None))),
        );
        assert_eq!(transport(&said), "request failed: connection reset");
    }
}

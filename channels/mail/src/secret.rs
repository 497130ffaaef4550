//! The password newtype: it never prints its contents.

use std::fmt;

/// A password or app token. Debug and Display print `[redacted]`, so a settings struct that
/// derives Debug can be logged without leaking it.
#[derive(Clone, PartialEq, Eq)]
pub struct Password(String);

impl Password {
    /// Wraps a secret string.
    pub fn new(secret: impl Into<String>) -> Self {
        Password(secret.into())
    }

    /// The secret itself, for the one place that sends it to a server.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<String> for Password {
    fn from(secret: String) -> Self {
        Password(secret)
    }
}

impl From<&str> for Password {
    fn from(secret: &str) -> Self {
        Password(secret.to_owned())
    }
}

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_redact() {
        let p = Password::new("hunter2");
        assert_eq!(format!("{p:?}"), "[redacted]");
        assert_eq!(format!("{p}"), "[redacted]");
        assert_eq!(p.expose(), "hunter2");
        #[derive(Debug)]
        #[allow(dead_code)]
        struct Holder {
            password: Password,
        }
        let shown = format!("{:?}", Holder { password: p });
        assert!(!shown.contains("hunter2"), "{shown}");
    }
}

//! A secret value (a token, a key, a password) that never prints itself and is wiped from memory
//! when dropped: a leaf, so every layer, the configuration included, can hold one without
//! importing the credential store. The wiping is the `secrecy` crate's (zeroize on drop).

use std::fmt;

use secrecy::{ExposeSecret, SecretString};

/// A secret value; prints `[redacted]` in Debug and Display, zeroized when dropped.
#[derive(Clone)]
pub struct Secret(SecretString);

impl Secret {
    /// Wraps a secret.
    pub fn new(s: impl Into<String>) -> Self {
        Secret(SecretString::from(s.into()))
    }

    /// The secret itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }
}

impl PartialEq for Secret {
    fn eq(&self, other: &Self) -> bool {
        self.expose() == other.expose()
    }
}

impl Eq for Secret {}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Compiles only when the held value wipes itself on drop (`secrecy`'s box does; a plain
    /// `String`, as this type held before, does not).
    fn wiped_on_drop<T: zeroize::ZeroizeOnDrop + ?Sized>(_: &T) {}

    #[test]
    fn a_secret_is_redacted_compared_by_value_and_wiped_on_drop() {
        let s = Secret::new("k-123");
        wiped_on_drop(&s.0);
        assert_eq!(s.expose(), "k-123");
        assert_eq!(format!("{s} {s:?}"), "[redacted] [redacted]");
        assert_eq!(s.clone(), Secret::new("k-123"));
        assert_ne!(s, Secret::new("k-124"));
    }
}

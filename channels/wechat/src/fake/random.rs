//! Random ids for the fake's tokens, QR codes and CDN parameters (a leaf: the parts of the fake
//! that hand out ids share it without importing each other).

/// `n` random bytes as lowercase hex.
pub(crate) fn hex(n: usize) -> String {
    (0..n)
        .map(|_| format!("{:02x}", rand::random::<u8>()))
        .collect()
}

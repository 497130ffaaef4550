//! Random kill points for the platforms' kill -9 tests: a seeded generator whose seed each test
//! prints, and `SCV_KILL9_SEED` to replay one.

/// A small deterministic generator (xorshift), seeded per run and printed.
pub struct Rng(pub u64);

impl Rng {
    /// A number below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// `SCV_KILL9_SEED` when set, else the clock; never 0 (xorshift would stay at 0).
pub fn seed() -> u64 {
    std::env::var("SCV_KILL9_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        })
        .max(1)
}

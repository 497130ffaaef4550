//! A fake iLink server for tests (in progress).

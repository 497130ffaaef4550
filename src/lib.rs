//! scv-bridge

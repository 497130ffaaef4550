//! The web console (`src/console/`): its guard over real HTTP, and the pages in a real
//! headless Chromium, against a daemon wired as `scv-bridge run` wires it.

mod agents;
mod agents_browser;
mod approval;
mod browser;
mod chat;
mod driver;
mod feishu_scan;
mod fix;
mod local;
mod security;
mod setup;
mod support;
mod walk;

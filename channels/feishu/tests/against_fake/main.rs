//! The real client against the fake Feishu server, over real loopback sockets: one test binary,
//! each file below one part of the client.

mod common;
mod failures;
mod long_connection;
mod media;
mod registration;
mod rest;
mod webhook_server;

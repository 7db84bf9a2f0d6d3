//! The connection group: the session (PING, HELLO, AUTH, SELECT…) and CLIENT.
pub mod client;
pub mod session;
pub mod tracking;

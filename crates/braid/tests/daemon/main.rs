//! The whole daemon run in-process over loopback UDP with in-memory TUN
//! devices (no root): a client and a server end to end (`loopback`), a
//! community relay between them (`relay`), and handshake failures as the
//! logs and status report them (`handshake`). One test binary: each was
//! its own once, and each compiled `daemon_util` and linked the daemon
//! again. Run one group with `cargo test -p braid --test daemon relay::`.

mod daemon_util;

mod handshake;
mod loopback;
mod relay;

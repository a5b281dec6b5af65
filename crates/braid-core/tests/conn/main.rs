//! The shipped connection (`braid_core::conn`) driven through its
//! in-memory client/server pair (`conn_util::Pair`), quinn-proto's style of
//! test. One test binary for all of them: each of these modules was its
//! own binary once, and every binary compiled and linked `conn_util` and
//! the crate's dependencies again, most of a clean CI build's test-binary
//! time. Run one group with `cargo test -p braid-core --test conn
//! conn_lossy::`.

mod conn_util;

mod conn_compress;
mod conn_cookies;
mod conn_fast_paths;
mod conn_fec;
mod conn_lossy;
mod conn_probes;
mod conn_props;
mod conn_redundant;
mod conn_rekey;
mod conn_server_view;
mod conn_sim;
mod conn_startup;
mod conn_version;

//! Unit tests of the TCP model, one file per part: hand-fed ACK sequences
//! for the sender's state machine (`sender`, `recovery`), the receiver's
//! ACKs (`receiver`), and a two-link loop for end-to-end behaviour
//! (`two_link`).

mod receiver;
mod recovery;
mod reorder;
mod sender;
mod two_link;

use super::*;
use braid_core::time::{tx_time, Duration, Instant};
use proptest::prelude::*;

pub(super) fn ms(x: u64) -> Instant {
    Instant::from_millis(x)
}

pub(super) fn ack(a: u64) -> Ack {
    Ack::cumulative(0, a, 40)
}

pub(super) fn seqs(out: &[Segment]) -> Vec<u64> {
    out.iter().map(|s| s.seq).collect()
}

pub(super) fn cfg(init_cwnd: u32, max_burst: u32) -> TcpConfig {
    TcpConfig {
        init_cwnd_pkts: init_cwnd,
        max_burst,
        ..TcpConfig::default()
    }
}

pub(super) fn seg(seq: u64) -> Segment {
    Segment {
        flow: 0,
        seq,
        payload_bytes: 1460,
        wire_bytes: 1500,
        retransmit: false,
        ect: false,
        ce: false,
        cwr: false,
        tsval: 0,
    }
}

pub(super) fn sack_ack(a: u64, blocks: &[(u64, u64)]) -> Ack {
    let mut k = Ack::cumulative(0, a, 40);
    k.sack[..blocks.len()].copy_from_slice(blocks);
    k.n_sack = blocks.len() as u8;
    k
}

//! The lab's `braid-send` mode in simulation: `braid send`'s MPLOT sender
//! and `braid recv`'s receiver (the same `braid_core::mplot` code, with
//! [`SenderConfig::for_files`] and [`ReceiverConfig::for_files`]) move a
//! file over the paths of a lab file, modelled by `braid-net` as the lab's
//! emulator runs them. Coding is virtual (sizes only; a block decodes when
//! any `F` of its packets arrive), so what differs from the lab is the
//! hosts: no handshake, no socket buffers, no scheduling delay.
//!
//! Measured as the lab bench measures the mode: the file is `duration_s`
//! seconds at the sum of the path rates, and the goodput is its size over
//! the time until the receiver has delivered all of it (slow start
//! included).

use braid_core::mplot::{
    wire::ACK_LEN, Coding, DataHeader, DataView, Receiver, ReceiverConfig, Sender, SenderConfig,
    FILE_OVERHEAD,
};
use braid_lab::config::{Direction, LabConfig};
use braid_net::Verdict;

use super::cross::CrossFlow;
use super::world::{link_drops, links, secs, Outcome};
use super::LabRunOptions;
use crate::event::EventQueue;
use crate::tcp::TcpSenderStats;

/// IPv4 and UDP headers of every datagram.
const IP_UDP: u64 = 28;

/// How much file the sender is handed ahead of what it has sent, as
/// `braid send` reads the file in pieces.
const READ_AHEAD: u64 = 1 << 20;

enum Ev {
    Data(DataHeader, bool),
    Ack(braid_core::mplot::Ack),
}

/// `braid send` of a file of `opts.duration_s` seconds at the sum of the
/// uplink rates over every path of `cfg`.
pub fn run_send(cfg: &LabConfig, opts: &LabRunOptions) -> Outcome {
    let wall = std::time::Instant::now();
    let paths = cfg.paths.len();
    let mut up = links(cfg, Direction::Up);
    let mut down = links(cfg, Direction::Down);
    let file = (cfg.sum_rate_mbit(Direction::Up) * 1e6 / 8.0 * opts.duration_s) as u64;
    let mut sc = SenderConfig::for_files(paths, FILE_OVERHEAD);
    sc.coding = Coding::Virtual;
    let mut tx = Sender::new(sc).expect("braid send's configuration is valid");
    let mut rc = ReceiverConfig::for_files(paths, opts.seed);
    rc.coding = Coding::Virtual;
    let mut rx = Receiver::new(rc);
    let mut q: EventQueue<Ev> = EventQueue::default();
    let mut written = 0u64;
    let mut delivered = 0u64;
    let mut packets = 0u64;
    let mut arrived = 0u64;
    let (mut cross, t0) = CrossFlow::with_head_start(opts, &mut up, &mut down);
    let mut now = t0;
    let up0: Vec<u64> = up.iter().map(|l| l.stats.delivered_bytes).collect();
    // Give up at four times the file's time at the sum of the rates.
    let limit = t0 + secs(opts.duration_s * 4.0);
    let from = opts.from_s.map(|f| t0 + secs(f));
    let mut at_from: Option<u64> = None;
    let mut path_at_from: Option<Vec<u64>> = None;
    let mut done_at = None;
    let omit = t0 + secs(opts.omit_s);
    let mut omitted = false;
    loop {
        // Feed the file, then send what the windows and pacers allow.
        while written < file && tx.buffered() < READ_AHEAD {
            let n = (file - written).min(READ_AHEAD);
            tx.write_virtual(n)
                .expect("virtual writes to a virtual sender");
            written += n;
            if written == file {
                tx.finish();
            }
        }
        while let Ok(Some(t)) = tx.poll_transmit(now) {
            packets += 1;
            // The path sockets send ECT(0).
            if let Verdict::Deliver { at, ce } = up[t.path].offer(now, t.size as u64 + IP_UDP, true)
            {
                q.push(at, Ev::Data(t.header, ce));
            }
        }
        let next = q
            .peek_time()
            .into_iter()
            .chain(tx.poll_timeout())
            .chain(cross.as_ref().and_then(CrossFlow::poll_timeout))
            .min();
        let Some(t) = next else { break };
        if t > omit && !omitted {
            omitted = true;
            if let Some(c) = cross.as_mut() {
                c.mark_omit(omit);
            }
        }
        if from.is_some_and(|f| t > f) && at_from.is_none() {
            at_from = Some(delivered);
            path_at_from = Some(up.iter().map(|l| l.stats.delivered_bytes).collect());
        }
        if t > limit {
            break;
        }
        now = now.max(t);
        while q.peek_time().is_some_and(|t| t <= now) {
            let Some((_, e)) = q.pop() else { break };
            match e {
                Ev::Data(header, ce) => {
                    arrived += 1;
                    let view = DataView { header, shard: &[] };
                    let _ = rx.handle_data(now, ce, &view);
                    while let Some((p, ack)) = rx.poll_ack() {
                        packets += 1;
                        let bytes = (ACK_LEN + FILE_OVERHEAD) as u64 + IP_UDP;
                        if let Some(at) = down[p].offer(now, bytes, false).delivered_at() {
                            q.push(at, Ev::Ack(ack));
                        }
                    }
                    while let Some(c) = rx.poll_read() {
                        delivered += c.len;
                    }
                    if delivered >= file && done_at.is_none() {
                        done_at = Some(now);
                    }
                }
                Ev::Ack(ack) => tx.handle_ack(now, &ack),
            }
        }
        if done_at.is_some() {
            break;
        }
        if let Some(c) = cross.as_mut() {
            c.advance(now, &mut up, &mut down);
        }
        if tx.poll_timeout().is_some_and(|t| t <= now) {
            tx.handle_timeout(now);
        }
    }
    let seconds = done_at.unwrap_or(now).saturating_since(t0).as_secs_f64();
    let path_bytes: Vec<u64> = up
        .iter()
        .zip(&up0)
        .map(|(l, b)| l.stats.delivered_bytes - b)
        .collect();
    let st = &tx.stats;
    Outcome {
        bytes: delivered,
        seconds,
        from: opts.from_s.map(|f| {
            (
                delivered - at_from.unwrap_or(delivered),
                (seconds - f).max(0.0),
            )
        }),
        path_from_bytes: path_at_from
            .map(|p0| path_bytes.iter().zip(p0).map(|(b, b0)| b - b0).collect()),
        path_bytes,
        transfer_seconds: seconds,
        tcp: TcpSenderStats {
            segments_sent: st.packets_sent,
            timeouts: st.timeouts,
            ..TcpSenderStats::default()
        },
        segments_sent: st.packets_sent,
        segments_arrived: arrived,
        segments_outstanding: 0,
        link_drops: link_drops(&up),
        packets,
        wall_seconds: wall.elapsed().as_secs_f64(),
        sim_seconds: now.as_secs_f64(),
        cross_tcp_mbps: cross.map(|c| c.goodput_mbps(done_at.unwrap_or(now))),
    }
}

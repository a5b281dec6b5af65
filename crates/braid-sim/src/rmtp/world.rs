//! One run of an R-MTP experiment: a transfer of `frames` frames over one
//! or more links, timed to the moment the receiver holds the last byte.
//!
//! A link is one `braid-net` bottleneck per direction: the forward
//! direction a drop-tail queue of `queue_frames` frames, the link's rate
//! and one-way delay, then the link's i.i.d. loss *after* the queue (a
//! lossy wireless hop: a lost frame used its air time); the reverse
//! direction the same rate and delay, a large queue and no loss (it
//! carries only acknowledgements). The paper states neither delays nor
//! loss model (`SPECS.md` §4.2); the scenario files give braid's reading.
//!
//! R-MTP runs the shipped `braid_core::rmtp` sender and receiver (sizes
//! only), each frame `frame_bytes` of payload plus its 24-byte header and
//! 28 bytes of UDP/IP; every acknowledgement returns on the reverse of the
//! frame's own link. NewReno is the simulator's ns-2 model (`crate::tcp`)
//! with `frame_bytes` segments and 40-byte headers, a 50-packet window and
//! a 200 ms minimum RTO, as a kernel TCP.

use braid_core::rmtp::{self, DataView, Receiver, ReceiverConfig, Sender, SenderConfig};
use braid_core::time::{Duration, Instant};
use braid_net::{Link, LinkParams};

use super::scenario::{RmtpLink, RmtpScheme};
use crate::event::EventQueue;
use crate::tcp::{Ack as TcpAck, Segment, TcpConfig, TcpReceiver, TcpSender};

/// UDP and IP header bytes under every R-MTP frame.
pub const UDP_IP_BYTES: usize = 28;
/// Simulated time after which a run is abandoned.
pub const LIMIT: Duration = Duration::from_secs(7200);

/// Everything one run needs.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSpec {
    pub scheme: RmtpScheme,
    /// The links the run uses, in order (already chosen for the scheme).
    pub links: Vec<RmtpLink>,
    pub frames: u64,
    pub frame_bytes: usize,
    pub seed: u64,
}

/// What one run measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunOutput {
    /// Seconds from the first frame to the receiver holding the last byte
    /// ([`LIMIT`] if it never did).
    pub completion_s: f64,
    pub finished: bool,
    /// Stream kbit/s over the completion time.
    pub goodput_kbps: f64,
    /// Data frames (or segments) sent, first transmissions included.
    pub sent: u64,
    pub retransmits: u64,
    /// R-MTP: congestion cuts over all channels.
    pub rate_cuts: u64,
}

fn links(spec: &RunSpec, seed: u64) -> (Vec<Link>, Vec<Link>, Vec<Link>) {
    let wire = (spec.frame_bytes + rmtp::wire::DATA_HEADER_LEN + UDP_IP_BYTES) as u64;
    let mut fwd = Vec::new();
    let mut ch = Vec::new();
    let mut rev = Vec::new();
    for (i, l) in spec.links.iter().enumerate() {
        let i = i as u64;
        let f = LinkParams::new(l.rate_kbit / 1e3, l.delay_ms, l.queue_frames * wire);
        fwd.push(Link::new(&f, seed * 1000 + i, Instant::ZERO));
        let mut c = LinkParams::new(1e5, 0.0, u64::MAX);
        c.loss = l.loss;
        ch.push(Link::new(&c, seed * 1000 + 100 + i, Instant::ZERO));
        let r = LinkParams::new(l.rate_kbit / 1e3, l.delay_ms, 1 << 24);
        rev.push(Link::new(&r, seed * 1000 + 200 + i, Instant::ZERO));
    }
    (fwd, ch, rev)
}

fn offer(fwd: &mut Link, ch: &mut Link, now: Instant, bytes: u64) -> Option<Instant> {
    let at = fwd.offer(now, bytes, false).delivered_at()?;
    ch.offer(at, bytes, false).delivered_at()
}

/// Runs one transfer.
pub fn run(spec: &RunSpec) -> RunOutput {
    match spec.scheme {
        RmtpScheme::NewReno | RmtpScheme::NewRenoSlow => run_newreno(spec),
        _ => run_rmtp(spec),
    }
}

enum Ev {
    Data(rmtp::DataHeader),
    Ack(Box<rmtp::Ack>),
    Timer,
}

fn run_rmtp(spec: &RunSpec) -> RunOutput {
    let (mut fwd, mut ch, mut rev) = links(spec, spec.seed);
    let mut sc = SenderConfig::new(spec.links.len());
    sc.frame_payload = spec.frame_bytes;
    sc.virtual_payload = true;
    let mut sender = Sender::new(sc).expect("valid sender config");
    let mut receiver = Receiver::new(ReceiverConfig::new());
    let total = spec.frames * spec.frame_bytes as u64;
    sender.write_virtual(total).expect("virtual sender");
    sender.finish();
    let mut q: EventQueue<Ev> = EventQueue::default();
    let mut timer: Option<Instant> = None;
    let mut got = 0u64;
    let mut done_at = None;
    let mut now = Instant::ZERO;
    let end = Instant::ZERO + LIMIT;
    loop {
        while let Some(t) = sender.poll_transmit(now) {
            let bytes =
                (usize::from(t.header.len) + rmtp::wire::DATA_HEADER_LEN + UDP_IP_BYTES) as u64;
            if let Some(at) = offer(&mut fwd[t.channel], &mut ch[t.channel], now, bytes) {
                q.push(at, Ev::Data(t.header));
            }
        }
        if let Some(t) = sender.poll_timeout() {
            if timer != Some(t) {
                timer = Some(t.max(now));
                q.push(t.max(now), Ev::Timer);
            }
        }
        let Some((at, ev)) = q.pop() else { break };
        if at > end {
            break;
        }
        now = at;
        match ev {
            Ev::Timer => {
                if timer == Some(now) {
                    timer = None;
                    sender.handle_timeout(now);
                }
            }
            Ev::Ack(a) => sender.handle_ack(now, &a),
            Ev::Data(h) => {
                let v = DataView {
                    header: h,
                    payload: &[],
                };
                let _ = receiver.handle_data(now, &v);
                while let Some(c) = receiver.poll_read() {
                    got += c.len as u64;
                }
                if got >= total && done_at.is_none() {
                    done_at = Some(now);
                    break;
                }
                while let Some(a) = receiver.poll_ack() {
                    let c = usize::from(a.channel).min(rev.len() - 1);
                    let bytes = (a.wire_len() + UDP_IP_BYTES) as u64;
                    if let Some(at) = rev[c].offer(now, bytes, false).delivered_at() {
                        q.push(at, Ev::Ack(Box::new(a)));
                    }
                }
            }
        }
    }
    let st = sender.stats();
    let cuts = (0..spec.links.len())
        .filter_map(|i| sender.channel_controller(i))
        .map(|r| r.cuts)
        .sum();
    finish(done_at, total, st.frames_sent, st.retransmits, cuts)
}

fn finish(
    done_at: Option<Instant>,
    total: u64,
    sent: u64,
    retransmits: u64,
    rate_cuts: u64,
) -> RunOutput {
    let t = done_at.map_or(LIMIT.as_secs_f64(), Instant::as_secs_f64);
    RunOutput {
        completion_s: t,
        finished: done_at.is_some(),
        goodput_kbps: total as f64 * 8.0 / t.max(1e-9) / 1e3,
        sent,
        retransmits,
        rate_cuts,
    }
}

enum TcpEv {
    Seg(Segment),
    Ack(TcpAck),
    Timer,
}

fn run_newreno(spec: &RunSpec) -> RunOutput {
    let (mut fwd, mut ch, mut rev) = links(spec, spec.seed);
    let cfg = TcpConfig {
        mss_bytes: spec.frame_bytes as u32,
        ..TcpConfig::default()
    };
    let mut s = TcpSender::new(cfg.clone(), 0, Some(spec.frames));
    let mut r = TcpReceiver::new(&cfg, 0);
    let mut q: EventQueue<TcpEv> = EventQueue::default();
    let mut out = Vec::new();
    let mut timer: Option<Instant> = None;
    let end = Instant::ZERO + LIMIT;
    let mut done_at = None;
    s.start(Instant::ZERO, &mut out);
    let mut now = Instant::ZERO;
    loop {
        for seg in out.drain(..) {
            if let Some(at) = offer(&mut fwd[0], &mut ch[0], now, u64::from(seg.wire_bytes)) {
                q.push(at, TcpEv::Seg(seg));
            }
        }
        if let Some(t) = s.poll_timeout() {
            if timer != Some(t) {
                timer = Some(t.max(now));
                q.push(t.max(now), TcpEv::Timer);
            }
        }
        let Some((at, ev)) = q.pop() else { break };
        if at > end {
            break;
        }
        now = at;
        match ev {
            TcpEv::Timer => {
                if timer == Some(now) {
                    timer = None;
                    s.handle_timeout(now, &mut out);
                }
            }
            TcpEv::Ack(a) => s.on_ack(now, &a, &mut out),
            TcpEv::Seg(seg) => {
                if let Some(a) = r.on_segment(now, &seg) {
                    if r.delivered_packets() >= spec.frames {
                        done_at = Some(now);
                        break;
                    }
                    if let Some(at) = rev[0]
                        .offer(now, u64::from(a.wire_bytes), false)
                        .delivered_at()
                    {
                        q.push(at, TcpEv::Ack(a));
                    }
                }
            }
        }
    }
    let st = s.stats();
    finish(
        done_at,
        spec.frames * spec.frame_bytes as u64,
        st.segments_sent,
        st.retransmits,
        0,
    )
}

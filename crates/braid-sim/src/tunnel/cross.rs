//! A competing TCP flow on one path (the lab bench's `--cross-tcp`): a
//! kernel-like CUBIC connection, client to proxy, that shares the path's
//! queue with whatever the measured mode sends there. It answers what a
//! mode leaves other traffic on a shared bottleneck, and what a mode
//! does when a path it uses holds a queue it did not build (a far path's
//! deep buffer kept full by someone else).
//!
//! The flow owns its packets' events; the world that runs it lends it
//! the links at each step, so both flows meet in the same queues in
//! time order.

use braid_core::time::Instant;
use braid_net::{Link, Verdict};

use super::world::secs;
use super::{lab_tcp, LabRunOptions};
use crate::event::EventQueue;
use crate::tcp::{Ack, Segment, TcpConfig, TcpReceiver, TcpSender};

/// The flow number of the competing connection (the measured flows use
/// 0 and up, one per path at most).
const CROSS_FLOW: u32 = 0xc055;

enum CrossEvent {
    Seg(Segment),
    Ack(Ack),
}

/// A TCP flow directly over path `path`, started by [`CrossFlow::start`].
pub(crate) struct CrossFlow {
    path: usize,
    tx: TcpSender,
    rx: TcpReceiver,
    q: EventQueue<CrossEvent>,
    segs: Vec<Segment>,
    started: Option<Instant>,
    /// When the measurement's omitted start-up ended, and the in-order
    /// payload delivered by then.
    at_omit: Option<(Instant, u64)>,
}

impl CrossFlow {
    /// The competing flow `opts` asks for (`LabRunOptions::cross_tcp`), if
    /// any: the lab's kernel TCP, full-size packets straight on the path.
    pub fn for_run(opts: &LabRunOptions) -> Option<Self> {
        opts.cross_tcp
            .map(|i| CrossFlow::new(i, lab_tcp(1500, opts)))
    }

    /// For a run that starts its measured transfer itself: the competing
    /// flow of `opts`, if any, started at `Instant::ZERO` and run alone on
    /// the links for its head start (`LabRunOptions::cross_lead_s`),
    /// before any other traffic is offered to them. Returns it and when
    /// the measured transfer starts: after the head start, and no earlier
    /// than `LabRunOptions::idle_s`, as a braid mode's transfer starts
    /// after its tunnel's idle time. A path that changes during the run
    /// (a lab file's `trace`) then changes at the same point of every
    /// mode's transfer: with `--idle 3` the direct modes used to meet a
    /// rate fall 3 s later than the tunnel, and the best path alone got 3
    /// s more at the old rate to compare with.
    pub fn with_head_start(
        opts: &LabRunOptions,
        up: &mut [Link],
        down: &mut [Link],
    ) -> (Option<Self>, Instant) {
        let until = Instant::ZERO + secs(opts.cross_lead_s.max(opts.idle_s));
        let Some(mut c) = Self::for_run(opts) else {
            return (None, until);
        };
        c.start(Instant::ZERO, up);
        while let Some(t) = c.poll_timeout().filter(|&t| t <= until) {
            c.advance(t, up, down);
        }
        (Some(c), until)
    }

    fn new(path: usize, tcp: TcpConfig) -> Self {
        CrossFlow {
            path,
            tx: TcpSender::new(tcp.clone(), CROSS_FLOW, None),
            rx: TcpReceiver::new(&tcp, CROSS_FLOW),
            q: EventQueue::default(),
            segs: Vec::new(),
            started: None,
            at_omit: None,
        }
    }

    /// Starts sending at `now`, with the measured flow (as the lab starts
    /// both iperf3 clients together).
    pub fn start(&mut self, now: Instant, up: &mut [Link]) {
        if self.started.is_none() {
            self.started = Some(now);
            self.tx.start(now, &mut self.segs);
            self.send(now, up);
        }
    }

    fn send(&mut self, now: Instant, up: &mut [Link]) {
        for mut s in self.segs.drain(..) {
            if let Verdict::Deliver { at, ce } =
                up[self.path].offer(now, u64::from(s.wire_bytes), s.ect)
            {
                s.ce |= ce;
                self.q.push(at, CrossEvent::Seg(s));
            }
        }
    }

    fn send_ack(&mut self, now: Instant, a: Ack, down: &mut [Link]) {
        if let Some(at) = down[self.path]
            .offer(now, u64::from(a.wire_bytes), false)
            .delivered_at()
        {
            self.q.push(at, CrossEvent::Ack(a));
        }
    }

    /// The next instant the flow has something to do.
    pub fn poll_timeout(&self) -> Option<Instant> {
        [
            self.q.peek_time(),
            self.tx.poll_timeout(),
            self.rx.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Handles every arrival and timer due at `now`.
    pub fn advance(&mut self, now: Instant, up: &mut [Link], down: &mut [Link]) {
        if self.started.is_none() {
            return;
        }
        while self.q.peek_time().is_some_and(|t| t <= now) {
            let Some((_, e)) = self.q.pop() else { break };
            match e {
                CrossEvent::Seg(s) => {
                    if let Some(a) = self.rx.on_segment(now, &s) {
                        self.send_ack(now, a, down);
                    }
                }
                CrossEvent::Ack(a) => {
                    self.tx.on_ack(now, &a, &mut self.segs);
                    self.send(now, up);
                }
            }
        }
        if self.tx.poll_timeout().is_some_and(|t| t <= now) {
            self.tx.handle_timeout(now, &mut self.segs);
            self.send(now, up);
        }
        if self.rx.poll_timeout().is_some_and(|t| t <= now) {
            if let Some(a) = self.rx.handle_timeout(now) {
                self.send_ack(now, a, down);
            }
        }
    }

    /// Marks the end of the measurement's omitted start-up, `now`.
    pub fn mark_omit(&mut self, now: Instant) {
        self.at_omit = Some((now, self.rx.delivered_bytes()));
    }

    /// Goodput, Mbit/s, from the mark ([`CrossFlow::mark_omit`]; the
    /// flow's start without one) until `now`: what the flow got during
    /// the measured mode's interval.
    pub fn goodput_mbps(&self, now: Instant) -> f64 {
        let Some((from, b0)) = self.at_omit.or(self.started.map(|s| (s, 0))) else {
            return 0.0;
        };
        let secs = now.saturating_since(from).as_secs_f64();
        let bytes = self.rx.delivered_bytes() - b0;
        bytes as f64 * 8.0 / secs.max(1e-9) / 1e6
    }
}

//! What PRISM's experiments add to a run: the reverse-path controller's
//! output (the ACKs it releases and the losses it finds), on/off
//! background sources (Fig 12) and community members joining and leaving
//! (Fig 8).

use braid_core::path::PathId;
use braid_core::rpc::RpcEvent;
use braid_core::time::{Duration, Instant};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{Ev, World};
use crate::packet::{Body, Dst, Packet, Route};
use crate::tcp::Nack;

/// Class of background traffic at the fair queues, one per source.
const ONOFF_CLASS_BASE: u32 = 0x4000_0000;

/// One UDP on/off source (PRISM Section 8.3.2). The process of
/// `braid_net::cross::ParetoOnOff`, kept here because each source is a
/// class of its own in the base station's fair queue (`cross` shares a
/// `braid_net::Link`'s FIFO); it starts with an off period and draws `U`
/// in `[ε, 1)`, as the figures in README were measured.
pub(super) struct OnOff {
    pub route: Route,
    pub rng: ChaCha8Rng,
    pub gap: Duration,
    pub len: u32,
    pub on_mean_s: f64,
    pub shape: f64,
    pub off: Duration,
    /// End of the current on-period; `None` while off.
    pub on_until: Option<Instant>,
}

impl OnOff {
    /// A Pareto on-time of mean `on_mean_s` and shape `shape` (> 1):
    /// scale `x_m = mean (a − 1) / a`, `x = x_m / U^(1/a)`.
    fn draw_on(&mut self) -> Duration {
        let a = self.shape;
        let xm = self.on_mean_s * (a - 1.0) / a;
        let u: f64 = self.rng.gen_range(f64::EPSILON..1.0);
        // Capped so one draw cannot exceed any run.
        Duration::from_secs_f64((xm / u.powf(1.0 / a)).min(3600.0))
    }
}

impl World {
    /// Forwards what the controller released to the server, with PRISM's
    /// NACK option where it attached loss information, and hands the losses
    /// it found to the scheduler (ADAS halves the link's weight).
    pub(super) fn rpc_output(&mut self, now: Instant) {
        let Some(b) = self.braid.as_mut() else { return };
        let Some(rpc) = b.rpc.as_mut() else { return };
        while let Some(ev) = rpc.poll_event() {
            if let RpcEvent::Lost { link, .. } = ev {
                b.sender.report_loss(link);
            }
        }
        let route = b.to_src;
        let mut out = Vec::new();
        while let Some(r) = rpc.poll_release() {
            let mut ack = r.inner;
            ack.ack = r.ack;
            if !r.original {
                ack.n_sack = 0;
            }
            if let Some(info) = r.loss {
                let mut n = Nack::NONE;
                for (k, &s) in info.seqs().iter().take(n.lost.len()).enumerate() {
                    n.lost[k] = s;
                    n.n = k as u8 + 1;
                }
                n.p_ppm = (info.p.clamp(0.0, 1.0) * 1e6).round() as u32;
                ack.nack = n;
            }
            out.push(ack);
        }
        for ack in out {
            let len = ack.wire_bytes;
            self.inject(
                now,
                Packet {
                    body: Body::Ack(ack),
                    len,
                    class: 0,
                    route,
                    hop: 0,
                    tag: 0,
                },
            );
        }
    }

    /// On/off source `k`: one packet per `gap` while on, then `off`.
    pub(super) fn onoff_tick(&mut self, now: Instant, k: u16) {
        let Some(src) = self.onoff.get_mut(k as usize) else {
            return;
        };
        match src.on_until {
            Some(u) if now < u => {}
            Some(_) => {
                src.on_until = None;
                let off = src.off;
                self.q.push(now + off, Ev::OnOff(k));
                return;
            }
            None => {
                let u = now + src.draw_on();
                src.on_until = Some(u);
            }
        }
        let (route, len, gap) = (src.route, src.len, src.gap);
        self.inject(
            now,
            Packet {
                body: Body::Filler,
                len,
                class: ONOFF_CLASS_BASE + u32::from(k),
                route,
                hop: 0,
                tag: u8::MAX,
            },
        );
        self.q.push(now + gap, Ev::OnOff(k));
    }

    /// A community member joins or leaves: the path becomes (un)usable for
    /// the scheduler and its rate enters (leaves) PRISM's `p`.
    pub(super) fn path_active(&mut self, _now: Instant, path: u8, up: bool) {
        let Some(b) = self.braid.as_mut() else { return };
        b.sender.set_usable(PathId(path), up);
        let rate = self.path_rates_bps.get(path as usize).copied();
        if let Some(r) = b.rpc.as_mut() {
            r.set_link_rate(PathId(path), if up { rate } else { None });
        }
    }

    /// A route for background traffic onto the bottleneck `l_w`.
    pub(super) fn onoff_route(l_w: u16) -> Route {
        Route::new(&[l_w], Dst::Drop)
    }
}

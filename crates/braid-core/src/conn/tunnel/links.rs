//! The tunnel's paths and their liveness: links added, removed, brought
//! up by what arrives on them and taken down by silence or by the
//! caller; keepalives and path names.

use std::net::SocketAddr;

use super::{path_name, Control, Event, Keepalive, Output, Outputs, PathLink, Role, Tunnel};
use crate::path::{PathId, PathParams, MAX_PATHS};
use crate::time::Instant;

/// Why a path was taken out of use ([`Tunnel::path_down`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum DownCause {
    /// Nothing was heard on it for its silence limit: it may be an outage
    /// that is already over, which the server checks against what it
    /// hears (`Tunnel::peer_path_silent`).
    Silent,
    /// Anything else: the caller knows it cannot send (its interface is
    /// gone), or, on the server, the client said so. Only the client's
    /// cause goes on the wire.
    Failed,
}

impl Tunnel {
    /// The largest smoothed RTT among the paths up (zero before any
    /// sample): how long a round trip may take now.
    pub(crate) fn max_srtt(&self) -> crate::time::Duration {
        self.links
            .iter()
            .filter(|l| l.up)
            .filter_map(|l| self.sender.path(l.id))
            .filter(|p| p.rtt.has_samples())
            .map(|p| p.rtt.srtt())
            .max()
            .unwrap_or(crate::time::Duration::ZERO)
    }

    /// Every path is down (and there is at least one).
    pub(crate) fn all_down(&self) -> bool {
        !self.links.is_empty() && self.links.iter().all(|l| !l.up)
    }

    pub(crate) fn has_link(&self, id: PathId) -> bool {
        self.links.iter().any(|l| l.id == id)
    }

    pub(crate) fn link_remotes(&self) -> impl Iterator<Item = (PathId, SocketAddr)> + '_ {
        self.links
            .iter()
            .filter_map(|l| l.remote.map(|r| (l.id, r)))
    }

    /// Client: a configured path, down until something arrives on it.
    pub(crate) fn add_link(&mut self, id: PathId, remote: SocketAddr) {
        debug_assert!((id.0 as usize) < MAX_PATHS && !self.has_link(id));
        self.links.push(PathLink::new(id, Some(remote)));
        self.links.sort_by_key(|l| l.id);
        self.sender.add_path(id, PathParams::default());
        self.sender.set_usable(id, false);
        self.sync_hold_floor();
    }

    pub(crate) fn remove_link(&mut self, now: Instant, id: PathId) {
        self.links.retain(|l| l.id != id);
        self.sender.remove_path(now, id);
        self.receiver.remove_path(id);
        self.sync_hold_floor();
    }

    pub(super) fn link_mut(&mut self, id: PathId) -> Option<&mut PathLink> {
        self.links.iter_mut().find(|l| l.id == id)
    }

    /// A handshake datagram of `len` bytes went out on path `id` (or, on
    /// the server, to the path whose peer address is `dest`): counted in
    /// the path's TX columns like everything else it sends.
    pub(crate) fn count_handshake_tx(&mut self, id: Option<PathId>, dest: SocketAddr, len: usize) {
        let link = match id {
            Some(id) => self.links.iter_mut().find(|l| l.id == id),
            None => self.links.iter_mut().find(|l| l.remote == Some(dest)),
        };
        if let Some(l) = link {
            l.on_tx(len);
        }
    }

    /// Something authenticated of `len` bytes arrived on path `id` (client:
    /// the handshake response). Brings the path up if it was down.
    pub(crate) fn mark_rx(&mut self, now: Instant, id: PathId, len: usize, out: &mut Outputs) {
        self.last_rx = Some(self.last_rx.map_or(now, |t| t.max(now)));
        let Some(link) = self.link_mut(id) else {
            return;
        };
        if link.on_rx(now, len) {
            self.path_up(now, id, out);
            self.sender.set_path_silent_since(id, None);
        } else {
            // The path is alive, so the peer may put data on it at any
            // moment: the resequencer must keep counting it as active for
            // comparison-based loss detection even while it carries no
            // data (BMP's "active" is data-based, and after an idle spell
            // a slow path's first packet would otherwise be skipped
            // before it arrives). Losses on the paths in use are still
            // found at once by the previous-on-path links.
            self.receiver.add_path(now, id);
        }
    }

    pub(super) fn path_up(&mut self, now: Instant, id: PathId, out: &mut Outputs) {
        if let Some(l) = self.link_mut(id) {
            l.rate_probes = 0;
        }
        self.quiet_from = Some(self.quiet_from.map_or(now, |t| t.max(now)));
        self.startup_path_up(id);
        if self.sender.path(id).is_some() {
            self.sender.set_usable(id, true);
        } else {
            self.sender.add_path(id, PathParams::default());
        }
        self.receiver.add_path(now, id);
        self.sync_hold_floor();
        out.push(Output::Event(Event::PathUp {
            peer: self.peer,
            path: id,
        }));
    }

    /// The caller knows the path cannot send (the interface is gone): take
    /// it out of use now rather than after `path_timeout`. Keepalives keep
    /// probing it; the first answer brings it back.
    pub(crate) fn mark_down(&mut self, now: Instant, id: PathId, out: &mut Outputs) {
        if self.links.iter().any(|l| l.id == id && l.up) {
            self.path_down(now, id, DownCause::Failed, out);
        }
    }

    /// Server: the client took path `id` out of use (`Control::PATH_DOWN`
    /// with `Control::DOWN_SILENT`), having heard nothing on it for its
    /// silence limit. Taken out here too, unless something arrived on it
    /// within a keepalive interval:
    /// then the client's silence was the end of an outage that is over
    /// (the path's first packets after it are arriving), and taking it out
    /// would make the resequencer give up the packets in flight on it.
    ///
    /// Why: change set 4/2 of `lab/sweep-changes.sh 40 4` (an upload over
    /// 40.3 Mbit/s 102 ms away, dark for 0.5 s, beside 2.0 Mbit/s 29 ms
    /// away). The client's silence limit on the far path is 604 ms: its
    /// first keepalive after the outage cannot be answered in time, so it
    /// took the path out 0.15 s after the outage ended, and the server,
    /// told so while the path's repair copies were arriving, released the
    /// resequencer's holes for them and dropped their pending reports.
    pub(super) fn peer_path_silent(&mut self, now: Instant, id: PathId, out: &mut Outputs) {
        let iv = self.cfg.keepalive_interval;
        let heard = self
            .link_mut(id)
            .and_then(|l| l.last_rx)
            .is_some_and(|t| now.saturating_since(t) < iv);
        if !heard {
            self.mark_down(now, id, out);
        }
    }

    /// Takes path `id` out of use, for `cause` (the client tells the
    /// server which: a silent path's notice carries `Control::DOWN_SILENT`).
    pub(super) fn path_down(
        &mut self,
        now: Instant,
        id: PathId,
        cause: DownCause,
        out: &mut Outputs,
    ) {
        if let Some(l) = self.link_mut(id) {
            l.up = false;
        }
        self.sender.set_usable(id, false);
        self.receiver.remove_path(id);
        self.sync_hold_floor();
        out.push(Output::Event(Event::PathDown {
            peer: self.peer,
            path: id,
        }));
        if self.role == Role::Client {
            // Tell the server over the paths still up, so that its downlink
            // stops using the path now instead of after `path_timeout`.
            let body: &[u8] = match cause {
                DownCause::Silent => &[id.0, Control::DOWN_SILENT],
                DownCause::Failed => &[id.0],
            };
            self.send_control(now, Control::PATH_DOWN, body, out);
        }
    }

    /// Sends a keepalive on path `id`.
    pub(super) fn send_keepalive(&mut self, now: Instant, id: PathId, out: &mut Outputs) {
        let Some(l) = self.link_mut(id) else { return };
        let ka = Keepalive {
            path: id,
            id: l.next_keepalive_id,
            tx_time_ns: now.as_nanos(),
        };
        l.next_keepalive_id = l.next_keepalive_id.wrapping_add(1);
        l.last_keepalive_tx = Some(now);
        if l.last_rx.is_none() {
            // Never heard from: its round trip is at least the time since.
            self.sender.set_path_silent_since(id, Some(now));
        }
        let mut b = [0u8; Keepalive::LEN];
        if ka.emit(false, &mut b).is_ok() {
            self.transmit(now, id, &b, out);
        }
    }

    /// Client: a keepalive on every path now (after a handshake, to confirm
    /// the session and announce every path to the server), with the path's
    /// name if it has one (`Control::PATH_NAME`, on the same path: a frame
    /// lost with it is sent again at the next handshake).
    pub(crate) fn keepalive_all(&mut self, now: Instant, out: &mut Outputs) {
        let ids: Vec<(PathId, Option<String>)> =
            self.links.iter().map(|l| (l.id, l.name.clone())).collect();
        for (id, name) in ids {
            self.send_keepalive(now, id, out);
            if let Some(name) = name {
                let mut body = vec![id.0];
                body.extend_from_slice(name.as_bytes());
                let c = Control {
                    kind: Control::PATH_NAME,
                    body: &body,
                };
                let mut b = vec![0u8; c.buffer_len()];
                if c.emit(&mut b).is_ok() {
                    self.transmit(now, id, &b, out);
                }
            }
        }
    }

    /// Client: names path `id` (told to the server after each handshake).
    pub(crate) fn set_link_name(&mut self, id: PathId, name: &str) {
        if let Some(l) = self.link_mut(id) {
            l.name = Some(path_name(name.as_bytes()));
        }
    }
}

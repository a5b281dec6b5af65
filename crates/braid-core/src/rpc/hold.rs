//! Holding and releasing the inner TCP's ACKs (PRISM §6.1's ACK
//! re-sequencing): an ACK for a segment above the cumulative ACK is held
//! in its slot; when the hole fills the held ACKs leave in order,
//! rewritten to what an in-order receiver would have sent, and in LOSS
//! state they leave in their original form.

use super::{Release, Rpc};
use crate::time::Instant;

impl<T> Rpc<T> {
    pub(super) fn hold(&mut self, now: Instant, s: u64, inner: T) {
        if !self.tracked(s) {
            self.emit(inner, s, true);
            return;
        }
        let slot = (s & self.mask) as usize;
        if let Some((_, old)) = self.held[slot].take() {
            // Cannot happen (a segment is identified once); forward the
            // older ACK rather than lose it.
            self.n_held -= 1;
            let v = self.meta_cum;
            self.emit(old, v, true);
        }
        self.held[slot] = Some((s, inner));
        self.n_held += 1;
        self.stats.held += 1;
        self.stats.max_held = self.stats.max_held.max(self.n_held);
        self.hold_order.push_back((now, s));
    }

    /// The cumulative ACK advanced from `prev_cum` to `meta_cum`:
    /// releases, in order, the held ACKs of the segments below it and this
    /// one, each rewritten to the value an in-order receiver would have
    /// sent, `s + 1`; the last carries `meta_cum` itself. Held ACKs above
    /// the new hole stay held. Every held segment was at or above the
    /// cumulative ACK when it was held and within the tracked window from
    /// it, so only `[prev_cum, min(meta_cum, prev_cum + capacity))` is
    /// scanned.
    pub(super) fn release_covered(
        &mut self,
        prev_cum: u64,
        causing: Option<u64>,
        inner: T,
        orig_ack: u64,
    ) {
        let cum = self.meta_cum;
        let mut current = Some(inner);
        let mut emitted_any = false;
        for s in prev_cum..cum.min(prev_cum.saturating_add(self.cap())) {
            if causing == Some(s) {
                if let Some(inner) = current.take() {
                    self.emit_rewritten(inner, s + 1);
                    emitted_any = true;
                }
            }
            let slot = (s & self.mask) as usize;
            if self.held[slot].as_ref().is_some_and(|(seq, _)| *seq == s) {
                let (_, h) = self.held[slot].take().expect("checked");
                self.n_held -= 1;
                self.emit_rewritten(h, s + 1);
                emitted_any = true;
            }
        }
        match current {
            Some(inner) => self.emit(inner, orig_ack, true),
            None if emitted_any => {
                // The final rewritten ACK may fall short of the cumulative
                // value (segments whose own ACKs never came): raise it so
                // the sender learns everything the receiver has.
                if let Some(r) = self.out.back_mut() {
                    r.ack = r.ack.max(cum);
                }
            }
            None => {}
        }
        self.skip_released_holds();
    }

    pub(super) fn release_all_original(&mut self) {
        let cum = self.meta_cum;
        while let Some((_, s)) = self.hold_order.pop_front() {
            let slot = (s & self.mask) as usize;
            if self.held[slot].as_ref().is_some_and(|(seq, _)| *seq == s) {
                let (_, h) = self.held[slot].take().expect("checked");
                self.n_held -= 1;
                // Its original form: a duplicate of the cumulative ACK.
                self.emit(h, cum, true);
            }
        }
    }

    pub(super) fn skip_released_holds(&mut self) {
        while let Some(&(_, s)) = self.hold_order.front() {
            let slot = (s & self.mask) as usize;
            if self.held[slot].as_ref().is_some_and(|(seq, _)| *seq == s) {
                break;
            }
            self.hold_order.pop_front();
        }
    }

    fn emit_rewritten(&mut self, inner: T, ack: u64) {
        self.stats.rewritten += 1;
        self.emit(inner, ack, false);
    }

    /// Queues `inner` for release with ACK value `ack`, carrying the
    /// pending loss information.
    pub(super) fn emit(&mut self, inner: T, ack: u64, original: bool) {
        let loss = self.take_loss_info();
        self.stats.acks_out += 1;
        self.out.push_back(Release {
            inner,
            ack,
            original,
            loss,
        });
    }
}

//! Inner header compression: the tunnel sends the IPv4/TCP headers of the
//! packets it carries in 26 bytes instead of 52 ([`header`]).
//!
//! Why: every inner packet pays the tunnel's own 62 bytes and its inner
//! TCP/IP headers, so a full 1500-byte outer packet held 1386 bytes of
//! TCP payload, 0.957 of the 1448 that TCP alone gets on the same path.
//! On a set where one path carries nearly everything (a thin second path,
//! or one kept out for its loss) that factor decided whether the bond beat
//! the best path alone. Compressed, a full packet is 1474 bytes on the
//! path for the same payload: 0.974 of TCP alone.
//!
//! How, robustly over paths that reorder and lose (the contexts of
//! RFC 5795's framework, with acknowledgement by the tunnel's own
//! feedback instead of ROHC's modes):
//! - the sender ([`Compressor`]) gives each TCP connection direction it
//!   sees a context id (one byte). Its packets go as *installs* (the
//!   context's 13 bytes, then the compressed header: data flag
//!   `INSTALL`) until the receiver's feedback reports one of them
//!   arrived; from then on *compressed* (flag `COMPRESSED`): the receiver
//!   holds the context before any compressed packet of it can reach it,
//!   whatever the paths do. Both forms are shorter than the packet, so
//!   neither can exceed the path MTU where the packet would not;
//! - every compressed header carries all the fields that change, so each
//!   packet rebuilds on its own, in any order, after any loss;
//! - a context id is given to another connection only after
//!   [`REUSE_IDLE`] without a packet of the old one, far beyond the
//!   longest a copy of a packet stays in the tunnel (repair's 2 s age
//!   bound plus a pacing queue), so no late packet meets a context that
//!   is not its own. With all [`CONTEXTS`] in use, new connections go
//!   uncompressed;
//! - a peer that lost its state gets a fresh tunnel on both ends
//!   (`conn::Tunnel::reset_data`, the server's new client state), so the
//!   two tables start empty together.
//!
//! Memory is bounded: 256 contexts each side and at most
//! [`MAX_PENDING_INSTALLS`] install sequence numbers awaiting feedback.
//! The decompressor never allocates beyond the packet it rebuilds.

pub mod header;

use std::collections::BTreeMap;

use crate::time::{Duration, Instant};
use header::{CompressError, FlowKey, Split};

/// Context ids: one byte.
pub const CONTEXTS: usize = 256;
/// How long a context must go unused before its id is given to another
/// connection.
pub const REUSE_IDLE: Duration = Duration::from_secs(10);
/// Install packets remembered until feedback reports one; beyond this the
/// oldest are forgotten (their contexts confirm from later installs).
pub const MAX_PENDING_INSTALLS: usize = 4096;

/// How the sender puts one inner packet into a data frame.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Form {
    /// As it is, no context.
    Plain,
    /// The context ([`FlowKey::emit`]), then the compressed header of
    /// this id: the receiver learns the context from it.
    Install(u8),
    /// The compressed header of this context, then the TCP payload.
    Compressed(u8),
}

impl Form {
    /// The data flag that marks a frame of this form, `None` for
    /// [`Form::Plain`].
    pub fn flag(self) -> Option<u8> {
        use crate::wire::DataFlags;
        match self {
            Form::Plain => None,
            Form::Install(_) => Some(DataFlags::INSTALL),
            Form::Compressed(_) => Some(DataFlags::COMPRESSED),
        }
    }
}

#[derive(Clone, Debug)]
struct Slot {
    key: FlowKey,
    /// Tells a context from the one held before under the same id.
    generation: u32,
    /// The receiver reported an install of this context.
    confirmed: bool,
    last_used: Instant,
}

/// The sending end's contexts.
#[derive(Clone, Debug)]
pub struct Compressor {
    slots: Vec<Option<Slot>>,
    by_key: BTreeMap<FlowKey, u8>,
    /// Tunnel sequence numbers of installs not yet reported, with the
    /// context (id, generation) each installs.
    pending: BTreeMap<u64, (u8, u32)>,
    /// Highest tunnel sequence number seen, to extend 32-bit reports
    /// and to tell a packet's first send from its copies.
    highest: Option<u64>,
    generations: u32,
    /// Every id is in use until then: new connections go plain without a
    /// search.
    full_until: Option<Instant>,
}

impl Default for Compressor {
    fn default() -> Self {
        Compressor {
            slots: vec![None; CONTEXTS],
            by_key: BTreeMap::new(),
            pending: BTreeMap::new(),
            highest: None,
            generations: 0,
            full_until: None,
        }
    }
}

impl Compressor {
    /// The form of the packet with tunnel sequence number `seq` whose
    /// headers are `key` (a [`header::split`] packet), sent at `now`.
    ///
    /// An install is remembered, so that a report of `seq` confirms it,
    /// but only on the packet's first send. Its copies (a repair, a
    /// redundant copy) carry the same number and each gets its form when
    /// it leaves: had the first gone plain (no id free) and a later copy
    /// as an install, the plain one's report would confirm a context the
    /// receiver never got. A copy of a first send that installed goes
    /// under the same id, so any copy's report means the context is
    /// there.
    pub fn choose(&mut self, now: Instant, key: &FlowKey, seq: u64) -> Form {
        let first = self.highest.is_none_or(|h| seq > h);
        self.highest = Some(self.highest.map_or(seq, |h| h.max(seq)));
        let cid = match self.by_key.get(key) {
            Some(&cid) => cid,
            None => match self.allocate(now, key) {
                Some(cid) => cid,
                None => return Form::Plain,
            },
        };
        let Some(slot) = self.slots[usize::from(cid)].as_mut() else {
            return Form::Plain;
        };
        slot.last_used = now;
        if slot.confirmed {
            return Form::Compressed(cid);
        }
        if first {
            if self.pending.len() >= MAX_PENDING_INSTALLS {
                self.pending.pop_first();
            }
            self.pending.insert(seq, (cid, slot.generation));
        }
        Form::Install(cid)
    }

    /// Bytes the packet `split` takes less on the path than sent plain,
    /// in the form [`Compressor::choose`] would give it now: the whole
    /// saving once its context is confirmed, less the context's bytes
    /// while it installs, none when every id is in use. For the
    /// scheduler's byte counts, before the packet is queued; a context
    /// confirmed while it waits makes it a little shorter still, and so
    /// does an id that [`Compressor::choose`] takes back from a
    /// connection idle for [`REUSE_IDLE`] (counted as none free here).
    pub fn saving(&self, split: &Split<'_>) -> usize {
        let whole = split.varying.full_len() - split.varying.compressed_len();
        match self.by_key.get(&split.key) {
            Some(&cid)
                if self.slots[usize::from(cid)]
                    .as_ref()
                    .is_some_and(|s| s.confirmed) =>
            {
                whole
            }
            Some(_) => whole - FlowKey::LEN,
            None if self.by_key.len() < CONTEXTS => whole - FlowKey::LEN,
            None => 0,
        }
    }

    /// The receiver reported tunnel packet `seq32` (low 32 bits) arrived.
    pub fn on_reported(&mut self, seq32: u32) {
        if self.pending.is_empty() {
            return;
        }
        let seq = crate::wire::seq::extend(seq32, self.highest.unwrap_or(0));
        let Some((cid, generation)) = self.pending.remove(&seq) else {
            return;
        };
        if let Some(slot) = self.slots[usize::from(cid)].as_mut() {
            if slot.generation == generation {
                slot.confirmed = true;
            }
        }
    }

    /// A free id, or the one unused longest if unused for [`REUSE_IDLE`].
    fn allocate(&mut self, now: Instant, key: &FlowKey) -> Option<u8> {
        if self.full_until.is_some_and(|t| now < t) {
            return None;
        }
        let free = self.slots.iter().position(Option::is_none);
        let cid = match free {
            Some(i) => i,
            None => {
                let (i, oldest) = self
                    .slots
                    .iter()
                    .enumerate()
                    .filter_map(|(i, s)| s.as_ref().map(|s| (i, s.last_used)))
                    .min_by_key(|&(i, t)| (t, i))?;
                if now.saturating_since(oldest) < REUSE_IDLE {
                    self.full_until = Some(oldest + REUSE_IDLE);
                    return None;
                }
                if let Some(old) = self.slots[i].take() {
                    self.by_key.remove(&old.key);
                }
                i
            }
        };
        self.full_until = None;
        self.generations = self.generations.wrapping_add(1);
        self.slots[cid] = Some(Slot {
            key: *key,
            generation: self.generations,
            confirmed: false,
            last_used: now,
        });
        let cid = cid as u8;
        self.by_key.insert(*key, cid);
        Some(cid)
    }

    /// Contexts in use (for status and tests).
    pub fn contexts(&self) -> usize {
        self.by_key.len()
    }
}

/// The receiving end's contexts.
#[derive(Clone, Debug)]
pub struct Decompressor {
    slots: Vec<Option<FlowKey>>,
}

impl Default for Decompressor {
    fn default() -> Self {
        Decompressor {
            slots: vec![None; CONTEXTS],
        }
    }
}

impl Decompressor {
    /// Appends to `out` the packet an install frame's payload stands for,
    /// and learns its context. Nothing is learnt from a payload that does
    /// not rebuild.
    ///
    /// Errors: those of [`FlowKey::parse`], [`header::parse`] and
    /// [`header::rebuild`].
    pub fn install(&mut self, payload: &[u8], out: &mut Vec<u8>) -> Result<(), CompressError> {
        let (key, rest) = FlowKey::parse(payload)?;
        let c = header::parse(rest)?;
        header::rebuild(&key, &c.varying, c.payload, out)?;
        self.slots[usize::from(c.cid)] = Some(key);
        Ok(())
    }

    /// Appends to `out` the packet a compressed frame's payload stands
    /// for.
    ///
    /// Errors: those of [`header::parse`] and [`header::rebuild`], and
    /// [`CompressError::UnknownContext`] for an id never installed.
    pub fn rebuild(&self, compressed: &[u8], out: &mut Vec<u8>) -> Result<(), CompressError> {
        let c = header::parse(compressed)?;
        let key = self.slots[usize::from(c.cid)]
            .as_ref()
            .ok_or(CompressError::UnknownContext(c.cid))?;
        header::rebuild(key, &c.varying, c.payload, out)
    }
}

/// Appends to `out` the data frame payload of `split` in `form` (nothing
/// for [`Form::Plain`], whose payload is the packet itself).
pub fn emit(form: Form, split: &Split<'_>, out: &mut Vec<u8>) {
    match form {
        Form::Plain => {}
        Form::Install(cid) => {
            split.key.emit(out);
            header::emit(cid, &split.varying, split.payload, out);
        }
        Form::Compressed(cid) => header::emit(cid, &split.varying, split.payload, out),
    }
}

#[cfg(test)]
mod tests;

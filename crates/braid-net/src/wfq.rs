//! Weighted fair queueing, the discipline of a [`crate::QueuedLink`] at
//! PET/BMP's base stations (Section III: "all flows through the base
//! station are given the same weight ... a single buffer for storing
//! packets from all the flows").
//!
//! Implemented as self-clocked fair queueing (Golestani, INFOCOM'94): a
//! packet of flow f gets finish tag F = max(F_f, V) + L, where V is the tag
//! of the packet in service; the smallest tag is served first. With equal
//! weights this is the same service order as WFQ up to one packet.
//! The shared buffer is drop-tail per flow: when full, the arriving packet
//! is dropped if its flow holds the most bytes, otherwise the tail of the
//! longest flow queue is pushed out (so one greedy flow cannot lock the
//! others out of the buffer, which a shared FIFO drop-tail would allow).

use std::collections::{BTreeMap, HashMap, VecDeque};

/// Equal-weight fair queue of packets `P`, each of a class (flow) and a
/// length in bytes.
#[derive(Debug)]
pub struct Wfq<P> {
    flows: HashMap<u32, FlowQ<P>>,
    /// (finish tag, arrival number) -> flow, of each flow's head packet.
    heads: BTreeMap<(u64, u64), u32>,
    vtime: u64,
    arrivals: u64,
    bytes: u64,
}

#[derive(Debug)]
struct FlowQ<P> {
    q: VecDeque<(u64, u64, u32, P)>, // (tag, arrival, len, packet)
    last_tag: u64,
    bytes: u64,
}

impl<P> Default for Wfq<P> {
    fn default() -> Self {
        Wfq {
            flows: HashMap::new(),
            heads: BTreeMap::new(),
            vtime: 0,
            arrivals: 0,
            bytes: 0,
        }
    }
}

impl<P> Wfq<P> {
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn is_empty(&self) -> bool {
        self.heads.is_empty()
    }

    /// Enqueues under a shared `limit`; returns how many packets were
    /// dropped (the arriving one, or other flows' tails pushed out).
    pub fn push(&mut self, flow: u32, len: u32, pkt: P, limit: u64) -> u32 {
        let mut dropped = 0;
        while self.bytes.saturating_add(len as u64) > limit {
            let own = self.flows.get(&flow).map_or(0, |f| f.bytes);
            let longest = self
                .flows
                .iter()
                .max_by_key(|(id, f)| (f.bytes, std::cmp::Reverse(**id)))
                .map(|(id, f)| (*id, f.bytes));
            match longest {
                Some((victim, vb)) if vb > own && victim != flow => {
                    self.pop_tail(victim);
                    dropped += 1;
                }
                _ => return dropped + 1,
            }
        }
        let f = self.flows.entry(flow).or_insert_with(|| FlowQ {
            q: VecDeque::new(),
            last_tag: 0,
            bytes: 0,
        });
        let tag = f.last_tag.max(self.vtime) + len as u64;
        f.last_tag = tag;
        f.bytes += len as u64;
        self.bytes += len as u64;
        self.arrivals += 1;
        let arrival = self.arrivals;
        let was_empty = f.q.is_empty();
        f.q.push_back((tag, arrival, len, pkt));
        if was_empty {
            self.heads.insert((tag, arrival), flow);
        }
        dropped
    }

    fn pop_tail(&mut self, flow: u32) -> Option<P> {
        let f = self.flows.get_mut(&flow)?;
        let (tag, arr, len, p) = f.q.pop_back()?;
        f.bytes -= len as u64;
        self.bytes -= len as u64;
        if f.q.is_empty() {
            self.heads.remove(&(tag, arr));
            self.flows.remove(&flow);
        } else {
            f.last_tag = f.q.back().map(|e| e.0).unwrap_or(0).max(self.vtime);
        }
        Some(p)
    }

    /// Dequeues the packet with the smallest finish tag.
    pub fn pop(&mut self) -> Option<P> {
        self.pop_with_len().map(|(_, p)| p)
    }

    /// As [`Self::pop`], with the packet's length.
    pub fn pop_with_len(&mut self) -> Option<(u32, P)> {
        let (&(tag, arr), &flow) = self.heads.iter().next()?;
        self.heads.remove(&(tag, arr));
        let f = self.flows.get_mut(&flow).expect("head flow exists");
        let (tag, _, len, p) = f.q.pop_front().expect("head packet exists");
        self.vtime = tag;
        f.bytes -= len as u64;
        self.bytes -= len as u64;
        match f.q.front() {
            Some(&(t, a, _, _)) => {
                self.heads.insert((t, a), flow);
            }
            None => {
                self.flows.remove(&flow);
            }
        }
        Some((len, p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_weights_share_equally() {
        let mut q = Wfq::default();
        for i in 0..10 {
            assert_eq!(q.push(1, 1000, (1, i), u64::MAX), 0);
        }
        for i in 0..10 {
            assert_eq!(q.push(2, 1000, (2, i), u64::MAX), 0);
        }
        let first10: Vec<u32> = (0..10).map(|_| q.pop().unwrap().0).collect();
        assert_eq!(first10.iter().filter(|&&f| f == 1).count(), 5);
    }

    #[test]
    fn full_buffer_pushes_out_the_longest_flow() {
        let mut q = Wfq::default();
        for i in 0..3 {
            assert_eq!(q.push(1, 1000, i, 3000), 0);
        }
        // Flow 2 arrives to a full buffer: flow 1's tail goes.
        assert_eq!(q.push(2, 1000, 100, 3000), 1);
        // Flow 1 arriving again while longest: its own packet is dropped.
        assert_eq!(q.push(1, 1000, 7, 3000), 1);
        assert_eq!(q.bytes(), 3000);
        let order: Vec<u32> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![0, 100, 1]);
    }
}

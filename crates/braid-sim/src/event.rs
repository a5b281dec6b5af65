//! The event queue: a binary heap ordered by (time, insertion number), so
//! that events at the same instant run in the order they were scheduled
//! and a run is a pure function of its inputs (smoltcp's netsim does the
//! same).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use braid_core::time::Instant;

struct Entry<E> {
    at: Instant,
    id: u64,
    ev: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        self.at == o.at && self.id == o.id
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    // Reversed: BinaryHeap is a max-heap and we want the earliest first.
    fn cmp(&self, o: &Self) -> Ordering {
        o.at.cmp(&self.at).then(o.id.cmp(&self.id))
    }
}

pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_id: u64,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(4096),
            next_id: 0,
            popped: 0,
        }
    }
}

impl<E> EventQueue<E> {
    pub fn push(&mut self, at: Instant, ev: E) {
        self.heap.push(Entry {
            at,
            id: self.next_id,
            ev,
        });
        self.next_id += 1;
    }

    pub fn pop(&mut self) -> Option<(Instant, E)> {
        let e = self.heap.pop()?;
        self.popped += 1;
        Some((e.at, e.ev))
    }

    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|e| e.at)
    }

    /// Events processed so far.
    pub fn processed(&self) -> u64 {
        self.popped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_ties_in_insertion_order() {
        let mut q = EventQueue::default();
        q.push(Instant::from_millis(5), "c");
        q.push(Instant::from_millis(1), "a");
        q.push(Instant::from_millis(5), "d");
        q.push(Instant::from_millis(1), "b");
        let order: Vec<&str> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!["a", "b", "c", "d"]);
    }
}

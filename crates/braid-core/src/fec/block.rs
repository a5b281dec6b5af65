//! One Reed-Solomon block code: `k` data shards, `m` parity shards.

use reed_solomon_erasure::galois_8::ReedSolomon;

/// At most this many shards (data + parity) in one block: GF(2^8) has 256
/// elements, and the code needs a distinct evaluation point per shard.
pub const MAX_SHARDS: usize = 256;

/// Why a block could not be built, encoded or rebuilt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FecError {
    /// `k = 0`, or `k + m` over [`MAX_SHARDS`].
    #[error("a block needs 1..={max} shards with at least one data shard, not {data} data + {parity} parity")]
    BadShape {
        data: usize,
        parity: usize,
        max: usize,
    },
    /// The number of shards handed in is not the block's.
    #[error("expected {expected} shards, got {got}")]
    WrongShardCount { expected: usize, got: usize },
    /// Shards of one block must all have the same, non-zero length.
    #[error("shard {index} is {len} bytes, the block's shards are {expected}")]
    ShardLength {
        index: usize,
        len: usize,
        expected: usize,
    },
    /// Fewer than `k` shards arrived: the block cannot be rebuilt.
    #[error("only {have} of the {need} shards needed to rebuild the block arrived")]
    TooFewShards { have: usize, need: usize },
}

/// A systematic `(k + m, k)` Reed-Solomon code.
///
/// Building one inverts a `k × k` matrix; build it once per block shape and
/// reuse it (it is `Clone` and cheap to share).
#[derive(Clone)]
pub struct BlockCode {
    data: usize,
    parity: usize,
    /// `None` when `parity == 0`: nothing to compute.
    rs: Option<ReedSolomon>,
}

impl std::fmt::Debug for BlockCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCode")
            .field("data", &self.data)
            .field("parity", &self.parity)
            .finish()
    }
}

impl BlockCode {
    /// A code with `data` data shards and `parity` parity shards.
    pub fn new(data: usize, parity: usize) -> Result<Self, FecError> {
        let bad = FecError::BadShape {
            data,
            parity,
            max: MAX_SHARDS,
        };
        if data == 0 || data.checked_add(parity).is_none_or(|n| n > MAX_SHARDS) {
            return Err(bad);
        }
        let rs = if parity == 0 {
            None
        } else {
            Some(ReedSolomon::new(data, parity).map_err(|_| bad)?)
        };
        Ok(Self { data, parity, rs })
    }

    /// Data shards per block (`k`).
    pub fn data_shards(&self) -> usize {
        self.data
    }

    /// Parity shards per block (`m`).
    pub fn parity_shards(&self) -> usize {
        self.parity
    }

    /// The `m` parity shards of `data`, which must be `k` shards of one
    /// non-zero length.
    pub fn encode<T: AsRef<[u8]>>(&self, data: &[T]) -> Result<Vec<Vec<u8>>, FecError> {
        let len = self.check_data(data)?;
        let Some(rs) = &self.rs else {
            return Ok(Vec::new());
        };
        let mut parity = vec![vec![0u8; len]; self.parity];
        let refs: Vec<&[u8]> = data.iter().map(AsRef::as_ref).collect();
        rs.encode_sep(&refs, &mut parity)
            .expect("shapes checked above");
        Ok(parity)
    }

    /// Parity for packets of unequal length: each is taken as zero-padded to
    /// the longest. Returns that length and the parity shards. The receiver
    /// must learn each packet's own length from elsewhere (an IP header, a
    /// length field) to strip the padding after [`reconstruct`](Self::reconstruct).
    pub fn encode_padded<T: AsRef<[u8]>>(
        &self,
        data: &[T],
    ) -> Result<(usize, Vec<Vec<u8>>), FecError> {
        let len = data.iter().map(|d| d.as_ref().len()).max().unwrap_or(0);
        let padded: Vec<Vec<u8>> = data
            .iter()
            .map(|d| {
                let mut v = d.as_ref().to_vec();
                v.resize(len, 0);
                v
            })
            .collect();
        Ok((len, self.encode(&padded)?))
    }

    /// Rebuilds the missing data shards of a block in place.
    ///
    /// `shards` holds the block's `k + m` slots in order (data first), `None`
    /// where a shard was lost. On success the first `k` slots are all
    /// `Some`; parity slots may stay `None`. Nothing is computed when no data
    /// shard is missing.
    pub fn reconstruct(&self, shards: &mut [Option<Vec<u8>>]) -> Result<(), FecError> {
        let total = self.data + self.parity;
        if shards.len() != total {
            return Err(FecError::WrongShardCount {
                expected: total,
                got: shards.len(),
            });
        }
        let mut expected = None;
        for (index, s) in shards.iter().enumerate() {
            if let Some(s) = s {
                let want = *expected.get_or_insert(s.len());
                if s.is_empty() || s.len() != want {
                    return Err(FecError::ShardLength {
                        index,
                        len: s.len(),
                        expected: want,
                    });
                }
            }
        }
        if shards[..self.data].iter().all(Option::is_some) {
            return Ok(());
        }
        let have = shards.iter().filter(|s| s.is_some()).count();
        if have < self.data {
            return Err(FecError::TooFewShards {
                have,
                need: self.data,
            });
        }
        let rs = self
            .rs
            .as_ref()
            .expect("a data shard is missing and k shards arrived, so m > 0");
        rs.reconstruct_data(shards)
            .expect("count and lengths checked above");
        Ok(())
    }

    fn check_data<T: AsRef<[u8]>>(&self, data: &[T]) -> Result<usize, FecError> {
        if data.len() != self.data {
            return Err(FecError::WrongShardCount {
                expected: self.data,
                got: data.len(),
            });
        }
        let len = data[0].as_ref().len();
        for (index, d) in data.iter().enumerate() {
            let l = d.as_ref().len();
            if l == 0 || l != len {
                return Err(FecError::ShardLength {
                    index,
                    len: l,
                    expected: len,
                });
            }
        }
        Ok(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn block(k: usize, len: usize, seed: u8) -> Vec<Vec<u8>> {
        (0..k)
            .map(|i| {
                (0..len)
                    .map(|j| (i as u8).wrapping_mul(31) ^ (j as u8) ^ seed)
                    .collect()
            })
            .collect()
    }

    #[test]
    fn shapes_are_checked() {
        assert!(matches!(
            BlockCode::new(0, 3),
            Err(FecError::BadShape { .. })
        ));
        assert!(matches!(
            BlockCode::new(200, 57),
            Err(FecError::BadShape { .. })
        ));
        assert!(BlockCode::new(200, 56).is_ok());
        assert!(matches!(
            BlockCode::new(usize::MAX, 2),
            Err(FecError::BadShape { .. })
        ));
        let c = BlockCode::new(3, 2).unwrap();
        assert_eq!(
            c.encode(&block(2, 10, 0)),
            Err(FecError::WrongShardCount {
                expected: 3,
                got: 2
            })
        );
        let mut uneven = block(3, 10, 0);
        uneven[1].pop();
        assert!(matches!(
            c.encode(&uneven),
            Err(FecError::ShardLength { index: 1, .. })
        ));
        assert!(matches!(
            c.encode(&[vec![], vec![], vec![]]),
            Err(FecError::ShardLength { index: 0, .. })
        ));
    }

    #[test]
    fn zero_parity_is_a_plain_block() {
        let c = BlockCode::new(4, 0).unwrap();
        assert!(c.encode(&block(4, 8, 1)).unwrap().is_empty());
        let mut shards: Vec<_> = block(4, 8, 1).into_iter().map(Some).collect();
        c.reconstruct(&mut shards).unwrap();
        shards[2] = None;
        assert_eq!(
            c.reconstruct(&mut shards),
            Err(FecError::TooFewShards { have: 3, need: 4 })
        );
    }

    #[test]
    fn reconstruct_rejects_bad_input_without_panicking() {
        let c = BlockCode::new(3, 2).unwrap();
        let mut short = vec![None; 4];
        assert!(matches!(
            c.reconstruct(&mut short),
            Err(FecError::WrongShardCount { .. })
        ));
        let mut mixed = vec![Some(vec![1; 5]), None, Some(vec![2; 6]), None, None];
        assert!(matches!(
            c.reconstruct(&mut mixed),
            Err(FecError::ShardLength { index: 2, .. })
        ));
        let mut two = vec![Some(vec![1; 5]), None, None, Some(vec![2; 5]), None];
        assert_eq!(
            c.reconstruct(&mut two),
            Err(FecError::TooFewShards { have: 2, need: 3 })
        );
    }

    #[test]
    fn padded_packets_come_back_with_their_padding() {
        let c = BlockCode::new(3, 1).unwrap();
        let data = [vec![1u8; 7], vec![2u8; 3], vec![3u8; 5]];
        let (len, parity) = c.encode_padded(&data).unwrap();
        assert_eq!(len, 7);
        let mut shards = vec![Some(vec![1u8; 7]), None, Some(vec![3, 3, 3, 3, 3, 0, 0])];
        shards.push(Some(parity[0].clone()));
        c.reconstruct(&mut shards).unwrap();
        assert_eq!(shards[1].as_deref(), Some(&[2u8, 2, 2, 0, 0, 0, 0][..]));
    }

    proptest! {
        /// Any `k` of the `k + m` shards rebuild the data exactly (MPLOT
        /// §III-B: the code is MDS), and fewer than `k` are refused.
        #[test]
        fn any_k_of_k_plus_m_rebuild_the_block(
            k in 1usize..40,
            m in 0usize..12,
            len in 1usize..64,
            seed: u8,
            lost_mask in proptest::collection::vec(any::<bool>(), 52),
        ) {
            let c = BlockCode::new(k, m).unwrap();
            let data = block(k, len, seed);
            let parity = c.encode(&data).unwrap();
            prop_assert_eq!(parity.len(), m);
            let mut shards: Vec<Option<Vec<u8>>> =
                data.iter().cloned().chain(parity).map(Some).collect();
            for (s, lost) in shards.iter_mut().zip(&lost_mask) {
                if *lost {
                    *s = None;
                }
            }
            let have = shards.iter().filter(|s| s.is_some()).count();
            let r = c.reconstruct(&mut shards);
            if have >= k {
                prop_assert!(r.is_ok());
                for (got, want) in shards[..k].iter().zip(&data) {
                    prop_assert_eq!(got.as_ref(), Some(want));
                }
            } else if shards[..k].iter().any(Option::is_none) {
                prop_assert_eq!(r, Err(FecError::TooFewShards { have, need: k }));
            }
        }
    }
}

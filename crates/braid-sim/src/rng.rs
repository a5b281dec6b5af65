//! Seed derivation: every random stream of a run comes from the run's seed
//! and a label, so that adding a stream does not shift the others and all
//! schemes of one seed face the same cross traffic.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// SplitMix64 step, a good 64-bit mixer.
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
    z ^ (z >> 31)
}

/// An RNG for stream `parts` of the run seeded with `seed`.
pub fn stream(seed: u64, parts: &[u64]) -> ChaCha8Rng {
    let mut s = mix(seed);
    for &p in parts {
        s = mix(s ^ p);
    }
    ChaCha8Rng::seed_from_u64(s)
}

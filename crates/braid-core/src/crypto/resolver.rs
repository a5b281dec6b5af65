//! A snow `CryptoResolver` that keeps the core free of global randomness.
//!
//! snow draws the ephemeral key of a handshake from the RNG its resolver
//! returns; the stock `DefaultResolver` returns the OS RNG. The core must
//! be deterministic under a seed (the simulator replays runs), so
//! [`SeededResolver`] hands snow a ChaCha20 generator seeded from the
//! caller's RNG and delegates every primitive to snow's default
//! implementations. The daemon seeds its RNG from the OS, so in production
//! the ephemeral keys are as good as OS randomness.
//!
//! It also wraps Diffie-Hellman so that an all-zero shared secret (the
//! peer sent a low-order point) fails the handshake, as WireGuard does; the
//! Noise spec (Section 12.1) allows either behaviour, and refusing costs
//! one comparison. Finally it overwrites the private keys and cipher keys
//! that snow's default primitives keep in plain arrays when the handshake
//! state is dropped (ephemeral keys left in freed memory would undo forward
//! secrecy).
//!
//! The responder's static key is the same for every initiation, yet snow
//! derives its public key (an X25519 base-point multiplication) each time a
//! handshake state is built: about 9 % of the server's CPU per initiation
//! under a handshake flood. [`StaticPair`] holds the key pair derived once;
//! a resolver made [`SeededResolver::with_static`] hands snow a
//! Diffie-Hellman that recognises that private key and takes the stored
//! public key instead of deriving it.

use core::cell::Cell;
use std::sync::Arc;

use curve25519_dalek::montgomery::MontgomeryPoint;
use zeroize::Zeroizing;

use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rand_core::{CryptoRng, RngCore};
use snow::params::{CipherChoice, DHChoice, HashChoice};
use snow::resolvers::{CryptoResolver, DefaultResolver};
use snow::types::{Cipher, Dh, Hash, Random};

/// The Noise protocol name; `Noise_IK_25519_ChaChaPoly_BLAKE2s` is
/// WireGuard's choice (WireGuard paper Section 5.4).
pub const NOISE_PARAMS: &str = "Noise_IK_25519_ChaChaPoly_BLAKE2s";

/// Resolver whose RNG is a ChaCha20 stream from a caller-provided seed.
/// The RNG is handed out once: a second `resolve_rng` returns `None`
/// (making snow fail) rather than repeating the same stream.
pub(crate) struct SeededResolver {
    rng: Cell<Option<ChaCha20Rng>>,
    /// A static key pair derived once (the responder's).
    known: Option<Arc<StaticPair>>,
}

/// A private key and its public key, derived once.
pub(crate) struct StaticPair {
    private: Zeroizing<[u8; 32]>,
    public: [u8; 32],
}

impl StaticPair {
    pub(crate) fn new(private: &[u8; 32]) -> Self {
        StaticPair {
            private: Zeroizing::new(*private),
            public: MontgomeryPoint::mul_base_clamped(*private).to_bytes(),
        }
    }
    pub(crate) fn public(&self) -> &[u8; 32] {
        &self.public
    }
}

impl SeededResolver {
    /// Seeds the resolver's ChaCha20 stream from 32 bytes of `rng`.
    pub(crate) fn from_rng<R: RngCore + CryptoRng>(rng: &mut R) -> Self {
        let mut seed = zeroize::Zeroizing::new([0u8; 32]);
        rng.fill_bytes(&mut *seed);
        SeededResolver {
            rng: Cell::new(Some(ChaCha20Rng::from_seed(*seed))),
            known: None,
        }
    }

    /// As [`SeededResolver::from_rng`], and snow's `set` of `pair`'s
    /// private key takes `pair`'s public key instead of deriving it.
    pub(crate) fn with_static<R: RngCore + CryptoRng>(rng: &mut R, pair: Arc<StaticPair>) -> Self {
        let mut r = Self::from_rng(rng);
        r.known = Some(pair);
        r
    }
}

/// X25519 (RFC 7748) on curve25519-dalek, as snow's own `Dh25519`, but
/// `set` of the known static private key reuses its public key.
struct X25519 {
    private: Zeroizing<[u8; 32]>,
    public: [u8; 32],
    known: Option<Arc<StaticPair>>,
}

impl X25519 {
    fn derive(&mut self) {
        self.public = MontgomeryPoint::mul_base_clamped(*self.private).to_bytes();
    }
}

/// snow needs its RNG to implement its own marker trait.
struct NoiseRng(ChaCha20Rng);

/// Diffie-Hellman that refuses an all-zero result.
struct NonZeroDh(Box<dyn Dh>);

/// A handshake cipher whose key is overwritten on drop (snow's own
/// ChaChaPoly wrapper keeps it in a plain array).
struct ZeroizingCipher(Box<dyn Cipher>);

impl CryptoResolver for SeededResolver {
    fn resolve_rng(&self) -> Option<Box<dyn Random>> {
        self.rng
            .take()
            .map(|rng| Box::new(NoiseRng(rng)) as Box<dyn Random>)
    }
    fn resolve_dh(&self, choice: &DHChoice) -> Option<Box<dyn Dh>> {
        match choice {
            DHChoice::Curve25519 => Some(Box::new(NonZeroDh(Box::new(X25519 {
                private: Zeroizing::new([0; 32]),
                public: [0; 32],
                known: self.known.clone(),
            })))),
            _ => DefaultResolver
                .resolve_dh(choice)
                .map(|dh| Box::new(NonZeroDh(dh)) as Box<dyn Dh>),
        }
    }
    fn resolve_hash(&self, choice: &HashChoice) -> Option<Box<dyn Hash>> {
        DefaultResolver.resolve_hash(choice)
    }
    fn resolve_cipher(&self, choice: &CipherChoice) -> Option<Box<dyn Cipher>> {
        DefaultResolver
            .resolve_cipher(choice)
            .map(|c| Box::new(ZeroizingCipher(c)) as Box<dyn Cipher>)
    }
}

impl RngCore for NoiseRng {
    fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }
    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.0.fill_bytes(dest)
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        self.0.try_fill_bytes(dest)
    }
}

impl CryptoRng for NoiseRng {}
impl Random for NoiseRng {}

impl Dh for X25519 {
    fn name(&self) -> &'static str {
        "25519"
    }
    fn pub_len(&self) -> usize {
        32
    }
    fn priv_len(&self) -> usize {
        32
    }
    fn set(&mut self, privkey: &[u8]) {
        let n = privkey.len().min(32);
        self.private.fill(0);
        self.private[..n].copy_from_slice(&privkey[..n]);
        let known = self.known.as_ref().is_some_and(|k| {
            // Fold without early exit: key comparison in constant time.
            k.private
                .iter()
                .zip(self.private.iter())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
        });
        match (&self.known, known) {
            (Some(k), true) => self.public = k.public,
            // The all-zero key is what `NonZeroDh`'s drop writes to wipe
            // it; deriving its public key would cost a scalar
            // multiplication per handshake for nothing.
            _ if self.private.iter().all(|&b| b == 0) => self.public = [0; 32],
            _ => self.derive(),
        }
    }
    fn generate(&mut self, rng: &mut dyn Random) {
        rng.fill_bytes(&mut *self.private);
        self.derive();
    }
    fn pubkey(&self) -> &[u8] {
        &self.public
    }
    fn privkey(&self) -> &[u8] {
        &*self.private
    }
    fn dh(&self, pubkey: &[u8], out: &mut [u8]) -> Result<(), snow::Error> {
        let point: [u8; 32] = pubkey
            .get(..32)
            .and_then(|p| p.try_into().ok())
            .ok_or(snow::Error::Dh)?;
        let shared = Zeroizing::new(MontgomeryPoint(point).mul_clamped(*self.private).to_bytes());
        let n = out.len().min(32);
        out[..n].copy_from_slice(&shared[..n]);
        Ok(())
    }
}

impl Dh for NonZeroDh {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn pub_len(&self) -> usize {
        self.0.pub_len()
    }
    fn priv_len(&self) -> usize {
        self.0.priv_len()
    }
    fn set(&mut self, privkey: &[u8]) {
        self.0.set(privkey)
    }
    fn generate(&mut self, rng: &mut dyn Random) {
        self.0.generate(rng)
    }
    fn pubkey(&self) -> &[u8] {
        self.0.pubkey()
    }
    fn privkey(&self) -> &[u8] {
        self.0.privkey()
    }
    fn dh(&self, pubkey: &[u8], out: &mut [u8]) -> Result<(), snow::Error> {
        self.0.dh(pubkey, out)?;
        let len = self.0.pub_len().min(out.len());
        // Fold without early exit: the comparison leaks only "zero or not".
        if out[..len].iter().fold(0u8, |acc, b| acc | b) == 0 {
            return Err(snow::Error::Dh);
        }
        Ok(())
    }
}

impl Drop for NonZeroDh {
    fn drop(&mut self) {
        // snow's Curve25519 keeps the private key in a plain array; overwrite
        // it before the allocation is freed.
        let zero = [0u8; 32];
        let len = self.0.priv_len().min(zero.len());
        self.0.set(&zero[..len]);
    }
}

impl Cipher for ZeroizingCipher {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn set(&mut self, key: &[u8]) {
        self.0.set(key)
    }
    fn encrypt(&self, nonce: u64, authtext: &[u8], plaintext: &[u8], out: &mut [u8]) -> usize {
        self.0.encrypt(nonce, authtext, plaintext, out)
    }
    fn decrypt(
        &self,
        nonce: u64,
        authtext: &[u8],
        ciphertext: &[u8],
        out: &mut [u8],
    ) -> Result<usize, snow::Error> {
        self.0.decrypt(nonce, authtext, ciphertext, out)
    }
    fn rekey(&mut self) {
        self.0.rekey()
    }
}

impl Drop for ZeroizingCipher {
    fn drop(&mut self) {
        self.0.set(&[0u8; 32]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn low_order_point_refused() {
        let resolver = SeededResolver::from_rng(&mut ChaCha20Rng::seed_from_u64(1));
        let mut dh = resolver.resolve_dh(&DHChoice::Curve25519).unwrap();
        let mut rng = resolver.resolve_rng().unwrap();
        dh.generate(&mut *rng);
        let mut out = [0u8; 32];
        assert_eq!(dh.dh(&[0u8; 32], &mut out), Err(snow::Error::Dh));
        let mut one = [0u8; 32];
        one[0] = 1; // order-1 point
        assert_eq!(dh.dh(&one, &mut out), Err(snow::Error::Dh));
        let mut peer = resolver.resolve_dh(&DHChoice::Curve25519).unwrap();
        peer.generate(&mut *rng);
        assert!(dh.dh(peer.pubkey(), &mut out).is_ok());
    }

    #[test]
    fn static_pair_matches_derivation_and_snow() {
        let private = [0x42u8; 32];
        let pair = Arc::new(StaticPair::new(&private));
        let resolver =
            SeededResolver::with_static(&mut ChaCha20Rng::seed_from_u64(1), pair.clone());
        let mut known = resolver.resolve_dh(&DHChoice::Curve25519).unwrap();
        known.set(&private);
        let mut snow_dh = DefaultResolver.resolve_dh(&DHChoice::Curve25519).unwrap();
        snow_dh.set(&private);
        assert_eq!(known.pubkey(), snow_dh.pubkey());
        assert_eq!(&pair.public()[..], snow_dh.pubkey());
        // Another key is derived, not mistaken for the known one.
        let mut other = resolver.resolve_dh(&DHChoice::Curve25519).unwrap();
        other.set(&[0x43; 32]);
        let mut snow_other = DefaultResolver.resolve_dh(&DHChoice::Curve25519).unwrap();
        snow_other.set(&[0x43; 32]);
        assert_eq!(other.pubkey(), snow_other.pubkey());
        // Same shared secrets as snow's implementation.
        let (mut a, mut b) = ([0u8; 32], [0u8; 32]);
        known.dh(snow_other.pubkey(), &mut a).unwrap();
        snow_dh.dh(snow_other.pubkey(), &mut b).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn rng_is_handed_out_once() {
        let resolver = SeededResolver::from_rng(&mut ChaCha20Rng::seed_from_u64(1));
        assert!(resolver.resolve_rng().is_some());
        assert!(resolver.resolve_rng().is_none());
    }
}

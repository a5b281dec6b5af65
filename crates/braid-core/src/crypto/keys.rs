//! Static X25519 keys and their text form.
//!
//! Keys are 32 bytes, written as standard padded base64 (44 characters),
//! exactly like WireGuard's `wg genkey` / `wg pubkey`, so operators can
//! reuse their tooling and habits. A [`PrivateKey`] is wiped from memory when
//! dropped and never printed by `Debug`.
//!
//! Reading key files is I/O and lives in the daemon; this module only
//! provides the pure policy check [`check_key_file_mode`] (refuse private
//! key files that group or others can read, as ssh does for identity files).

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use rand_core::{CryptoRng, RngCore};
use snow::params::DHChoice;
use snow::resolvers::{CryptoResolver, DefaultResolver};
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

/// Length of an X25519 key in bytes.
pub const KEY_LEN: usize = 32;
/// Length of a key in base64 text (with padding).
pub const KEY_BASE64_LEN: usize = 44;

/// Why a key could not be decoded or a key file is refused.
#[derive(Copy, Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The text is not standard base64.
    #[error("key is not valid base64")]
    InvalidBase64,
    /// The text decodes to the wrong number of bytes (a key is 32 bytes,
    /// 44 base64 characters).
    #[error(
        "key has wrong length: expected 44 base64 characters (32 bytes), got {got} characters"
    )]
    WrongLength {
        /// Length of the (trimmed) text.
        got: usize,
    },
    /// A private key file is readable or writable by group or others.
    #[error(
        "private key file mode 0{mode:03o} gives access to group or others; \
         fix it with `chmod 600 FILE`"
    )]
    InsecureMode {
        /// The permission bits (`mode & 0o777`).
        mode: u32,
    },
}

/// An X25519 public key: the identity of a client or of the server.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PublicKey([u8; KEY_LEN]);

/// An X25519 private key. Zeroized on drop; `Debug` does not print it;
/// there is deliberately no `Display` and no `PartialEq`.
#[derive(Clone)]
pub struct PrivateKey([u8; KEY_LEN]);

impl PublicKey {
    pub const fn from_bytes(bytes: [u8; KEY_LEN]) -> Self {
        PublicKey(bytes)
    }
    /// From a slice; `None` unless it is exactly 32 bytes.
    pub fn from_slice(bytes: &[u8]) -> Option<Self> {
        bytes.try_into().ok().map(PublicKey)
    }
    pub const fn as_bytes(&self) -> &[u8; KEY_LEN] {
        &self.0
    }
    /// Standard padded base64, as `wg pubkey` prints it.
    pub fn to_base64(&self) -> String {
        BASE64.encode(self.0)
    }
    /// Parses 44 base64 characters; surrounding whitespace (a trailing
    /// newline in a file) is ignored.
    pub fn from_base64(text: &str) -> Result<Self, KeyError> {
        decode_key(text).map(|bytes| PublicKey(*bytes))
    }
}

impl PrivateKey {
    /// A fresh key from `rng`, clamped as RFC 7748 Section 5 and `wg
    /// genkey` do (X25519 clamps anyway; storing it clamped keeps the text
    /// identical to WireGuard's tools).
    pub fn generate<R: RngCore + CryptoRng>(rng: &mut R) -> Self {
        let mut key = PrivateKey([0; KEY_LEN]);
        rng.fill_bytes(&mut key.0);
        key.0[0] &= 248;
        key.0[31] &= 127;
        key.0[31] |= 64;
        key
    }
    pub fn from_bytes(bytes: [u8; KEY_LEN]) -> Self {
        PrivateKey(bytes)
    }
    /// The raw key; handle with care (do not copy into unzeroized memory).
    pub fn as_bytes(&self) -> &[u8; KEY_LEN] {
        &self.0
    }
    /// The matching public key (X25519 scalar multiplication of the base
    /// point, via snow's Curve25519 implementation).
    pub fn public_key(&self) -> PublicKey {
        let mut dh = DefaultResolver
            .resolve_dh(&DHChoice::Curve25519)
            .expect("snow's default resolver provides Curve25519");
        dh.set(&self.0);
        let public = PublicKey::from_slice(dh.pubkey()).expect("X25519 public keys are 32 bytes");
        // snow's Dh does not zeroize itself: overwrite its copy of the key.
        dh.set(&[0; KEY_LEN]);
        public
    }
    /// Standard padded base64, as `wg genkey` prints it. The returned
    /// string is zeroized on drop.
    pub fn to_base64(&self) -> Zeroizing<String> {
        Zeroizing::new(BASE64.encode(self.0))
    }
    /// Parses 44 base64 characters; surrounding whitespace is ignored.
    pub fn from_base64(text: &str) -> Result<Self, KeyError> {
        decode_key(text).map(|bytes| PrivateKey(*bytes))
    }
}

/// Refuses a private key file whose permission bits give group or others
/// any access (`mode & 0o077 != 0`). `mode` is `st_mode` or just its
/// permission bits. The daemon reads the mode and adds the path to the
/// error; this function is the policy.
pub fn check_key_file_mode(mode: u32) -> Result<(), KeyError> {
    if mode & 0o077 != 0 {
        return Err(KeyError::InsecureMode { mode: mode & 0o777 });
    }
    Ok(())
}

/// Decodes 32 key bytes from base64 text, wiping the intermediate buffer.
fn decode_key(text: &str) -> Result<Zeroizing<[u8; KEY_LEN]>, KeyError> {
    let text = text.trim();
    if text.len() != KEY_BASE64_LEN {
        return Err(KeyError::WrongLength { got: text.len() });
    }
    let decoded = Zeroizing::new(BASE64.decode(text).map_err(|_| KeyError::InvalidBase64)?);
    let mut key = Zeroizing::new([0u8; KEY_LEN]);
    if decoded.len() != KEY_LEN {
        // 44 characters with two padding characters: 31 bytes.
        return Err(KeyError::InvalidBase64);
    }
    key.copy_from_slice(&decoded);
    Ok(key)
}

impl core::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "PublicKey({})", self.to_base64())
    }
}

impl core::fmt::Display for PublicKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.to_base64())
    }
}

impl core::str::FromStr for PublicKey {
    type Err = KeyError;
    fn from_str(s: &str) -> Result<Self, KeyError> {
        PublicKey::from_base64(s)
    }
}

impl Drop for PrivateKey {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl ZeroizeOnDrop for PrivateKey {}

impl core::fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("PrivateKey(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    #[test]
    fn rfc7748_public_key_derivation() {
        // RFC 7748 Section 6.1, Alice's key pair.
        let private: [u8; 32] = [
            0x77, 0x07, 0x6d, 0x0a, 0x73, 0x18, 0xa5, 0x7d, 0x3c, 0x16, 0xc1, 0x72, 0x51, 0xb2,
            0x66, 0x45, 0xdf, 0x4c, 0x2f, 0x87, 0xeb, 0xc0, 0x99, 0x2a, 0xb1, 0x77, 0xfb, 0xa5,
            0x1d, 0xb9, 0x2c, 0x2a,
        ];
        let public: [u8; 32] = [
            0x85, 0x20, 0xf0, 0x09, 0x89, 0x30, 0xa7, 0x54, 0x74, 0x8b, 0x7d, 0xdc, 0xb4, 0x3e,
            0xf7, 0x5a, 0x0d, 0xbf, 0x3a, 0x0d, 0x26, 0x38, 0x1a, 0xf4, 0xeb, 0xa4, 0xa9, 0x8e,
            0xaa, 0x9b, 0x4e, 0x6a,
        ];
        assert_eq!(
            PrivateKey::from_bytes(private).public_key(),
            PublicKey::from_bytes(public)
        );
    }

    #[test]
    fn base64_round_trip() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let private = PrivateKey::generate(&mut rng);
        let text = private.to_base64();
        assert_eq!(text.len(), KEY_BASE64_LEN);
        let back = PrivateKey::from_base64(&format!("{}\n", &*text)).unwrap();
        assert_eq!(back.as_bytes(), private.as_bytes());
        let public = private.public_key();
        assert_eq!(PublicKey::from_base64(&public.to_base64()), Ok(public));
        assert_eq!(public.to_string().parse::<PublicKey>(), Ok(public));
    }

    #[test]
    fn generated_keys_are_clamped_and_distinct() {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let a = PrivateKey::generate(&mut rng);
        let b = PrivateKey::generate(&mut rng);
        assert_ne!(a.as_bytes(), b.as_bytes());
        assert_eq!(a.as_bytes()[0] & 7, 0);
        assert_eq!(a.as_bytes()[31] & 0xc0, 0x40);
    }

    #[test]
    fn bad_text_rejected() {
        assert_eq!(
            PublicKey::from_base64(""),
            Err(KeyError::WrongLength { got: 0 })
        );
        assert_eq!(
            PublicKey::from_base64("AAAA"),
            Err(KeyError::WrongLength { got: 4 })
        );
        let bad = "!".repeat(KEY_BASE64_LEN);
        assert_eq!(PublicKey::from_base64(&bad), Err(KeyError::InvalidBase64));
        // 44 characters decoding to 31 bytes.
        let short = format!("{}==", "A".repeat(KEY_BASE64_LEN - 2));
        assert_eq!(PublicKey::from_base64(&short), Err(KeyError::InvalidBase64));
        // Non-canonical trailing bits are refused, so each key has one text.
        let sloppy = format!("{}B=", "A".repeat(KEY_BASE64_LEN - 2));
        assert_eq!(
            PublicKey::from_base64(&sloppy),
            Err(KeyError::InvalidBase64)
        );
        let zero = format!("{}=", "A".repeat(KEY_BASE64_LEN - 1));
        assert_eq!(
            PublicKey::from_base64(&zero),
            Ok(PublicKey::from_bytes([0; 32]))
        );
    }

    #[test]
    fn debug_does_not_leak_private_key() {
        let key = PrivateKey::from_bytes([0x41; 32]);
        let shown = format!("{key:?}");
        assert!(!shown.contains(&*key.to_base64()));
        assert!(shown.contains("redacted"));
    }

    #[test]
    fn key_file_mode_policy() {
        assert_eq!(check_key_file_mode(0o600), Ok(()));
        assert_eq!(check_key_file_mode(0o400), Ok(()));
        assert_eq!(check_key_file_mode(0o100600), Ok(()));
        assert_eq!(
            check_key_file_mode(0o644),
            Err(KeyError::InsecureMode { mode: 0o644 })
        );
        assert_eq!(
            check_key_file_mode(0o100640),
            Err(KeyError::InsecureMode { mode: 0o640 })
        );
        assert!(check_key_file_mode(0o601).is_err());
        let msg = check_key_file_mode(0o644).unwrap_err().to_string();
        assert!(msg.contains("chmod 600"), "{msg}");
        assert!(msg.contains("mode 0644 "), "{msg}");
    }
}

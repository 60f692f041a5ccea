//! The run's secret and the handshake that proves it: neither side sends the secret,
//! each signs the other's fresh nonce with it (HMAC-SHA256), so nothing that does not
//! know it can join a run as a shard, or pose as the coordinator and send a shard
//! load to point elsewhere. A recorded handshake replays nothing: the nonces are new
//! every time.

use hmac::{KeyInit, Mac};
use rand::RngCore;

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// The environment variable a shard reads the run's secret from (an argument would
/// show in `ps`).
pub const SECRET_ENV: &str = "HEADROOM_SHARD_SECRET";
/// The fewest characters a secret may have.
pub const MIN_SECRET: usize = 32;

/// A fresh run secret: 32 random bytes, hex (64 characters).
pub fn new_secret() -> String {
    nonce()
}

/// 32 fresh random bytes, hex. `ThreadRng` is a CSPRNG seeded from the OS.
pub fn nonce() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    hex(&bytes)
}

/// Why a secret is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the shard secret has {0} characters; it needs at least {MIN_SECRET} (the coordinator makes a 64-character one)")]
pub struct WeakSecret(pub usize);

/// Checks that `secret` is long enough to be worth anything.
pub fn check_secret(secret: &str) -> Result<(), WeakSecret> {
    match secret.len() >= MIN_SECRET {
        true => Ok(()),
        false => Err(WeakSecret(secret.len())),
    }
}

/// What the coordinator signs: the shard's nonce and who the shard says it is.
pub fn coordinator_mac(secret: &str, shard_nonce: &str, index: u64, count: u64) -> String {
    mac(
        secret,
        &[
            "coordinator",
            shard_nonce,
            &index.to_string(),
            &count.to_string(),
        ],
    )
}

/// What a shard signs: both nonces and who it is.
pub fn shard_mac(secret: &str, nonces: (&str, &str), index: u64, count: u64) -> String {
    let (coordinator, shard) = nonces;
    mac(
        secret,
        &[
            "shard",
            coordinator,
            shard,
            &index.to_string(),
            &count.to_string(),
        ],
    )
}

/// Whether `given` (hex) is the MAC of `expected_parts`, compared in constant time.
pub fn verify(secret: &str, parts: &[&str], given: &str) -> bool {
    let Some(given) = unhex(given) else {
        return false;
    };
    keyed(secret, parts).verify_slice(&given).is_ok()
}

/// The parts [`coordinator_mac`] signs, for [`verify`].
pub fn coordinator_parts(shard_nonce: &str, index: u64, count: u64) -> [String; 4] {
    [
        "coordinator".into(),
        shard_nonce.into(),
        index.to_string(),
        count.to_string(),
    ]
}

/// The parts [`shard_mac`] signs, for [`verify`].
pub fn shard_parts(nonces: (&str, &str), index: u64, count: u64) -> [String; 5] {
    let (coordinator, shard) = nonces;
    [
        "shard".into(),
        coordinator.into(),
        shard.into(),
        index.to_string(),
        count.to_string(),
    ]
}

/// 32 bytes derived from the run's secret for `label` (HMAC-SHA256 keyed with the
/// secret, over a part no MAC of the handshake signs): the seed of the encrypted
/// channel's key pair ([`super::channel`]).
pub fn derive(secret: &str, label: &str) -> [u8; 32] {
    let bytes = keyed(secret, &["derive", label]).finalize().into_bytes();
    let mut seed = [0u8; 32];
    seed.copy_from_slice(&bytes);
    seed
}

fn mac(secret: &str, parts: &[&str]) -> String {
    hex(&keyed(secret, parts).finalize().into_bytes())
}

/// The MAC state over `parts`, each length-prefixed so that no two lists of parts
/// sign the same bytes.
fn keyed(secret: &str, parts: &[&str]) -> HmacSha256 {
    let mut m = HmacSha256::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    for p in parts {
        m.update(&(p.len() as u64).to_be_bytes());
        m.update(p.as_bytes());
    }
    m
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Hex to bytes; `None` for anything else (or more than a MAC's worth).
fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || text.len() > 128 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_secret_signs_and_every_part_counts() {
        let secret = new_secret();
        assert_eq!(secret.len(), 64);
        let (c, s) = (nonce(), nonce());
        let mac = shard_mac(&secret, (&c, &s), 2, 4);
        let parts = shard_parts((&c, &s), 2, 4);
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        assert!(verify(&secret, &parts, &mac));
        assert!(!verify(&new_secret(), &parts, &mac), "another secret");
        let other = shard_parts((&c, &s), 3, 4);
        let other: Vec<&str> = other.iter().map(String::as_str).collect();
        assert!(!verify(&secret, &other, &mac), "another index");
        // The coordinator's MAC over the same nonce is not a shard's.
        let cm = coordinator_mac(&secret, &s, 2, 4);
        assert!(!verify(&secret, &parts, &cm));
        let cp = coordinator_parts(&s, 2, 4);
        let cp: Vec<&str> = cp.iter().map(String::as_str).collect();
        assert!(verify(&secret, &cp, &cm));
    }

    #[test]
    fn hostile_proofs_are_refused() {
        let secret = new_secret();
        for given in ["", "zz", "abc", &"00".repeat(32), &"ab".repeat(4000), "é€"] {
            assert!(!verify(&secret, &["shard"], given), "{given:?}");
        }
        assert_eq!(check_secret("short"), Err(WeakSecret(5)));
        assert!(check_secret(&secret).is_ok());
    }
}

//! `braid keygen`: make a key pair, as `wg genkey | tee key | wg pubkey`.
//!
//! The private key is written with mode 0600 from the start (never
//! world-readable, not even for an instant) and never overwritten unless
//! asked. The public key goes to stdout and to `<FILE>.pub`.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use braid_core::crypto::PrivateKey;
use clap::Args;

use crate::config::load_private_key;
use crate::daemon::os_rng;

/// `braid keygen` flags.
#[derive(Args, Debug)]
pub struct KeygenArgs {
    /// Write the private key to FILE (mode 0600) and the public key to
    /// FILE.pub; print the public key. Without it, print both keys.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Overwrite FILE if it exists.
    #[arg(long, requires = "out")]
    pub force: bool,
    /// Print the public key of an existing private key file instead
    /// (`-`: of the private key on standard input, as `wg pubkey`).
    #[arg(long, value_name = "FILE", conflicts_with = "out")]
    pub public_of: Option<PathBuf>,
}

pub fn run(a: KeygenArgs) -> Result<()> {
    if let Some(p) = a.public_of {
        let key = if p.as_os_str() == "-" {
            let mut text = String::new();
            std::io::Read::read_to_string(
                &mut std::io::Read::take(std::io::stdin(), 4096),
                &mut text,
            )
            .context("cannot read a private key from standard input")?;
            private_key_from_text(&text)?
        } else {
            load_private_key(&p, "--public-of")?
        };
        println!("{}", key.public_key().to_base64());
        return Ok(());
    }
    let key = PrivateKey::generate(&mut os_rng()?);
    let public = key.public_key().to_base64();
    match a.out {
        None => {
            println!("private_key = {}", key.to_base64().as_str());
            println!("public_key = {public}");
        }
        Some(path) => {
            write_private_key(&path, &key, a.force)?;
            let pub_path = pub_path(&path);
            std::fs::write(&pub_path, format!("{public}\n"))
                .with_context(|| format!("cannot write {}", pub_path.display()))?;
            eprintln!(
                "wrote private key to {} (mode 0600) and public key to {}",
                path.display(),
                pub_path.display()
            );
            println!("{public}");
        }
    }
    Ok(())
}

/// A private key as text: the key itself, or the `private_key = KEY` line
/// `braid keygen` prints without `--out`.
pub fn private_key_from_text(text: &str) -> Result<PrivateKey> {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let key = line.strip_prefix("private_key").map_or(line, |rest| {
        rest.trim_start().trim_start_matches('=').trim()
    });
    PrivateKey::from_base64(key).map_err(|e| {
        anyhow::anyhow!(
            "standard input: {e}; pipe in a private key, e.g. `braid keygen --public-of - < FILE`"
        )
    })
}

/// `FILE.pub` next to `FILE`.
pub fn pub_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".pub");
    PathBuf::from(s)
}

/// Writes `key` to `path` with mode 0600.
pub fn write_private_key(path: &Path, key: &PrivateKey, force: bool) -> Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).mode(0o600);
    if force {
        opts.create(true).truncate(true);
    } else {
        opts.create_new(true);
    }
    let mut f = opts.open(path).with_context(|| {
        if path.exists() && !force {
            format!("{} exists; pass --force to overwrite it", path.display())
        } else {
            format!("cannot create {}", path.display())
        }
    })?;
    // An existing file keeps its old mode on open: tighten it.
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    writeln!(f, "{}", key.to_base64().as_str())?;
    f.sync_all()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_key_is_private_and_loads() {
        let dir = std::env::temp_dir().join(format!("braid-keygen-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("a.key");
        let key = PrivateKey::generate(&mut os_rng().unwrap());
        write_private_key(&p, &key, false).unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(
            load_private_key(&p, "k").unwrap().public_key(),
            key.public_key()
        );
        assert!(
            write_private_key(&p, &key, false).is_err(),
            "no silent overwrite"
        );
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_private_key(&p, &key, true).unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "--force tightens the mode");
        assert_eq!(pub_path(&p), dir.join("a.key.pub"));
        let text = std::fs::read_to_string(&p).unwrap();
        let public = key.public_key();
        assert_eq!(private_key_from_text(&text).unwrap().public_key(), public);
        let printed = format!(
            "private_key = {}\npublic_key = x\n",
            key.to_base64().as_str()
        );
        assert_eq!(
            private_key_from_text(&printed).unwrap().public_key(),
            public
        );
        assert!(private_key_from_text("nonsense").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! Fixtures shared by the tests that run this build's binary in network
//! namespaces (root): running a command, and a guard that stops the
//! daemons and removes the namespaces and files of one run when it drops.

// Each test file uses the part it needs.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Output};

/// Runs `args` (program first) and returns what it did.
pub fn sh(args: &[&str]) -> Output {
    Command::new(args[0]).args(&args[1..]).output().unwrap()
}

/// Runs `args`, failing the test with its stderr if it fails; returns
/// its stdout.
pub fn ok(args: &[&str]) -> String {
    let o = sh(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Writes a new private key to `dir/name` with `braid keygen` (this
/// build's binary `braid`) and returns the public key.
pub fn keygen(braid: &str, dir: &std::path::Path, name: &str) -> String {
    ok(&[braid, "keygen", "--out", dir.join(name).to_str().unwrap()])
        .trim()
        .to_string()
}

/// Namespaces, daemons and files of one run; removed on drop.
pub struct Lab {
    pub namespaces: Vec<String>,
    pub dir: PathBuf,
    pub children: Vec<Child>,
}

impl Lab {
    pub fn new(namespaces: Vec<String>, dir: PathBuf) -> Lab {
        Lab {
            namespaces,
            dir,
            children: Vec::new(),
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = sh(&["kill", &c.id().to_string()]);
        }
        for c in &mut self.children {
            let _ = c.wait();
        }
        for ns in &self.namespaces {
            let _ = sh(&["ip", "netns", "del", ns]);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

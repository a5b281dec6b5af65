//! The command-line tool as a user runs it.

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

/// `braid demo --simulate | head -1`: the reader goes away after one line;
/// braid must end on SIGPIPE like any filter, not panic in `println!`.
#[test]
fn closed_stdout_ends_quietly() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(["demo", "--simulate"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run braid");
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("braid demo"), "{first}");
    // The pipe's read end is dropped here.
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    // SIGPIPE, or success if everything was written before the pipe closed.
    assert!(
        out.status.signal() == Some(libc::SIGPIPE) || out.status.success(),
        "{:?}",
        out.status
    );
}

fn braid(args: &[&str], stdin: Option<&str>) -> std::process::Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run braid");
    let mut input = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

/// `braid keygen --public-of -` reads the private key from stdin, as
/// `wg pubkey`, and agrees with `--out`'s public key; `braid showconf`
/// prints the effective configuration with the derived public key and
/// the per-instance defaults.
#[test]
fn keygen_from_stdin_and_showconf() {
    let dir = std::env::temp_dir().join(format!("braid-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let key = dir.join("c.key");
    let o = braid(&["keygen", "--out", key.to_str().unwrap()], None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let public = String::from_utf8(o.stdout).unwrap().trim().to_string();
    let private = std::fs::read_to_string(&key).unwrap();
    let o = braid(&["keygen", "--public-of", "-"], Some(&private));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8(o.stdout).unwrap().trim(), public);
    let o = braid(&["keygen", "--public-of", "-"], Some("not a key\n"));
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("standard input"));

    let cfg = dir.join("laptop.toml");
    std::fs::write(
        &cfg,
        format!(
            "server = \"192.0.2.1:51820\"\nserver_public_key = \"{public}\"\nprivate_key_file = \"c.key\"\n\
             [tun]\nname = \"bond0\"\n[[path]]\nname = \"wlan\"\nbind = \"192.168.1.23\"\n"
        ),
    )
    .unwrap();
    let o = braid(&["showconf", cfg.to_str().unwrap()], None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("role = \"client\""), "{text}");
    assert!(
        text.contains(&format!("public_key = \"{public}\"")),
        "{text}"
    );
    assert!(
        text.contains("control_socket = \"/run/braid/bond0.sock\""),
        "{text}"
    );
    assert!(text.contains("server = \"192.0.2.1:51820\""), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

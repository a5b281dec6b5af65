//! Per-instance state, with the real binary in a network namespace of its
//! own (root): two servers run side by side, each with its own nftables
//! table, TUN device and control socket; a third on a port in use fails
//! with "in use by another process" before it creates a TUN device; SIGHUP
//! stops a server as cleanly as SIGTERM (table and socket removed) and
//! leaves the other's state alone; `braid up` / `braid down` start and
//! stop an instance.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod ns_util;
use ns_util::{keygen, ok, sh, wait_for, Lab};

const BRAID: &str = env!("CARGO_BIN_EXE_braid");

fn wait_exit(c: &mut Child, timeout: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(s) = c.try_wait().unwrap() {
            return s;
        }
        assert!(start.elapsed() < timeout, "the daemon did not exit");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn require_root() {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    assert!(
        root,
        "this test needs root (network namespaces, TUN devices, nftables); run the suite as root"
    );
    for tool in ["ip", "nft"] {
        assert!(
            Command::new(tool).arg("-V").output().is_ok(),
            "`{tool}` is missing; install iproute2 and nftables"
        );
    }
}

fn server_toml(dir: &Path, name: &str, port: u16, client: &str) -> PathBuf {
    let p = dir.join(format!("{name}.toml"));
    std::fs::write(
        &p,
        format!(
            "listen = \"127.0.0.1:{port}\"\nprivate_key_file = \"server.key\"\nnetwork = \"10.{n}.0.0/24\"\n\
             control_socket = \"{d}/{name}.sock\"\n[tun]\nname = \"{name}\"\n[metrics]\nenabled = false\n\
             [nat]\nenabled = true\nout_interface = \"lo\"\n\
             [[client]]\nname = \"lab\"\npublic_key = \"{client}\"\n",
            n = 60 + port % 100,
            d = dir.display()
        ),
    )
    .unwrap();
    p
}

#[test]
#[ignore = "needs root, iproute2 and nftables; .ci/run runs it as root"]
fn two_servers_coexist_and_sighup_cleans_up() {
    require_root();
    let id = std::process::id();
    let dir = std::env::temp_dir().join(format!("braid-instances-{id}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let ns = format!("brinst{id}");
    let mut lab = Lab::new(vec![ns.clone()], dir.clone());
    ok(&["ip", "netns", "add", &ns]);
    ok(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
    let key = |name: &str| keygen(BRAID, &dir, name);
    key("server.key");
    let client = key("client.key");
    let start = |name: &str, port: u16| -> Child {
        let cfg = server_toml(&dir, name, port, &client);
        let log = std::fs::File::create(dir.join(format!("{name}.log"))).unwrap();
        Command::new("ip")
            .args(["netns", "exec", &ns, BRAID, "server", "--config"])
            .arg(cfg)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap()
    };
    let tables = || ok(&["ip", "netns", "exec", &ns, "nft", "list", "tables"]);
    lab.children.push(start("bra0", 51830));
    lab.children.push(start("brb0", 51831));
    for n in ["bra0", "brb0"] {
        wait_for(
            &format!("{n}'s control socket"),
            Duration::from_secs(5),
            || dir.join(format!("{n}.sock")).exists(),
        );
    }
    let t = tables();
    assert!(
        t.contains("table ip braid_bra0") && t.contains("table ip braid_brb0"),
        "{t}"
    );

    // A third server on bra0's port fails, saying why, before it creates
    // its TUN device.
    let mut third = start("brc0", 51830);
    let status = wait_exit(&mut third, Duration::from_secs(5));
    assert!(!status.success());
    let log = std::fs::read_to_string(dir.join("brc0.log")).unwrap();
    assert!(log.contains("in use by another process"), "{log}");
    assert!(
        !sh(&["ip", "-n", &ns, "link", "show", "brc0"])
            .status
            .success(),
        "the TUN device was created: {log}"
    );

    // SIGHUP stops brb0 cleanly; bra0 keeps its table and socket.
    let mut b = lab.children.remove(1);
    ok(&["kill", "-HUP", &b.id().to_string()]);
    let status = wait_exit(&mut b, Duration::from_secs(5));
    assert!(status.success(), "exit status after SIGHUP: {status}");
    let t = tables();
    assert!(!t.contains("braid_brb0"), "{t}");
    assert!(t.contains("table ip braid_bra0"), "{t}");
    assert!(!dir.join("brb0.sock").exists());
    assert!(dir.join("bra0.sock").exists());
    let s = ok(&[
        BRAID,
        "status",
        "--json",
        "--socket",
        dir.join("bra0.sock").to_str().unwrap(),
    ]);
    assert!(s.contains("\"role\": \"server\""), "{s}");

    // `braid up FILE` starts a server in the background and returns once
    // it answers; `braid down FILE` stops it, and it cleans up.
    let cfg = server_toml(&dir, "brd0", 51832, &client);
    let up = ok(&[
        "ip",
        "netns",
        "exec",
        &ns,
        BRAID,
        "up",
        cfg.to_str().unwrap(),
    ]);
    assert!(up.contains("server running"), "{up}");
    assert!(tables().contains("table ip braid_brd0"));
    let down = ok(&[BRAID, "down", cfg.to_str().unwrap()]);
    assert!(down.contains("stopped"), "{down}");
    assert!(!dir.join("brd0.sock").exists());
    wait_for("brd0's table removed", Duration::from_secs(5), || {
        !tables().contains("braid_brd0")
    });
}

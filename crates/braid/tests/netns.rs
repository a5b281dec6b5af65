//! The real thing: `braid server` and `braid client` (this build's binary)
//! in two network namespaces joined by two veth pairs, with kernel TUN
//! devices. Pings cross the tunnel, a link is cut and traffic continues,
//! `braid status` reads both daemons. Needs root (namespaces, TUN), so it
//! is `#[ignore]`d and reported as ignored by a plain `cargo test`;
//! `.ci/run` runs it as root with `--include-ignored`, where anything
//! missing fails it.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

mod ns_util;
use ns_util::{keygen, ok, sh, wait_for, Lab};

const BRAID: &str = env!("CARGO_BIN_EXE_braid");

fn can_run() -> Result<(), String> {
    use braid_lab::preflight::Tool;
    let tools = [
        Tool {
            program: "ip",
            package: "iproute2",
            purpose: "namespaces and veths",
        },
        Tool {
            program: "ping",
            package: "iputils-ping",
            purpose: "traffic through the tunnel",
        },
    ];
    ns_util::can_run(&tools)
}

fn status(socket: &Path) -> serde_json::Value {
    let o = sh(&[
        BRAID,
        "status",
        "--json",
        "--socket",
        socket.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
#[ignore = "needs root, /dev/net/tun, iproute2 and ping (bash .ci/run runs it as root)"]
fn real_tun_in_network_namespaces() {
    if let Err(why) = can_run() {
        panic!("cannot run: {why} (run as root; `bash .ci/run` installs the tools)");
    }
    let id = std::process::id();
    let dir = std::env::temp_dir().join(format!("braid-netns-{id}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (cli, srv) = (format!("brt-c{id}"), format!("brt-s{id}"));
    let mut lab = Lab::new(vec![cli.clone(), srv.clone()], dir.clone());
    ok(&["ip", "netns", "add", &cli]);
    ok(&["ip", "netns", "add", &srv]);
    for ns in [&cli, &srv] {
        ok(&["ip", "-n", ns, "link", "set", "lo", "up"]);
    }
    for i in 1..=2 {
        let (c, s) = (format!("brc{id}x{i}"), format!("brs{id}x{i}"));
        // Interface names are limited to 15 characters.
        let (c, s) = (
            c[..c.len().min(15)].to_string(),
            s[..s.len().min(15)].to_string(),
        );
        ok(&["ip", "link", "add", &c, "type", "veth", "peer", "name", &s]);
        ok(&["ip", "link", "set", &c, "netns", &cli]);
        ok(&["ip", "link", "set", &s, "netns", &srv]);
        ok(&[
            "ip",
            "-n",
            &cli,
            "addr",
            "add",
            &format!("10.88.{i}.2/24"),
            "dev",
            &c,
        ]);
        ok(&[
            "ip",
            "-n",
            &srv,
            "addr",
            "add",
            &format!("10.88.{i}.1/24"),
            "dev",
            &s,
        ]);
        ok(&["ip", "-n", &cli, "link", "set", &c, "up"]);
        ok(&["ip", "-n", &srv, "link", "set", &s, "up"]);
        if i == 1 {
            // A second address on the server's first link: the client
            // talks to it, while the kernel's own choice of source for a
            // reply would be the first one (10.88.1.1).
            ok(&["ip", "-n", &srv, "addr", "add", "10.88.1.9/24", "dev", &s]);
        }
    }
    let key = |name: &str| keygen(BRAID, &dir, name);
    let (spub, cpub) = (key("server.key"), key("client.key"));
    let d = dir.display();
    std::fs::write(
        dir.join("server.toml"),
        format!(
            "listen = \"0.0.0.0:51820\"\nprivate_key_file = \"server.key\"\nnetwork = \"10.77.0.0/24\"\n\
             control_socket = \"{d}/server.sock\"\n[metrics]\nenabled = false\n\
             [[client]]\nname = \"lab\"\npublic_key = \"{cpub}\"\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("client.toml"),
        format!(
            "server = \"10.88.1.9:51820\"\nserver_public_key = \"{spub}\"\nprivate_key_file = \"client.key\"\n\
             control_socket = \"{d}/client.sock\"\n[metrics]\nenabled = false\n\
             [tuning]\nkeepalive_ms = 100\npath_timeout_ms = 400\n\
             [[path]]\nname = \"a\"\nbind = \"10.88.1.2\"\n\
             [[path]]\nname = \"b\"\nbind = \"10.88.2.2\"\nserver = \"10.88.2.1:51820\"\n\
             [[path]]\nname = \"c\"\nbind = \"10.88.3.2\"\nserver = \"10.88.3.1:51820\"\n"
        )
        .replace("", ""),
    )
    .unwrap();
    let spawn = |ns: &str, role: &str| -> Child {
        let log = std::fs::File::create(dir.join(format!("{role}.log"))).unwrap();
        Command::new("ip")
            .args(["netns", "exec", ns, BRAID, role, "--config"])
            .arg(dir.join(format!("{role}.toml")))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap()
    };
    lab.children.push(spawn(&srv, "server"));
    wait_for(
        "the server's control socket",
        Duration::from_secs(5),
        || dir.join("server.sock").exists(),
    );
    lab.children.push(spawn(&cli, "client"));
    let client_sock = dir.join("client.sock");
    wait_for("both paths up", Duration::from_secs(5), || {
        client_sock.exists() && {
            let s = status(&client_sock);
            s["tunnels"][0]["paths"].as_array().is_some_and(|p| {
                // Path c's address does not exist yet: listed as waiting.
                p.len() == 3
                    && p[..2].iter().all(|p| p["up"] == true)
                    && p[2]["waiting"] == "waiting for address 10.88.3.2"
            })
        }
    });
    let ping = |count: &str| {
        sh(&[
            "ip",
            "netns",
            "exec",
            &cli,
            "ping",
            "-c",
            count,
            "-i",
            "0.05",
            "-W",
            "1",
            "10.77.0.1",
        ])
    };
    let o = ping("10");
    assert!(
        o.status.success(),
        "{}\nclient: {}\nserver: {}",
        String::from_utf8_lossy(&o.stdout),
        status(&client_sock),
        status(&dir.join("server.sock"))
    );

    // Cut path b: it goes down, pings keep flowing over a.
    let cb = format!("brc{id}x2");
    let cb = &cb[..cb.len().min(15)];
    ok(&["ip", "-n", &cli, "link", "set", cb, "down"]);
    wait_for("path b down", Duration::from_secs(2), || {
        status(&client_sock)["tunnels"][0]["paths"][1]["up"] == false
    });
    let o = ping("10");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("10 received"), "{out}");
    ok(&["ip", "-n", &cli, "link", "set", cb, "up"]);
    wait_for("path b back", Duration::from_secs(3), || {
        status(&client_sock)["tunnels"][0]["paths"][1]["up"] == true
    });
    // Path c's interface did not exist when the client started; it appears
    // now and joins the running tunnel without a restart.
    let (c3, s3) = (format!("brc{id}x3"), format!("brs{id}x3"));
    let (c3, s3) = (&c3[..c3.len().min(15)], &s3[..s3.len().min(15)]);
    ok(&["ip", "link", "add", c3, "type", "veth", "peer", "name", s3]);
    ok(&["ip", "link", "set", c3, "netns", &cli]);
    ok(&["ip", "link", "set", s3, "netns", &srv]);
    ok(&["ip", "-n", &cli, "addr", "add", "10.88.3.2/24", "dev", c3]);
    ok(&["ip", "-n", &srv, "addr", "add", "10.88.3.1/24", "dev", s3]);
    ok(&["ip", "-n", &cli, "link", "set", c3, "up"]);
    ok(&["ip", "-n", &srv, "link", "set", s3, "up"]);
    wait_for("hot-plugged path c up", Duration::from_secs(5), || {
        status(&client_sock)["tunnels"][0]["paths"]
            .as_array()
            .is_some_and(|p| p.len() == 3 && p.iter().all(|p| p["up"] == true))
    });
    let o = ping("10");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("10 received"), "{out}");

    // Idle, the RTT shown is the veth pair's (tens of microseconds), not
    // the feedback batching delay (up to 40 ms after the pings' small
    // packets).
    wait_for(
        "an idle RTT under 1 ms on every path",
        Duration::from_secs(3),
        || {
            status(&client_sock)["tunnels"][0]["paths"]
                .as_array()
                .is_some_and(|p| {
                    p.iter()
                        .all(|p| p["rtt_ms"].as_f64().is_some_and(|r| r < 1.0))
                })
        },
    );
    // Every reply came from the address the client sent to.
    assert_eq!(status(&client_sock)["counters"]["stray_datagrams"], 0);
    let s = status(&dir.join("server.sock"));
    assert_eq!(s["tunnels"][0]["peer"], "lab");
    assert_eq!(s["counters"]["drop_spoofed"], 0);
    assert_eq!(s["counters"]["drop_auth_failed"], 0);
    // The TUN devices came up with IPv6 already off: no link-local chatter
    // counted as a drop.
    assert_eq!(s["counters"]["drop_not_ipv4"], 0);
    assert_eq!(status(&client_sock)["counters"]["drop_not_ipv4"], 0);
}

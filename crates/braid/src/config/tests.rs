//! Configuration checks: errors name the key and say how to fix it.

use super::*;
use braid_core::sched::SchedulerKind;
use std::io::Write;

const PUB: &str = "HIgo9xNzJMWLKASShiTqIybxZ0U3wGLiUeJ1PKf8ykw=";

struct Dir(PathBuf);
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempdir(tag: &str) -> Dir {
    let d = std::env::temp_dir().join(format!("braid-config-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Dir(d)
}

fn write_key(dir: &Path, mode: u32) -> PathBuf {
    let p = dir.join("k.key");
    let mut f = std::fs::File::create(&p).unwrap();
    writeln!(f, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    p
}

fn server_toml(extra: &str) -> String {
    format!(
        "listen = \"0.0.0.0:51820\"\nprivate_key_file = \"k.key\"\nnetwork = \"10.77.0.0/24\"\n{extra}\n\
         [[client]]\nname = \"laptop\"\npublic_key = \"{PUB}\"\n"
    )
}

fn client_toml(extra: &str) -> String {
    format!(
        "server = \"192.0.2.1:51820\"\nserver_public_key = \"{PUB}\"\nprivate_key_file = \"k.key\"\n{extra}\n\
         [[path]]\nname = \"a\"\nbind = \"127.0.0.1\"\n"
    )
}

/// Writes `text` as `server.toml` in `dir` and loads it.
fn load_server_text(dir: &Path, text: &str) -> Result<ServerSettings> {
    let p = dir.join("server.toml");
    std::fs::write(&p, text).unwrap();
    load_server(&p)
}

fn server_err(dir: &Path, text: &str) -> String {
    format!("{:#}", load_server_text(dir, text).unwrap_err())
}

fn client_err(dir: &Path, text: &str) -> String {
    let p = dir.join("client.toml");
    std::fs::write(&p, text).unwrap();
    format!("{:#}", load_client(&p).unwrap_err())
}

/// `tuning.near_paths_wait` reaches PET's `near_floor`; on by default,
/// and a value that is not a boolean is refused with the key named.
#[test]
fn near_paths_wait_sets_pets_near_floor() {
    let d = tempdir("near");
    write_key(&d.0, 0o600);
    let load = |tuning: &str| load_server_text(&d.0, &server_toml(tuning));
    assert!(load("").unwrap().core.conn.pet.near_floor);
    let off = load("[tuning]\nnear_paths_wait = false").unwrap();
    assert!(!off.core.conn.pet.near_floor);
    let err = format!("{:#}", load("[tuning]\nnear_paths_wait = 1").unwrap_err());
    assert!(err.contains("near_paths_wait"), "{err}");
}

/// `tuning.compress_headers` turns inner header compression off (it is
/// on by default); a value that is not a boolean names the key.
#[test]
fn compress_headers_is_on_unless_turned_off() {
    let d = tempdir("compress");
    write_key(&d.0, 0o600);
    let load = |tuning: &str| load_server_text(&d.0, &server_toml(tuning));
    assert!(load("").unwrap().core.conn.compress_headers);
    let off = load("[tuning]\ncompress_headers = false").unwrap();
    assert!(!off.core.conn.compress_headers);
    let err = format!(
        "{:#}",
        load("[tuning]\ncompress_headers = \"no\"").unwrap_err()
    );
    assert!(err.contains("compress_headers"), "{err}");
}

/// `tuning.startup_hold_ms` sets the client's startup hold (1 s by
/// default, 0 turns it off); a value past 10 s is refused with the key
/// and the range named.
#[test]
fn startup_hold_ms_sets_the_hold() {
    let d = tempdir("startup");
    write_key(&d.0, 0o600);
    let load = |tuning: &str| load_server_text(&d.0, &server_toml(tuning));
    let ms = |v: u64| braid_core::time::Duration::from_millis(v);
    assert_eq!(load("").unwrap().core.conn.startup_hold, ms(1000));
    let off = load("[tuning]\nstartup_hold_ms = 0").unwrap();
    assert_eq!(off.core.conn.startup_hold, ms(0));
    let err = format!(
        "{:#}",
        load("[tuning]\nstartup_hold_ms = 20000").unwrap_err()
    );
    assert!(
        err.contains("startup_hold_ms") && err.contains("0..10000"),
        "{err}"
    );
}

#[test]
fn valid_files_load() {
    let d = tempdir("ok");
    write_key(&d.0, 0o600);
    let p = d.0.join("server.toml");
    std::fs::write(
        &p,
        server_toml("scheduler = \"edpf\"\n[tuning]\nkeepalive_ms = 100"),
    )
    .unwrap();
    let s = load_server(&p).unwrap();
    assert_eq!(s.core.conn.scheduler, SchedulerKind::Edpf);
    assert_eq!(s.core.conn.keepalive_interval, Duration::from_millis(100));
    assert_eq!(s.core.conn.inner_mtu, 1438);
    assert_eq!(s.metrics, Some("127.0.0.1:9184".parse().unwrap()));
    let p = d.0.join("client.toml");
    std::fs::write(
        &p,
        client_toml(
            "routes = [\"10.0.0.0/8\", \"198.51.100.7/32\", \"0.0.0.0/0\"]\n[metrics]\nenabled = false",
        ),
    )
    .unwrap();
    let c = load_client(&p).unwrap();
    assert_eq!(c.paths.len(), 1);
    assert_eq!(c.paths[0].server, "192.0.2.1:51820".parse().unwrap());
    assert_eq!(c.metrics, None);
    assert_eq!(c.routes.len(), 3);
    assert_eq!(c.routes[1].prefix_len(), 32);
}

#[test]
fn errors_name_the_key() {
    let d = tempdir("err");
    write_key(&d.0, 0o600);
    let cases_server = [
        (server_toml("lisen = 1"), "unknown field `lisen`"),
        (server_toml("scheduler = \"fastest\""), "`scheduler`"),
        (
            server_toml("[tuning]\npath_timeout_ms = 100"),
            "`tuning.path_timeout_ms`",
        ),
        (server_toml("[tun]\nmtu = 100"), "`tun.mtu`"),
        (server_toml("[nat]\nenabled = true"), "`nat.out_interface`"),
        (
            server_toml("[metrics]\nlisten = \"localhost\""),
            "`metrics.listen`",
        ),
        (
            server_toml("").replace("10.77.0.0/24", "10.77.0.1/24"),
            "`network`",
        ),
        (
            server_toml("").replace("0.0.0.0:51820", "0.0.0.0"),
            "`listen`",
        ),
        (
            server_toml("").replace(PUB, "nope"),
            "`client[0].public_key`",
        ),
        (
            server_toml("").replace(
                "name = \"laptop\"",
                "name = \"laptop\"\naddress = \"10.77.0.1\"",
            ),
            "`client[].address`",
        ),
        (
            server_toml("[tuning]\nkeepalive = 5"),
            "unknown field `keepalive`",
        ),
        (
            server_toml("[tuning]\nrepair = \"fast\""),
            "`tuning.repair`: unknown mode `fast`",
        ),
        (
            server_toml("[tuning]\nreorder = \"prism\""),
            "`tuning.reorder`: unknown mode `prism`",
        ),
        (
            server_toml("[tuning]\nreorder_max_hold_ms = 5"),
            "`tuning.reorder_max_hold_ms`",
        ),
    ];
    for (text, want) in cases_server {
        let e = server_err(&d.0, &text);
        assert!(e.contains(want), "want {want:?} in: {e}");
    }
    let missing = server_err(&d.0, "listen = \"0.0.0.0:1\"");
    assert!(
        missing.contains("missing field `private_key_file`"),
        "{missing}"
    );
    let cases_client = [
        (
            client_toml("").replace("bind = \"127.0.0.1\"", "bind = \"wlan0\""),
            "`path[0].bind`",
        ),
        (
            client_toml("").replace("bind = \"127.0.0.1\"", ""),
            "`path[0]`",
        ),
        (client_toml("routes = [\"10.0.0.0\"]"), "`routes[0]`"),
        (
            client_toml("").replace("192.0.2.1:51820", "example.org"),
            "`server`",
        ),
        (client_toml("").replace(PUB, "x"), "`server_public_key`"),
        (
            client_toml("[tuning]\nfeedback_max_entries = 0"),
            "`tuning.feedback_max_entries`",
        ),
        (
            client_toml("[tuning]\nfeedback_max_delay_small_us = 300000"),
            "`tuning.feedback_max_delay_small_us`",
        ),
    ];
    for (text, want) in cases_client {
        let e = client_err(&d.0, &text);
        assert!(e.contains(want), "want {want:?} in: {e}");
    }
}

/// The shipped examples are valid (with a real key file swapped in).
#[test]
fn examples_are_valid() {
    let d = tempdir("examples");
    let key = write_key(&d.0, 0o600);
    let mut s: ServerFile =
        toml::from_str(include_str!("../../../../examples/server.toml")).unwrap();
    s.private_key_file = key.clone();
    // The placeholder keys are refused, naming the field and the fix.
    let mut placeholder: ServerFile =
        toml::from_str(include_str!("../../../../examples/server.toml")).unwrap();
    placeholder.private_key_file = key.clone();
    let e = format!("{:#}", server_settings(placeholder, &d.0).unwrap_err());
    assert!(
        e.contains("`client[0].public_key` (laptop)") && e.contains("placeholder"),
        "{e}"
    );
    s.clients[0].public_key = PUB.into();
    let s = server_settings(s, &d.0).unwrap();
    assert_eq!(s.core.clients[0].address, Some(Ipv4Addr::new(10, 77, 0, 2)));
    let mut c: ClientFile =
        toml::from_str(include_str!("../../../../examples/client.toml")).unwrap();
    c.private_key_file = key;
    let mut placeholder: ClientFile =
        toml::from_str(include_str!("../../../../examples/client.toml")).unwrap();
    placeholder.private_key_file = c.private_key_file.clone();
    let e = format!("{:#}", client_settings(placeholder, &d.0).unwrap_err());
    assert!(
        e.contains("`server_public_key`") && e.contains("placeholder") && e.contains("--public-of"),
        "{e}"
    );
    c.server_public_key = PUB.into();
    let c = client_settings(c, &d.0).unwrap();
    assert_eq!(c.paths.len(), 3);
    assert_eq!(c.conn.inner_mtu, 1438);
}

#[test]
fn private_key_readable_by_others_is_refused() {
    let d = tempdir("mode");
    write_key(&d.0, 0o644);
    let e = server_err(&d.0, &server_toml(""));
    assert!(e.contains("`private_key_file`"), "{e}");
    assert!(e.contains("chmod 600"), "{e}");
    assert!(e.contains("k.key"), "{e}");
    let p = write_key(&d.0, 0o600);
    assert!(load_private_key(&p, "private_key_file").is_ok());
    std::fs::remove_file(&p).unwrap();
    let e = format!(
        "{:#}",
        load_private_key(&p, "private_key_file").unwrap_err()
    );
    assert!(e.contains("braid keygen"), "{e}");
}

#[test]
fn redundancy_section() {
    let d = tempdir("redundancy");
    write_key(&d.0, 0o600);
    let p = d.0.join("client.toml");
    std::fs::write(
        &p,
        client_toml(
            "[redundancy]\nenabled = true\ncopies = 3\nports = [22, 5060]\ninteractive_max_kbps = 64\nspike_delay_ms = 50",
        ),
    )
    .unwrap();
    let r = load_client(&p).unwrap().conn.redundancy;
    assert!(r.enabled);
    assert_eq!(r.copies, 3);
    assert_eq!(r.ports, vec![22, 5060]);
    assert_eq!(r.interactive_max_bps, 64_000);
    assert_eq!(r.spike_delay, Duration::from_millis(50));
    // Off unless asked for.
    std::fs::write(&p, client_toml("")).unwrap();
    assert!(!load_client(&p).unwrap().conn.redundancy.enabled);
    let p = d.0.join("server.toml");
    std::fs::write(&p, server_toml("[redundancy]\nenabled = true\ndns = false")).unwrap();
    let r = load_server(&p).unwrap().core.conn.redundancy;
    assert!(r.enabled && !r.dns);
    for (text, key) in [
        ("[redundancy]\ncopies = 1", "`redundancy.copies`"),
        ("[redundancy]\nports = [0]", "`redundancy.ports[0]`"),
        ("[redundancy]\nspike_loss = 0.0", "`redundancy.spike_loss`"),
        (
            "[redundancy]\nspike_delay_ms = 0",
            "`redundancy.spike_delay_ms`",
        ),
        (
            "[redundancy]\nmax_spike_share = -1.0",
            "`redundancy.max_spike_share`",
        ),
        ("[redundancy]\nenabeld = true", "unknown field `enabeld`"),
    ] {
        let e = client_err(&d.0, &client_toml(text));
        assert!(e.contains(key), "{text}: {e}");
    }
}

#[test]
fn reorder_modes() {
    use braid_core::reorder::ReorderMode;
    let d = tempdir("reorder");
    write_key(&d.0, 0o600);
    let p = d.0.join("client.toml");
    for (text, mode, rpc) in [
        ("", ReorderMode::Bmp, false),
        ("reorder = \"bmp\"", ReorderMode::Bmp, false),
        ("reorder = true", ReorderMode::Bmp, false),
        ("reorder = \"off\"", ReorderMode::Off, false),
        ("reorder = false", ReorderMode::Off, false),
        ("reorder = \"prism-rpc\"", ReorderMode::Off, true),
    ] {
        std::fs::write(&p, client_toml(&format!("[tuning]\n{text}"))).unwrap();
        let c = load_client(&p).unwrap().conn;
        assert_eq!(c.receiver.reorder.mode, mode, "{text}");
        assert_eq!(c.rpc.is_some(), rpc, "{text}");
    }
}

//! Preflight: before the lab creates anything, check that every program it
//! will start can be found, and say exactly what to install when one
//! cannot.
//!
//! Why a separate step: the lab shells out to several programs (iproute2,
//! ethtool, iperf3, procps's sysctl, mptcpize). Discovering a
//! missing one halfway through `up` leaves the user with a half-built lab
//! and, worse, an error that may look like a network fault ("not
//! reachable") when the real cause is a program that never started. Every
//! program is therefore looked up on `PATH` first, the same way
//! [`std::process::Command`] will look it up, and named together with the
//! Debian package that provides it.
//!
//! The lookup takes the search path as a parameter ([`Lookup`]) so that
//! tests can run the preflight with a `PATH` lacking each program in turn,
//! without root and without touching the machine.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// A program the lab starts, and the Debian package that provides it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tool {
    /// Name looked up on `PATH`.
    pub program: &'static str,
    /// Debian/Ubuntu package (`apt-get install <package>`).
    pub package: &'static str,
    /// What the lab uses it for (shown in messages).
    pub purpose: &'static str,
}

/// Programs every lab run starts (`up`, `down`, the `single-best` and braid
/// bench modes, the demo). Reachability of the tunnel is checked in-process
/// ([`crate::probe`]), so `ping` is not among them.
pub const LAB_TOOLS: &[Tool] = &[
    Tool {
        program: "ip",
        package: "iproute2",
        purpose: "namespaces, veths and routes",
    },
    Tool {
        program: "ss",
        package: "iproute2",
        purpose: "waiting for iperf3's listening socket",
    },
    Tool {
        program: "sysctl",
        package: "procps",
        purpose: "per-namespace forwarding and rp_filter",
    },
    Tool {
        program: "ethtool",
        package: "ethtool",
        purpose: "turning veth offloads off",
    },
    Tool {
        program: "iperf3",
        package: "iperf3",
        purpose: "the TCP measurements",
    },
];

/// Extra program of the `mptcp` bench mode (kernel MPTCP for iperf3).
///
/// Debian ships `mptcpize` in a package of its own since Debian 13 (in
/// Debian 12 it came with `mptcpd`, which no longer has it).
pub const MPTCP_TOOLS: &[Tool] = &[Tool {
    program: "mptcpize",
    package: "mptcpize",
    purpose: "running iperf3 over kernel MPTCP",
}];

/// The programs a lab run needs: [`LAB_TOOLS`], plus [`MPTCP_TOOLS`] when
/// the `mptcp` mode is asked for.
pub fn required_tools(mptcp: bool) -> Vec<Tool> {
    let mut v = LAB_TOOLS.to_vec();
    if mptcp {
        v.extend_from_slice(MPTCP_TOOLS);
    }
    v
}

/// Where programs are looked up: the directories of a `PATH` value.
#[derive(Debug, Clone)]
pub struct Lookup {
    path: OsString,
}

impl Lookup {
    /// The process's own `PATH` (what [`std::process::Command`] uses).
    pub fn from_env() -> Lookup {
        Lookup {
            path: std::env::var_os("PATH").unwrap_or_default(),
        }
    }

    /// An explicit `PATH` value (`dir1:dir2:...`).
    pub fn with_path(path: impl AsRef<OsStr>) -> Lookup {
        Lookup {
            path: path.as_ref().to_os_string(),
        }
    }

    /// Full path of `program` if an executable file of that name is on the
    /// path.
    pub fn find(&self, program: &str) -> Option<PathBuf> {
        use std::os::unix::fs::PermissionsExt;
        std::env::split_paths(&self.path)
            .map(|d| d.join(program))
            .find(|f| {
                std::fs::metadata(f)
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
    }

    /// The tools of `tools` that cannot be found, in order.
    pub fn missing(&self, tools: &[Tool]) -> Vec<Tool> {
        tools
            .iter()
            .filter(|t| self.find(t.program).is_none())
            .copied()
            .collect()
    }
}

/// Distinct packages providing `tools`, in order.
pub fn packages(tools: &[Tool]) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = Vec::new();
    for t in tools {
        if !v.contains(&t.package) {
            v.push(t.package);
        }
    }
    v
}

/// "`iperf3` (the TCP measurements), `ethtool` (...)".
fn describe(tools: &[Tool]) -> String {
    tools
        .iter()
        .map(|t| format!("`{}` ({})", t.program, t.purpose))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One line saying what is missing and exactly how to install it.
pub fn missing_message(missing: &[Tool]) -> String {
    format!(
        "the lab needs {} which {} not found on PATH; install with `apt-get install {}`",
        describe(missing),
        if missing.len() == 1 { "is" } else { "are" },
        packages(missing).join(" ")
    )
}

/// Installs Debian packages; returns an error text if it could not.
pub type Installer<'a> = &'a dyn Fn(&[&str]) -> Result<(), String>;

/// Check `tools` on `lookup`. If some are missing and `install` is given
/// (root with apt-get), print one line saying what is being installed, run
/// it and check again. Returns one line naming what is missing and what to
/// install when the tools cannot be had.
pub fn ensure(tools: &[Tool], lookup: &Lookup, install: Option<Installer>) -> Result<(), String> {
    let missing = lookup.missing(tools);
    if missing.is_empty() {
        return Ok(());
    }
    let Some(install) = install else {
        return Err(missing_message(&missing));
    };
    let pkgs = packages(&missing);
    println!(
        "braid lab: installing {} with apt-get (for {})",
        pkgs.join(" "),
        missing
            .iter()
            .map(|t| t.program)
            .collect::<Vec<_>>()
            .join(", ")
    );
    if let Err(e) = install(&pkgs) {
        return Err(format!(
            "{} (installing failed: {e})",
            missing_message(&missing)
        ));
    }
    let still = lookup.missing(tools);
    if still.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} (apt-get ran, but they are still not on PATH)",
            missing_message(&still)
        ))
    }
}

/// True when running as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Install `packages` with apt-get (`apt-get update` first, so that a fresh
/// machine with empty package lists can install). Output is kept quiet;
/// on failure the error carries apt-get's last lines.
pub fn apt_install(packages: &[&str]) -> Result<(), String> {
    let apt = Lookup::from_env()
        .find("apt-get")
        .ok_or_else(|| "apt-get not found (not a Debian-like system)".to_string())?;
    let run = |args: &[&str]| -> Result<(), String> {
        let out = std::process::Command::new(&apt)
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("cannot start {}: {e}", apt.display()))?;
        if out.status.success() {
            return Ok(());
        }
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(2).collect();
        Err(format!(
            "`apt-get {}` failed ({}): {}",
            args.join(" "),
            out.status,
            tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
        ))
    };
    run(&["update", "-qq"])?;
    let mut args = vec!["install", "-y", "-qq", "--no-install-recommends"];
    args.extend_from_slice(packages);
    run(&args)
}

/// The preflight of `braid lab up` / `braid lab bench` / the demo on this
/// machine: root is required (namespaces), the tools are installed with
/// apt-get when missing, then namespace support is probed.
pub fn lab_preflight(mptcp: bool) -> Result<(), String> {
    if !is_root() {
        return Err(
            "not running as root (network namespaces need CAP_SYS_ADMIN/CAP_NET_ADMIN)".into(),
        );
    }
    let installer: Installer = &apt_install;
    let can_apt = Lookup::from_env().find("apt-get").is_some();
    ensure(
        &required_tools(mptcp),
        &Lookup::from_env(),
        can_apt.then_some(installer),
    )?;
    crate::topo::check_environment()
}

/// Test helper: a directory holding an executable stub for every program
/// of `tools` except `except`, to use as a `PATH`.
pub fn stub_path_dir(dir: &Path, tools: &[Tool], except: Option<&str>) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    for t in tools {
        let f = dir.join(t.program);
        if Some(t.program) == except {
            let _ = std::fs::remove_file(&f);
            continue;
        }
        std::fs::write(&f, "#!/bin/sh\nexit 0\n")?;
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tempdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("braid-preflight-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn each_missing_program_is_named_with_its_package() {
        let tools = required_tools(true);
        let dir = tempdir("each");
        for t in &tools {
            stub_path_dir(&dir, &tools, Some(t.program)).unwrap();
            let lookup = Lookup::with_path(&dir);
            let err = ensure(&tools, &lookup, None).unwrap_err();
            assert!(err.contains(&format!("`{}`", t.program)), "{err}");
            assert!(
                err.contains(&format!("apt-get install {}", t.package)),
                "{err}"
            );
            assert!(!err.contains('\n'), "one line: {err}");
        }
        stub_path_dir(&dir, &tools, None).unwrap();
        assert_eq!(ensure(&tools, &Lookup::with_path(&dir), None), Ok(()));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn mptcpize_is_needed_only_for_the_mptcp_mode() {
        let dir = tempdir("mptcp");
        stub_path_dir(&dir, &required_tools(false), None).unwrap();
        let lookup = Lookup::with_path(&dir);
        assert!(ensure(&required_tools(false), &lookup, None).is_ok());
        let err = ensure(&required_tools(true), &lookup, None).unwrap_err();
        assert!(
            err.contains("`mptcpize`") && err.contains("install mptcpize"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn installer_is_asked_for_each_package_once_and_result_rechecked() {
        let dir = tempdir("install");
        let tools = required_tools(false);
        stub_path_dir(&dir, &tools, None).unwrap();
        std::fs::remove_file(dir.join("ip")).unwrap();
        std::fs::remove_file(dir.join("ss")).unwrap();
        let lookup = Lookup::with_path(&dir);
        let asked = std::cell::RefCell::new(Vec::new());
        // An installer that "installs" nothing: the recheck must notice.
        let noop = |p: &[&str]| -> Result<(), String> {
            asked.borrow_mut().extend(p.iter().map(|s| s.to_string()));
            Ok(())
        };
        let err = ensure(&tools, &lookup, Some(&noop)).unwrap_err();
        assert_eq!(*asked.borrow(), vec!["iproute2".to_string()]);
        assert!(
            err.contains("`ip`") && err.contains("still not on PATH"),
            "{err}"
        );
        // One that does install: then the preflight passes.
        let real = |_: &[&str]| -> Result<(), String> {
            stub_path_dir(&dir, &tools, None).map_err(|e| e.to_string())
        };
        assert_eq!(ensure(&tools, &lookup, Some(&real)), Ok(()));
        // One that fails: its error is in the message.
        std::fs::remove_file(dir.join("iperf3")).unwrap();
        let fail = |_: &[&str]| -> Result<(), String> { Err("no network".into()) };
        let err = ensure(&tools, &lookup, Some(&fail)).unwrap_err();
        assert!(
            err.contains("`iperf3`") && err.contains("no network"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_non_executable_file_does_not_count() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempdir("noexec");
        stub_path_dir(&dir, LAB_TOOLS, None).unwrap();
        std::fs::set_permissions(dir.join("ethtool"), std::fs::Permissions::from_mode(0o644))
            .unwrap();
        let missing = Lookup::with_path(&dir).missing(LAB_TOOLS);
        assert_eq!(missing.len(), 1);
        assert_eq!(missing[0].program, "ethtool");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

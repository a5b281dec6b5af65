//! Running external tools (`ip`, `ethtool`, `iperf3`, ...) with errors that
//! quote the failing command and its stderr, plus [`NsProcess`], a child
//! process running inside a lab namespace that is stopped when dropped.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

fn render(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Run `argv`; fail with the command line and its stderr if it exits
/// non-zero. Returns stdout.
pub fn run<S: AsRef<OsStr>>(argv: &[S]) -> anyhow::Result<String> {
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]);
    run_cmd(&mut cmd)
}

/// Like [`run`] for a prepared [`Command`].
pub fn run_cmd(cmd: &mut Command) -> anyhow::Result<String> {
    let line = render(cmd);
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot start `{line}` (is it installed?)"))?;
    if !out.status.success() {
        bail!(
            "`{line}` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Run and ignore failure (used for best-effort cleanup).
pub fn run_quiet<S: AsRef<OsStr>>(argv: &[S]) -> bool {
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd.status().map(|s| s.success()).unwrap_or(false)
}

/// `ip netns exec <ns> <argv...>` as a [`Command`].
pub fn ns_command<S: AsRef<OsStr>>(ns: &str, argv: &[S]) -> Command {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", ns]).args(argv);
    cmd
}

/// Run `argv` inside namespace `ns`, returning stdout.
pub fn ns_run<S: AsRef<OsStr>>(ns: &str, argv: &[S]) -> anyhow::Result<String> {
    run_cmd(&mut ns_command(ns, argv))
}

/// Send `sig` to `pid`; true if the process existed.
pub fn signal(pid: i32, sig: libc::c_int) -> bool {
    // SAFETY: kill(2) with a concrete pid (never 0 or -1).
    pid > 0 && unsafe { libc::kill(pid, sig) } == 0
}

/// True if `pid` exists and is not a zombie. Reaps it if it is our child.
pub fn alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: non-blocking waitpid on a specific pid; ECHILD if not ours.
    unsafe {
        let mut st = 0;
        libc::waitpid(pid, &mut st, libc::WNOHANG);
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => {
            // state is the field after the ")" closing the command name.
            let state = s
                .rsplit_once(')')
                .and_then(|(_, r)| r.split_whitespace().next())
                .unwrap_or("");
            state != "Z" && state != "X"
        }
        Err(_) => false,
    }
}

/// Stop `pid`: SIGTERM, wait up to `grace`, then SIGKILL and wait.
pub fn stop_pid(pid: i32, grace: Duration) {
    if !alive(pid) {
        return;
    }
    signal(pid, libc::SIGTERM);
    let t0 = Instant::now();
    while alive(pid) && t0.elapsed() < grace {
        std::thread::sleep(Duration::from_millis(10));
    }
    if alive(pid) {
        signal(pid, libc::SIGKILL);
        let t1 = Instant::now();
        while alive(pid) && t1.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// A process started inside a lab namespace. Dropping it stops it
/// (SIGTERM, then SIGKILL), so an early return or a panic in a test does not
/// leave iperf3 or tunnel daemons behind.
#[derive(Debug)]
pub struct NsProcess {
    child: Option<Child>,
    pub label: String,
}

impl NsProcess {
    /// Start `argv` in namespace `ns` via `ip netns exec` (which execs, so
    /// the pid is the program's). stdout/stderr go to `log` if given, else
    /// are discarded. The process gets its own process group so terminal
    /// signals aimed at the caller do not hit it.
    pub fn spawn<S: AsRef<OsStr>>(
        ns: &str,
        argv: &[S],
        log: Option<&Path>,
    ) -> anyhow::Result<NsProcess> {
        use std::os::unix::process::CommandExt;
        let mut cmd = ns_command(ns, argv);
        let label = render(&cmd);
        cmd.stdin(Stdio::null()).process_group(0);
        match log {
            Some(p) => {
                let f = std::fs::File::create(p)
                    .with_context(|| format!("creating {}", p.display()))?;
                cmd.stdout(f.try_clone()?).stderr(f);
            }
            None => {
                cmd.stdout(Stdio::null()).stderr(Stdio::null());
            }
        }
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start `{label}`"))?;
        Ok(NsProcess {
            child: Some(child),
            label,
        })
    }

    /// Wrap an already spawned child.
    pub fn from_child(child: Child, label: impl Into<String>) -> NsProcess {
        NsProcess {
            child: Some(child),
            label: label.into(),
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().map_or(0, |c| c.id() as i32)
    }

    /// Exit status if it has finished.
    pub fn try_wait(&mut self) -> Option<std::process::ExitStatus> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
    }

    /// Wait for the process to exit by itself (up to `timeout`), else stop it.
    pub fn wait_timeout(mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let t0 = Instant::now();
        while t0.elapsed() < timeout {
            if let Some(s) = self.try_wait() {
                self.child = None;
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// Leave the process running after drop (e.g. the emulator daemon,
    /// which `down` stops via its pid file).
    pub fn detach(mut self) -> i32 {
        let pid = self.pid();
        self.child = None;
        pid
    }

    /// Stop now (also done on drop).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            stop_pid(c.id() as i32, Duration::from_millis(500));
            let _ = c.try_wait();
        }
    }
}

impl Drop for NsProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

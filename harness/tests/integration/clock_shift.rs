//! Moving the clocks of real processes through their vDSO (root): a Python program reading
//! time.time() / time.monotonic() through libc, and a busy Go program (Go calls the vDSO
//! itself). Servers (etcd, ZooKeeper) are in `clock_shift_servers.rs`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use lockpick::bad_input::BadInput;
use lockpick::clock_shift::{inject, Clocks, Restoration};

const SHIFT_NS: i64 = 30_000_000_000;

fn root() -> bool {
    nix::unistd::geteuid().is_root()
}

fn now_wall() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn now_monotonic() -> f64 {
    let ts = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).unwrap();
    ts.tv_sec() as f64 + ts.tv_nsec() as f64 / 1e9
}

/// Kills and reaps a child when dropped.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// How far a process's clocks are from ours, as it printed them.
#[derive(Debug)]
struct Skew {
    wall: f64,
    monotonic: f64,
    thread_cpu: f64,
}

/// A Python program printing its wall clock, monotonic clock and its thread's CPU clock (a
/// negative clock id) every 100 ms. It waits with select's relative timeout: time.sleep
/// sleeps until a monotonic deadline, which a moved monotonic clock puts 30 s away.
fn python_clock() -> (Reaped, Receiver<Skew>) {
    let script = "import select, threading, time\n\
                  cpu = time.pthread_getcpuclockid(threading.get_ident())\n\
                  while True:\n    \
                      print(time.time(), time.monotonic(), time.clock_gettime(cpu), flush=True)\n    \
                      select.select([], [], [], 0.1)\n";
    let mut child = Command::new("/usr/bin/python3")
        .args(["-c", script])
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            let fields: Vec<f64> = line
                .split_whitespace()
                .filter_map(|f| f.parse().ok())
                .collect();
            let [wall, monotonic, thread_cpu] = fields[..] else {
                continue;
            };
            let skew = Skew {
                wall: wall - now_wall(),
                monotonic: monotonic - now_monotonic(),
                thread_cpu,
            };
            if tx.send(skew).is_err() {
                return;
            }
        }
    });
    (Reaped(child), rx)
}

/// Waits (generously) for a reading that satisfies `wanted`; panics with the last one seen.
fn wait_for<T: std::fmt::Debug>(rx: &Receiver<T>, what: &str, wanted: impl Fn(&T) -> bool) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = None;
    while Instant::now() < deadline {
        match rx.recv_timeout(Duration::from_secs(1)) {
            Ok(reading) if wanted(&reading) => return reading,
            Ok(reading) => last = Some(reading),
            Err(_) => {}
        }
    }
    panic!("no reading showed {what} within 30 s; last: {last:?}");
}

fn near(value: f64, target: f64) -> bool {
    (value - target).abs() < 3.0
}

#[test]
fn a_python_processs_wall_clock_jumps_and_comes_back() {
    if !root() {
        eprintln!("skipped: needs root");
        return;
    }
    let (child, rx) = python_clock();
    wait_for(&rx, "true time", |s| near(s.wall, 0.0));
    let mut shifted = inject(child.0.id() as i32, Clocks::Wall).expect("inject");
    wait_for(&rx, "true time after the patch", |s| near(s.wall, 0.0));

    shifted.set_offset(SHIFT_NS).unwrap();
    let jumped = wait_for(&rx, "the wall clock 30 s ahead", |s| near(s.wall, 30.0));
    assert!(
        near(jumped.monotonic, 0.0),
        "the monotonic clock moved: {jumped:?}"
    );
    assert!(
        jumped.thread_cpu < 10.0,
        "a thread's CPU clock (a negative id) moved: {jumped:?}"
    );

    shifted.set_offset(-SHIFT_NS).unwrap();
    wait_for(&rx, "the wall clock 30 s behind", |s| near(s.wall, -30.0));
    shifted.set_offset(0).unwrap();
    wait_for(&rx, "true time again", |s| near(s.wall, 0.0));

    shifted.set_offset(SHIFT_NS).unwrap();
    wait_for(&rx, "the wall clock ahead once more", |s| {
        near(s.wall, 30.0)
    });
    assert_eq!(shifted.restore().unwrap(), Restoration::Restored);
    wait_for(&rx, "true time after restore", |s| near(s.wall, 0.0));
    // Still alive and reading its clock through the vDSO's own code.
    for _ in 0..3 {
        let after = wait_for(&rx, "a reading", |_| true);
        assert!(near(after.wall, 0.0), "{after:?}");
    }
}

#[test]
fn the_monotonic_clock_moves_only_when_asked() {
    if !root() {
        eprintln!("skipped: needs root");
        return;
    }
    let (child, rx) = python_clock();
    wait_for(&rx, "true time", |s| near(s.wall, 0.0));
    let mut shifted = inject(child.0.id() as i32, Clocks::WallAndMonotonic).expect("inject");
    shifted.set_offset(SHIFT_NS).unwrap();
    let both = wait_for(&rx, "both clocks ahead", |s| near(s.monotonic, 30.0));
    assert!(near(both.wall, 30.0), "{both:?}");
    assert!(both.thread_cpu < 10.0, "{both:?}");
    assert_eq!(shifted.restore().unwrap(), Restoration::Restored);
    wait_for(&rx, "both clocks back", |s| {
        near(s.monotonic, 0.0) && near(s.wall, 0.0)
    });
}

/// A `sleep 30`, once it has become sleep and has its vDSO (until then the child is a copy of
/// this test on its way through exec, which names the new program before it maps the vDSO).
fn sleeping() -> Child {
    let child = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(10);
    let exec_done = || {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
        comm == "sleep\n" && maps.contains("[vdso]")
    };
    while !exec_done() {
        assert!(Instant::now() < deadline, "sleep never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    child
}

/// Lets go of a process this test seized.
fn let_go(pid: nix::unistd::Pid) {
    use nix::sys::wait::{waitpid, WaitPidFlag};
    nix::sys::ptrace::interrupt(pid).unwrap();
    waitpid(pid, Some(WaitPidFlag::__WALL)).unwrap();
    nix::sys::ptrace::detach(pid, None).unwrap();
}

#[test]
fn a_patched_or_traced_process_is_refused_as_bad_input() {
    if !root() {
        eprintln!("skipped: needs root");
        return;
    }
    let child = Reaped(sleeping());
    let pid = child.0.id() as i32;
    let mut shifted =
        inject(pid, Clocks::Wall).unwrap_or_else(|e| panic!("inject into sleep: {e:#}"));
    shifted.set_offset(SHIFT_NS).unwrap();
    let twice = inject(pid, Clocks::Wall)
        .err()
        .expect("a second patch is refused");
    assert!(
        format!("{twice:#}").contains("shifted already"),
        "{twice:#}"
    );
    assert!(twice.downcast_ref::<BadInput>().is_some(), "{twice:#}");
    assert_eq!(shifted.restore().unwrap(), Restoration::Restored);

    // Another tracer holds it: the kernel refuses ptrace.
    let traced = nix::unistd::Pid::from_raw(pid);
    nix::sys::ptrace::seize(traced, nix::sys::ptrace::Options::empty()).unwrap();
    let refused = inject(pid, Clocks::Wall)
        .err()
        .expect("a traced process is refused");
    assert!(
        format!("{refused:#}").contains("refused to ptrace"),
        "{refused:#}"
    );
    assert!(refused.downcast_ref::<BadInput>().is_some(), "{refused:#}");
    let_go(traced);

    // Restoring one that another tracer took meanwhile: its offset goes back to 0.
    let mut shifted = inject(pid, Clocks::Wall).expect("inject once the tracer let go");
    shifted.set_offset(SHIFT_NS).unwrap();
    nix::sys::ptrace::seize(traced, nix::sys::ptrace::Options::empty()).unwrap();
    let restoration = shifted.restore().unwrap();
    assert!(
        matches!(&restoration, Restoration::OffsetZeroed(why) if why.contains("refused")),
        "{restoration:?}"
    );
    assert_eq!(shifted.offset_ns(), 0);
    let_go(traced);
}

#[test]
fn a_process_that_is_gone_is_refused_and_a_restore_after_exit_is_harmless() {
    if !root() {
        eprintln!("skipped: needs root");
        return;
    }
    let mut child = sleeping();
    let pid = child.id() as i32;
    let mut shifted =
        inject(pid, Clocks::Wall).unwrap_or_else(|e| panic!("inject into sleep: {e:#}"));
    shifted.set_offset(SHIFT_NS).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(shifted.restore().unwrap(), Restoration::Gone);
    let error = inject(pid, Clocks::Wall)
        .err()
        .expect("a reaped pid is refused");
    assert!(format!("{error:#}").contains("gone"), "{error:#}");
}

/// A Go program (it calls the vDSO itself, never libc) printing its wall clock and the
/// monotonic time since it started, while busy goroutines read the clock without pause on
/// every core: threads are caught everywhere, inside the vDSO too.
const GO_CLOCK: &str = r#"package main

import (
	"fmt"
	"runtime"
	"time"
)

func main() {
	start := time.Now()
	for i := 0; i < runtime.NumCPU()*2; i++ {
		go func() {
			for {
				_ = time.Now()
			}
		}()
	}
	for {
		now := time.Now()
		fmt.Printf("%.3f %.3f\n", float64(now.UnixNano())/1e9, now.Sub(start).Seconds())
		time.Sleep(100 * time.Millisecond)
	}
}
"#;

#[test]
fn a_busy_go_programs_clock_jumps_through_twenty_injections_and_restores() {
    if !root() {
        eprintln!("skipped: needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.go"), GO_CLOCK).unwrap();
    let built = Command::new("go")
        .args(["build", "-o", "clock", "main.go"])
        .current_dir(dir.path())
        .env("GO111MODULE", "off")
        .env("GOCACHE", dir.path().join("cache"))
        .status()
        .expect("go build");
    assert!(built.success(), "go build failed");
    let mut child = Command::new(dir.path().join("clock"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let child = Reaped(child);
    let started = now_monotonic();
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            let fields: Vec<f64> = line
                .split_whitespace()
                .filter_map(|f| f.parse().ok())
                .collect();
            let [wall, elapsed] = fields[..] else {
                continue;
            };
            // Its monotonic elapsed time against ours: it started after we noted `started`.
            let monotonic = elapsed - (now_monotonic() - started);
            let skew = Skew {
                wall: wall - now_wall(),
                monotonic,
                thread_cpu: 0.0,
            };
            if tx.send(skew).is_err() {
                return;
            }
        }
    });
    wait_for(&rx, "true time", |s| near(s.wall, 0.0));
    let pid = child.0.id() as i32;
    for round in 0..20 {
        let mut shifted = inject(pid, Clocks::Wall).expect("inject into the Go program");
        shifted.set_offset(SHIFT_NS).unwrap();
        let jumped = wait_for(&rx, &format!("+30 s in round {round}"), |s| {
            near(s.wall, 30.0)
        });
        assert!(
            near(jumped.monotonic, 0.0),
            "round {round}: monotonic moved: {jumped:?}"
        );
        assert_eq!(shifted.restore().unwrap(), Restoration::Restored);
        wait_for(&rx, &format!("true time after round {round}"), |s| {
            near(s.wall, 0.0)
        });
    }
    assert!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok(),
        "the Go program died"
    );
}

#[test]
fn a_stopped_process_is_shifted_and_stays_stopped_until_continued() {
    if !root() {
        eprintln!("skipped: needs root");
        return;
    }
    use nix::sys::signal::{kill, Signal};
    let (child, rx) = python_clock();
    wait_for(&rx, "true time", |s| near(s.wall, 0.0));
    let pid = nix::unistd::Pid::from_raw(child.0.id() as i32);
    kill(pid, Signal::SIGSTOP).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    while rx.try_recv().is_ok() {}
    let mut shifted = inject(pid.as_raw(), Clocks::Wall).expect("inject into a stopped process");
    shifted.set_offset(SHIFT_NS).unwrap();
    // Still stopped: nothing printed for a second.
    assert!(
        rx.recv_timeout(Duration::from_secs(1)).is_err(),
        "the process ran while it should have stayed stopped"
    );
    kill(pid, Signal::SIGCONT).unwrap();
    wait_for(&rx, "+30 s once continued", |s| near(s.wall, 30.0));
    kill(pid, Signal::SIGSTOP).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    while rx.try_recv().is_ok() {}
    assert_eq!(shifted.restore().unwrap(), Restoration::Restored);
    assert!(
        rx.recv_timeout(Duration::from_secs(1)).is_err(),
        "the process ran after restore while it should have stayed stopped"
    );
    kill(pid, Signal::SIGCONT).unwrap();
    wait_for(&rx, "true time once continued", |s| near(s.wall, 0.0));
}

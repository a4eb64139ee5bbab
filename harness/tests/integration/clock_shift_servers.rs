//! Moving real servers' clocks through their vDSO (root), read back from the server's own
//! word: the `Date` header of its HTTP endpoint. etcd (Go, which calls the vDSO itself) stamps
//! it with time.Now(); ZooKeeper's AdminServer (Jetty, in a JVM reading the clock through
//! libc) with System.currentTimeMillis(). Each server runs in a network namespace of the
//! test's own, so the fixed ports it binds touch nothing else.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use lockpick::clock_shift::{inject, Clocks, Restoration};

const SHIFT_NS: i64 = 30_000_000_000;

fn root() -> bool {
    nix::unistd::geteuid().is_root()
}

fn near(value: f64, target: f64) -> bool {
    (value - target).abs() < 3.0
}

/// Kills and reaps a child when dropped.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A network namespace of the test's own, removed when dropped.
struct Netns(String);

impl Netns {
    fn new(server: &str) -> Netns {
        let name = format!("lockpick-test-clockshift-{server}-{}", std::process::id());
        let ok = Command::new("ip")
            .args(["netns", "add", &name])
            .status()
            .unwrap()
            .success();
        assert!(ok, "ip netns add {name}");
        let netns = Netns(name);
        let ok = Command::new("ip")
            .args(["-n", &netns.0, "link", "set", "lo", "up"])
            .status()
            .unwrap()
            .success();
        assert!(ok, "lo up in {}", netns.0);
        netns
    }

    fn file(&self) -> std::fs::File {
        std::fs::File::open(format!("/run/netns/{}", self.0)).unwrap()
    }

    /// Starts `command` inside the namespace.
    fn spawn(&self, mut command: Command) -> Reaped {
        let namespace = self.file();
        // SAFETY: setns is async-signal-safe, and the closure touches nothing else.
        unsafe {
            command.pre_exec(move || {
                nix::sched::setns(&namespace, nix::sched::CloneFlags::CLONE_NEWNET)
                    .map_err(std::io::Error::from)
            });
        }
        Reaped(command.spawn().expect("spawn a server"))
    }

    /// Runs `f` on a thread that has entered the namespace.
    fn within<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
        let file = self.file();
        std::thread::spawn(move || {
            nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
            f()
        })
        .join()
        .unwrap()
    }

    /// The `Date` header of `GET path` on 127.0.0.1:`port`, less our clock, in seconds (Date
    /// has whole seconds).
    fn date_skew(&self, port: u16, path: &'static str) -> Option<f64> {
        self.within(move || {
            let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
            stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
            let request = format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n");
            stream.write_all(request.as_bytes()).ok()?;
            let mut reply = String::new();
            stream.read_to_string(&mut reply).ok()?;
            let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?;
            let date = reply.lines().find_map(|l| l.strip_prefix("Date: "))?;
            let stamped = chrono::DateTime::parse_from_rfc2822(date.trim()).ok()?;
            Some(stamped.timestamp() as f64 - now.as_secs_f64())
        })
    }

    /// Polls the Date header until `wanted` holds of its skew (generously: 60 s).
    fn wait_skew(&self, port: u16, path: &'static str, what: &str, wanted: fn(f64) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut last = None;
        while Instant::now() < deadline {
            if let Some(skew) = self.date_skew(port, path) {
                if wanted(skew) {
                    return;
                }
                last = Some(skew);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("the Date header never showed {what} within 60 s; last skew: {last:?}");
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// Shifts `server` forward, back, to 0 and restores it, reading each step from its Date
/// header; it must go on answering, on true time, afterwards.
fn jump_and_restore(netns: &Netns, server: &Reaped, port: u16, path: &'static str) {
    netns.wait_skew(port, path, "true time", |s| near(s, 0.0));
    let mut shifted = inject(server.0.id() as i32, Clocks::Wall).expect("inject");
    netns.wait_skew(port, path, "true time after the patch", |s| near(s, 0.0));
    shifted.set_offset(SHIFT_NS).unwrap();
    netns.wait_skew(port, path, "+30 s", |s| near(s, 30.0));
    shifted.set_offset(-SHIFT_NS).unwrap();
    netns.wait_skew(port, path, "-30 s", |s| near(s, -30.0));
    shifted.set_offset(0).unwrap();
    netns.wait_skew(port, path, "true time again", |s| near(s, 0.0));
    shifted.set_offset(SHIFT_NS).unwrap();
    netns.wait_skew(port, path, "+30 s once more", |s| near(s, 30.0));
    assert_eq!(shifted.restore().unwrap(), Restoration::Restored);
    netns.wait_skew(port, path, "true time after restore", |s| near(s, 0.0));
    for _ in 0..3 {
        let skew = netns.date_skew(port, path).expect("still answering");
        assert!(near(skew, 0.0), "skew {skew} after restore");
    }
}

#[test]
fn etcds_own_clock_jumps_as_its_date_header_shows() {
    if !root() {
        eprintln!("skipped: needs root");
        return;
    }
    let netns = Netns::new("etcd");
    let data = tempfile::tempdir_in("/dev/shm").unwrap();
    let mut command = Command::new("etcd");
    command
        .args(["--name", "n1", "--data-dir"])
        .arg(data.path().join("n1"))
        .args([
            "--listen-client-urls=http://127.0.0.1:2379",
            "--advertise-client-urls=http://127.0.0.1:2379",
            "--listen-peer-urls=http://127.0.0.1:2380",
            "--initial-advertise-peer-urls=http://127.0.0.1:2380",
            "--initial-cluster=n1=http://127.0.0.1:2380",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let etcd = netns.spawn(command);
    jump_and_restore(&netns, &etcd, 2379, "/version");
}

#[test]
fn zookeepers_own_clock_jumps_as_its_admin_servers_date_header_shows() {
    if !root() {
        eprintln!("skipped: needs root");
        return;
    }
    let netns = Netns::new("zk");
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let config = dir.path().join("zoo.cfg");
    std::fs::write(
        &config,
        format!(
            "tickTime=2000\ndataDir={}\nclientPort=2181\nclientPortAddress=127.0.0.1\n\
             admin.enableServer=true\nadmin.serverAddress=127.0.0.1\nadmin.serverPort=8080\n",
            dir.path().join("data").display()
        ),
    )
    .unwrap();
    // The AdminServer is Jetty: Debian's jars beside ZooKeeper's.
    let class_path = [
        "zookeeper",
        "slf4j-simple",
        "jetty9-server",
        "jetty9-http",
        "jetty9-io",
        "jetty9-util",
        "jetty9-servlet",
        "jetty9-security",
        "servlet-api",
        "jackson-databind",
        "jackson-core",
        "jackson-annotations",
    ]
    .map(|jar| format!("/usr/share/java/{jar}.jar"))
    .join(":");
    let mut command = Command::new("java");
    command
        .args([
            "-Xms32m",
            "-Xmx128m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
        ])
        .arg("-Djava.net.preferIPv4Stack=true")
        .args(["-cp", &class_path])
        .arg("org.apache.zookeeper.server.ZooKeeperServerMain")
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let zookeeper = netns.spawn(command);
    jump_and_restore(&netns, &zookeeper, 8080, "/commands/ruok");
}

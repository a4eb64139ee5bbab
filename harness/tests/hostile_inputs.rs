//! lockpick runs as root and treats everything it did not make as hostile: container labels,
//! names and folders it finds, histories, schedules, matrices, and files planted where it
//! writes. Each case here is one such input; each must end in a clear refusal or be ignored,
//! never in root deleting, writing or believing what it should not.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::engine::{docker_at, Engine};
use common::lockpick;
use serde_json::Value;

/// A name no other test or run uses.
fn unique(what: &str) -> String {
    format!(
        "lockpick-hostile-{what}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    )
}

/// A container on `engine` named `name` with `label` as its `lockpick.prefix`, created (not
/// started) from an empty image: the label is all `clean` reads.
fn labelled_container(engine: &Engine, name: &str, label: &str) {
    let created = docker_at(
        &engine.host,
        &[
            "create",
            "--name",
            name,
            "--label",
            &format!("lockpick.prefix={label}"),
            "lockpick-test/empty:0",
            "/none",
        ],
    );
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
}

#[test]
fn clean_takes_no_path_and_no_container_from_a_hostile_label() {
    let engine = Engine::in_dir("docker-engine-hostile", &[]);
    let mut import = Command::new("docker")
        .args(["import", "-", "lockpick-test/empty:0"])
        .env("DOCKER_HOST", &engine.host)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // An empty tar: two zero blocks.
    std::io::Write::write_all(&mut import.stdin.take().unwrap(), &[0u8; 1024]).unwrap();
    assert!(import.wait().unwrap().success(), "docker import failed");

    // What a label of `../../tmp/<victim>` would name from /dev/shm and /run/lockpick.
    let victim = unique("victim");
    let victims: Vec<String> = ["", ".lock", ".controller"]
        .iter()
        .map(|suffix| format!("/tmp/{victim}{suffix}"))
        .collect();
    for path in &victims {
        std::fs::write(path, "root's own file").unwrap();
    }
    let containers = [
        (unique("dotdot"), format!("../../tmp/{victim}")),
        (unique("root"), "/".to_string()),
        // A real-looking prefix that the container's name does not carry.
        (unique("borrowed"), "lkp0f0f0f".to_string()),
        (unique("newline"), "x\nlkp0f0f0f-n1 lkp0f0f0f".to_string()),
    ];
    for (name, label) in &containers {
        labelled_container(&engine, name, label);
    }
    // And one a run of prefix lkp0f0f0e left, by its record: that one is clean's to remove; and
    // one that carries a prefix in its name and label but no run recorded making.
    labelled_container(&engine, "lkp0f0f0e-n1", "lkp0f0f0e");
    std::fs::write("/run/lockpick/lkp0f0f0e.made", "container lkp0f0f0e-n1\n").unwrap();
    labelled_container(&engine, "lkp0f0f0d-n1", "lkp0f0f0d");

    let clean = engine
        .lockpick()
        .args(["clean", "--dry-run"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&clean.stdout);
    let stderr = String::from_utf8_lossy(&clean.stderr);
    assert!(clean.status.success(), "{stderr}");
    for line in stdout.lines() {
        assert!(
            !line.contains("/tmp") && !line.ends_with("would remove /"),
            "clean means to remove what a label named: {line}"
        );
        for (name, _) in &containers {
            assert!(!line.contains(name.as_str()), "{line}");
        }
    }
    for (name, _) in &containers {
        assert!(
            stderr.contains(&format!("container {name:?}")) && stderr.contains("left alone"),
            "{name} not named as left alone:\n{stderr}"
        );
    }
    assert!(
        stdout.contains("lkp0f0f0e: would remove containers lkp0f0f0e-n1"),
        "{stdout}"
    );
    assert!(
        stdout.contains("container lkp0f0f0d-n1 is not in the record of what its run made"),
        "{stdout}"
    );
    let clean = common::clean_prefix(engine.lockpick(), "lkp0f0f0e");
    let said = String::from_utf8_lossy(&clean.stdout);
    assert!(said.contains("removed containers lkp0f0f0e-n1"), "{said}");
    assert!(!Path::new("/run/lockpick/lkp0f0f0e.made").exists());
    let clean = common::clean_prefix(engine.lockpick(), "lkp0f0f0d");
    let said = String::from_utf8_lossy(&clean.stdout);
    assert!(!said.contains("removed containers"), "{said}");
    for path in &victims {
        assert!(Path::new(path).exists(), "{path} is gone");
        std::fs::remove_file(path).unwrap();
    }
    let listed = docker_at(&engine.host, &["ps", "--all", "--format", "{{.Names}}"]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    for (name, _) in &containers {
        assert!(listed.lines().any(|l| l == name), "{name} was removed");
        assert!(!listed.lines().any(|l| l == "lkp0f0f0e-n1"), "{listed}");
        assert!(listed.lines().any(|l| l == "lkp0f0f0d-n1"), "{listed}");
        docker_at(&engine.host, &["rm", "--force", name]);
    }
    docker_at(&engine.host, &["rm", "--force", "lkp0f0f0d-n1"]);
}

/// A prefix no run uses: lkp and six random hex digits.
fn random_prefix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("lkp{:06x}", (nanos ^ std::process::id() << 8) & 0xff_ffff)
}

/// What the test below plants, removed however the test ends.
struct Planted {
    namespace: String,
    sleeper: std::process::Child,
    folder: std::path::PathBuf,
}

impl Drop for Planted {
    fn drop(&mut self) {
        let _ = self.sleeper.kill();
        let _ = self.sleeper.wait();
        let _ = Command::new("ip")
            .args(["netns", "del", &self.namespace])
            .status();
        let _ = std::fs::remove_dir(&self.folder);
    }
}

#[test]
fn clean_removes_only_what_a_run_recorded_making() {
    use std::os::unix::fs::chown;
    // A namespace that carries a prefix, with a process in it, that no run made.
    let prefix = random_prefix();
    let namespace = format!("{prefix}-mine");
    let added = Command::new("ip")
        .args(["netns", "add", &namespace])
        .status()
        .unwrap();
    assert!(added.success());
    let sleeper = Command::new("ip")
        .args(["netns", "exec", &namespace, "sleep", "600"])
        .spawn()
        .unwrap();
    // Another user's folder in /dev/shm named like a run's scratch folder.
    let other = format!("lkp0{}", &random_prefix()[4..]);
    let folder = Path::new("/dev/shm").join(&other);
    let mut planted = Planted {
        namespace,
        sleeper,
        folder,
    };
    std::fs::create_dir(&planted.folder).unwrap();
    chown(&planted.folder, Some(65534), Some(65534)).unwrap();
    let said: Vec<String> = [prefix.as_str(), other.as_str()]
        .iter()
        .map(|target| {
            let out = lockpick()
                .args(["clean", "--prefix", target])
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).to_string()
        })
        .collect();
    assert!(
        planted.sleeper.try_wait().unwrap().is_none(),
        "clean killed a process it did not start: {}",
        said[0]
    );
    assert_eq!(
        common::namespaces_with(&prefix),
        vec![planted.namespace.clone()],
        "clean removed a namespace it did not make"
    );
    assert!(
        said[0].contains("not in the record of what its run made"),
        "{}",
        said[0]
    );
    assert!(
        planted.folder.exists(),
        "clean removed another user's folder: {}",
        said[1]
    );
}

/// A short valid history: two serial holders, each write recorded, the final read agreeing.
fn valid_history() -> Vec<String> {
    let mut lines = vec![
        r#"{"index":0,"time":0,"process":"harness","type":"info","f":"setup","value":{"lock":"redis","token":"none","ttl_ms":1000,"fencing":"off","nemesis":"none","clients":2,"seed":1}}"#.to_string(),
    ];
    for (p, t) in [(0u64, 10u64), (1, 20)] {
        let acq = format!("{p}.1");
        let seq = p + 1;
        lines.extend([
            format!(r#"{{"time":{},"process":{p},"type":"invoke","f":"acquire","value":{{"acquisition":"{acq}"}}}}"#, t),
            format!(r#"{{"time":{},"process":{p},"type":"ok","f":"acquire","value":{{"acquisition":"{acq}","token":null}}}}"#, t + 1),
            format!(r#"{{"time":{},"process":"resource","type":"ok","f":"access","value":{{"seq":{seq},"process":{p},"acquisition":"{acq}","token":null,"op":"write","value":0}}}}"#, t + 2),
            format!(r#"{{"time":{},"process":{p},"type":"invoke","f":"release","value":{{"acquisition":"{acq}"}}}}"#, t + 3),
            format!(r#"{{"time":{},"process":{p},"type":"ok","f":"release","value":{{"acquisition":"{acq}"}}}}"#, t + 4),
        ]);
    }
    lines.push(
        r#"{"time":40,"process":"harness","type":"ok","f":"final-read","value":{"value":0,"applied":2}}"#
            .to_string(),
    );
    numbered(lines)
}

/// Gives each line its index, in order (lines that are not JSON objects are left as they are).
fn numbered(lines: Vec<String>) -> Vec<String> {
    lines
        .into_iter()
        .enumerate()
        .map(|(i, line)| match serde_json::from_str::<Value>(&line) {
            Ok(Value::Object(mut op)) => {
                op.insert("index".into(), i.into());
                Value::Object(op).to_string()
            }
            _ => line,
        })
        .collect()
}

/// Line `i` (from 0) of the valid history with `field` set to the JSON `value` (a path of
/// keys separated by `/`).
fn with(i: usize, field: &str, value: &str) -> Vec<u8> {
    let mut lines = valid_history();
    let mut op: Value = serde_json::from_str(&lines[i]).unwrap();
    let mut at = &mut op;
    let keys: Vec<&str> = field.split('/').collect();
    for key in &keys[..keys.len() - 1] {
        at = &mut at[*key];
    }
    // Set as text: serde_json would turn u64::MAX + 1 into a float.
    at[keys[keys.len() - 1]] = Value::String("@@".into());
    lines[i] = op.to_string().replace("\"@@\"", value);
    (lines.join("\n") + "\n").into_bytes()
}

fn replaced(i: usize, line: &[u8]) -> Vec<u8> {
    let lines = valid_history();
    let mut out = Vec::new();
    for (n, l) in lines.iter().enumerate() {
        if n == i {
            out.extend_from_slice(line);
        } else {
            out.extend_from_slice(l.as_bytes());
        }
        out.push(b'\n');
    }
    out
}

/// Runs `command`, killing it if it has not ended after `limit`: a hostile input must never
/// make lockpick wait forever.
fn within(mut command: Command, limit: Duration) -> Output {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(child.wait_with_output());
    });
    match receiver.recv_timeout(limit) {
        Ok(output) => output.unwrap(),
        Err(_) => {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            panic!("{command:?} still ran after {limit:?}");
        }
    }
}

#[test]
fn hostile_histories_are_malformed_never_a_verdict() {
    let u64_max = u64::MAX.to_string();
    let long = format!(
        r#"{{"time":1,"process":0,"type":"invoke","f":"acquire","value":{{"acquisition":"{}"}}}}"#,
        "x".repeat(2 << 20)
    );
    let deep = format!(
        r#"{{"time":11,"process":0,"type":"ok","f":"acquire","value":{}}}"#,
        "[".repeat(10_000) + &"]".repeat(10_000)
    );
    let escape = "\\u001b]0;owned\\u0007\\u001b[2J\\n::error::injected";
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("applied u64::MAX", with(11, "value/applied", &u64_max)),
        ("applied 2^63", with(11, "value/applied", "9223372036854775808")),
        ("applied 2^53+1", with(11, "value/applied", "9007199254740993")),
        ("applied -1", with(11, "value/applied", "-1")),
        ("applied 1e30", with(11, "value/applied", "1e30")),
        ("applied u64::MAX+1", with(11, "value/applied", "18446744073709551616")),
        ("acquire time u64::MAX", with(7, "time", &u64_max)),
        ("acquire time 2^63", with(7, "time", "9223372036854775808")),
        ("acquire time 2^53+1", with(7, "time", "9007199254740993")),
        ("time -1", with(7, "time", "-1")),
        ("time a string", with(7, "time", "\"soon\"")),
        ("time 1.5", with(7, "time", "1.5")),
        ("a client's time goes back", with(7, "time", "1099511627776")),
        ("a completion before its invoke", with(7, "time", "1")),
        ("access seq u64::MAX", with(3, "value/seq", &u64_max)),
        ("access seq repeated", with(8, "value/seq", "1")),
        ("lease live_until u64::MAX", with(2, "value/lease", &format!("{{\"live_until\":{u64_max}}}"))),
        ("lease expires_by 2^63", with(2, "value/lease", "{\"live_until\":5,\"expires_by\":9223372036854775808}")),
        ("granted_after 2^60", with(2, "value/granted_after", "1152921504606846976")),
        ("final read time u64::MAX", with(11, "time", &u64_max)),
        ("index u64::MAX", with(5, "index", &u64_max)),
        ("index skips", with(5, "index", "7")),
        ("process -1", with(1, "process", "-1")),
        ("unknown f", with(1, "f", "\"fly\"")),
        ("unknown type", with(1, "type", "\"maybe\"")),
        ("not JSON", replaced(4, b"{ this is not json")),
        ("not UTF-8", replaced(4, b"{\"time\":1,\xff\xfe}")),
        ("a NUL byte", replaced(4, b"{\"time\":1,\0}")),
        ("a line over 1 MiB", replaced(1, long.as_bytes())),
        ("nesting 10000 deep", replaced(2, deep.as_bytes())),
        ("a completion never invoked", replaced(1, br#"{"index":1,"time":10,"process":0,"type":"ok","f":"release","value":{"acquisition":"0.1"}}"#)),
        ("an access of no acquisition", with(3, "value/acquisition", "\"9.9\"")),
        ("a release never granted", with(4, "value/acquisition", "\"7.7\"")),
        ("escapes and a workflow command", with(3, "value/acquisition", &format!("\"{escape}\""))),
    ];
    assert!(cases.len() >= 30);
    let dir = tempfile::tempdir().unwrap();
    // The unchanged history is valid: each case breaks it by its one change.
    let base = dir.path().join("valid.jsonl");
    std::fs::write(&base, valid_history().join("\n") + "\n").unwrap();
    let valid = lockpick().arg("check").arg(&base).output().unwrap();
    assert_eq!(
        valid.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&valid.stdout)
    );
    for (i, (name, text)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("case-{i}.jsonl"));
        std::fs::write(&path, text).unwrap();
        let mut command = lockpick();
        command.arg("check").arg(&path);
        let out = within(command, Duration::from_secs(60));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{name}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("malformed at line"), "{name}: {stdout}");
        assert!(
            !stdout.chars().any(|c| c.is_control() && c != '\n'),
            "{name}: a control character reached the terminal: {stdout:?}"
        );
        assert!(
            !stdout.lines().any(|l| l.trim_start().starts_with("::")),
            "{name}: a workflow command reached the log: {stdout}"
        );
    }
}

#[test]
fn a_report_is_sized_by_what_the_history_holds_not_by_what_it_claims() {
    let claims = [
        ("clients 10^6", with(0, "value/clients", "1000000")),
        ("clients 10^8", with(0, "value/clients", "100000000")),
        (
            "clients 2^63",
            with(0, "value/clients", "9223372036854775808"),
        ),
        (
            "clients u64::MAX",
            with(0, "value/clients", &u64::MAX.to_string()),
        ),
        (
            "a time at u64::MAX",
            with(11, "time", &u64::MAX.to_string()),
        ),
        ("a time at 2^53", with(11, "time", "9007199254740992")),
    ];
    for (name, text) in claims {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("history.jsonl"), text).unwrap();
        let mut command = lockpick();
        command.arg("report").arg(dir.path());
        let out = within(command, Duration::from_secs(120));
        assert_eq!(
            out.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let page = std::fs::metadata(dir.path().join("report.html"))
            .unwrap()
            .len();
        assert!(page < 1 << 20, "{name}: a page of {page} bytes");
        let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
        quick_xml_reads(&junit);
    }
}

/// The whole document parses as XML.
fn quick_xml_reads(xml: &str) {
    let mut reader = quick_xml::Reader::from_str(xml);
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(_) => {}
            Err(e) => panic!("not XML: {e}\n{xml}"),
        }
    }
}

#[test]
fn schedule_and_matrix_files_are_regular_and_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    let fifo = at("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    std::fs::create_dir(at("folder")).unwrap();
    // 3 GB, sparse: nothing on disk, everything to a reader.
    std::fs::File::create(at("sparse"))
        .unwrap()
        .set_len(3 << 30)
        .unwrap();
    std::fs::write(at("five-mib"), vec![b' '; 5 << 20]).unwrap();
    std::fs::write(at("not-utf8"), b"\xff\xfe\xfd").unwrap();
    std::os::unix::fs::symlink("/dev/zero", at("link-to-zero")).unwrap();
    let files = [
        "/dev/zero".into(),
        "/dev/urandom".into(),
        "/dev/null".into(),
        fifo,
        at("folder"),
        at("sparse"),
        at("five-mib"),
        at("not-utf8"),
        at("link-to-zero"),
        at("missing"),
    ];
    for file in &files {
        for (command, flag) in [("run", "--schedule"), ("compare", "--matrix")] {
            let store = tempfile::tempdir().unwrap();
            let mut lockpick = lockpick();
            lockpick
                .arg(command)
                .arg(flag)
                .arg(file)
                .arg("--store")
                .arg(store.path());
            let out = within(lockpick, Duration::from_secs(30));
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(254), "{flag} {file:?}: {stderr}");
            assert!(
                stderr.contains(flag) && stderr.lines().count() == 1,
                "{stderr}"
            );
            assert_eq!(
                std::fs::read_dir(store.path()).unwrap().count(),
                0,
                "{flag} {file:?} left files in the store"
            );
        }
    }
}

#[test]
fn clean_refuses_a_prefix_that_is_not_one() {
    for hostile in [
        "../../tmp/X",
        "/",
        "",
        "lkp1A2B3C",
        "lkp12345",
        "lkp1a2b3c/..",
        "lkp1a2b3c\n",
    ] {
        let out = lockpick()
            .args(["clean", "--prefix", hostile])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(254), "{hostile:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--prefix"));
    }
}

/// A file of root's that no planted link may change.
struct Victim(std::path::PathBuf);

impl Victim {
    fn new(dir: &Path) -> Victim {
        let path = dir.join("roots-own-file");
        std::fs::write(&path, "precious").unwrap();
        Victim(path)
    }

    fn untouched(&self, case: &str) {
        assert_eq!(
            std::fs::read_to_string(&self.0).unwrap(),
            "precious",
            "{case}: root's file was written through a planted link"
        );
    }
}

/// `sh -c '<plant>; exec lockpick <args>'`: the plant may name lockpick's pid as `$$`, since
/// exec keeps it, which is how a user predicts a name lockpick will use.
fn planted_then(plant: &str, args: &str) -> Output {
    let script = format!("{plant} && exec {} {args}", env!("CARGO_BIN_EXE_lockpick"));
    Command::new("sh").args(["-c", &script]).output().unwrap()
}

#[test]
fn links_planted_in_the_store_are_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let victim = Victim::new(dir.path());
    let v = victim.0.display().to_string();
    let store = dir.path().join("store");
    let s = store.display().to_string();
    std::fs::create_dir(&store).unwrap();
    let run = "run --lock redis --time-limit 3s --seed 5 --store";

    // A run folder of the group is planted as a link: refused, nothing made in its target.
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, store.join("redis-none")).unwrap();
    let out = planted_then("true", &format!("{run} {s}"));
    assert_eq!(out.status.code(), Some(254));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is a link"));
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    std::fs::remove_file(store.join("redis-none")).unwrap();

    // The index's old temporary name, the index itself, the latest links' old temporary
    // names, the group's latest link: all planted as links to root's file.
    let plants = [
        format!("ln -s {v} {s}/index.html.new-$$-ThreadId\\(1\\)"),
        format!("ln -s {v} {s}/index.html"),
        format!("ln -s {v} {s}/latest.new-$$-1"),
        format!("mkdir {s}/redis-none && ln -s {v} {s}/redis-none/latest"),
    ]
    .join(" && ");
    let out = planted_then(&plants, &format!("{run} {s}"));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    victim.untouched("a run's index and links");
    for file in ["index.html", "latest", "redis-none/latest"] {
        let meta = std::fs::symlink_metadata(store.join(file)).unwrap();
        assert!(file.contains("latest") || meta.is_file(), "{file}");
    }
    let run_dir = store.join("latest").canonicalize().unwrap();
    assert!(run_dir.starts_with(&store), "{run_dir:?}");

    // `lockpick report` over a run whose report and junit are links to root's file.
    for file in ["report.html", "junit.xml"] {
        std::fs::remove_file(run_dir.join(file)).unwrap();
        std::os::unix::fs::symlink(&victim.0, run_dir.join(file)).unwrap();
    }
    let out = lockpick().arg("report").arg(&run_dir).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    victim.untouched("lockpick report");
    for file in ["report.html", "junit.xml"] {
        assert!(std::fs::symlink_metadata(run_dir.join(file))
            .unwrap()
            .is_file());
    }
}

#[test]
fn a_store_another_user_could_change_is_refused() {
    use std::os::unix::fs::{chown, PermissionsExt};
    type Plant = fn(&Path);
    let cases: [(&str, Plant); 4] = [
        ("a store of another user's", |store| {
            chown(store, Some(65534), Some(65534)).unwrap()
        }),
        ("a store anyone can write in", |store| {
            std::fs::set_permissions(store, std::fs::Permissions::from_mode(0o777)).unwrap()
        }),
        ("a group folder of another user's", |store| {
            std::fs::create_dir(store.join("redis-none")).unwrap();
            chown(store.join("redis-none"), Some(65534), Some(65534)).unwrap();
        }),
        ("a group folder anyone can write in", |store| {
            std::fs::create_dir(store.join("redis-none")).unwrap();
            std::fs::set_permissions(
                store.join("redis-none"),
                std::fs::Permissions::from_mode(0o777),
            )
            .unwrap();
        }),
    ];
    for (name, plant) in cases {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        std::fs::create_dir(&store).unwrap();
        plant(&store);
        let before = std::fs::read_dir(&store).unwrap().count();
        let out = lockpick()
            .args(["run", "--lock", "redis", "--time-limit", "3s", "--store"])
            .arg(&store)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(254), "{name}: {stderr}");
        assert!(stderr.contains("--store"), "{name}: {stderr}");
        assert_eq!(std::fs::read_dir(&store).unwrap().count(), before, "{name}");
    }
}

#[test]
fn bench_works_in_a_folder_of_its_own_not_one_planted_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let victim = Victim::new(dir.path());
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let t = tmp.display().to_string();
    // The folder the bench once used, made beforehand with its empty history linked to root's
    // file.
    let plant = format!(
        "mkdir {t}/lockpick-bench-$$ && ln -s {} {t}/lockpick-bench-$$/empty.jsonl && export TMPDIR={t}",
        victim.0.display()
    );
    let out = planted_then(&plant, "bench checker --quick");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    victim.untouched("lockpick bench");
    // Its own folder is gone again; the planted one is left as it was.
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().flatten().collect();
    assert_eq!(left.len(), 1, "{left:?}");
}

/// A client program that, as client 0, also writes straight to the resource (it finds it on the
/// servers' /24, port 7000) under client 1's acquisitions, then goes on as the redis-py example.
const MEDDLER: &str = r#"
import json, os, socket, sys, time
if os.environ.get("LOCKPICK_CLIENT") == "0" and os.fork() == 0:
    net = os.environ["LOCKPICK_SERVERS"].split(",")[0].split(":")[0].rsplit(".", 1)[0]
    time.sleep(1.5)
    for host in range(10, 30):
        try:
            s = socket.create_connection((f"{net}.{host}", 7000), timeout=0.3)
        except OSError:
            continue
        for n in range(1, 6):
            write = {"process": 1, "acquisition": f"1.{n}", "token": None, "op": "write", "value": 4242}
            s.sendall((json.dumps(write) + "\n").encode())
            s.recv(4096)
        s.close()
    os._exit(0)
os.execv(sys.executable, [sys.executable, sys.argv[1]])
"#;

#[test]
fn a_client_program_writing_straight_to_the_resource_is_refused_and_blames_no_client() {
    let dir = tempfile::tempdir().unwrap();
    let meddler = dir.path().join("meddler.py");
    std::fs::write(&meddler, MEDDLER).unwrap();
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/python-redis/lock_client.py");
    let lock = format!(
        "exec:redis:/usr/bin/python3 {} {}",
        meddler.display(),
        example.canonicalize().unwrap().display()
    );
    let store = dir.path().join("store");
    let r = common::run(
        &store,
        &[
            "--lock",
            &lock,
            "--clients",
            "2",
            "--time-limit",
            "6s",
            "--seed",
            "3",
        ],
    );
    let history = r.history();
    let foreign: Vec<&Value> = history
        .iter()
        .filter(|op| op["process"] == "resource" && op["value"]["foreign"] == true)
        .collect();
    assert!(
        !foreign.is_empty(),
        "the meddler never reached the resource:\n{}",
        r.stdout
    );
    for op in &foreign {
        assert_eq!(op["type"], "info", "{op}");
        assert!(
            op["value"]["request"].as_str().unwrap().contains("4242"),
            "{op}"
        );
    }
    // Not one of its writes was applied, or recorded as client 1's.
    assert!(
        !history
            .iter()
            .any(|op| op["f"] == "access" && op["value"]["value"] == 4242),
        "a foreign write was applied"
    );
    assert_eq!(r.stale("stale_writes"), 0, "{}", r.stdout);
    // The run says something else reached the resource, and proves nothing.
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("outside lockpick's workers"),
        "{}",
        r.stdout
    );
}

/// A client program whose child leaves its process group and session and joins the host's
/// network namespace through the controller's `/proc/<pid>/ns/net`, then sleeps for 10 minutes
/// under the marker in argv[2]; the program goes on as the redis-py example (argv[1]).
const ESCAPER: &str = r#"
import os, sys
if os.environ.get("LOCKPICK_CLIENT") == "0" and os.fork() == 0:
    os.setsid()
    def parent(pid):
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[1]
    # This program's parent is its worker, `lockpick client`, whose parent is the controller.
    controller = parent(parent(os.getppid()))
    os.execvp("nsenter", ["nsenter", f"--net=/proc/{controller}/ns/net", "--",
                          sys.executable, "-c", "import time; time.sleep(600)", sys.argv[2]])
os.execv(sys.executable, [sys.executable, sys.argv[1]])
"#;

#[test]
fn no_descendant_of_a_client_program_outlives_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let escaper = dir.path().join("escaper.py");
    std::fs::write(&escaper, ESCAPER).unwrap();
    let marker = unique("escaped");
    let example = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/python-redis/lock_client.py")
        .canonicalize()
        .unwrap();
    let lock = format!(
        "exec:redis:/usr/bin/python3 {} {} {marker}",
        escaper.display(),
        example.display()
    );
    let store = dir.path().join("store");
    let r = common::run(
        &store,
        &[
            "--lock",
            &lock,
            "--clients",
            "2",
            "--time-limit",
            "4s",
            "--seed",
            "4",
        ],
    );
    assert_ne!(r.code, 255, "{}\n{}", r.stdout, r.stderr);
    // The escape worked: it reached the host's network namespace.
    assert!(
        std::fs::read_to_string(r.dir.join("logs/client-0.log")).is_ok(),
        "no client log"
    );
    // Give a survivor time to show; then end any, and fail.
    std::thread::sleep(Duration::from_millis(300));
    let left = common::processes_mentioning(&[&marker]);
    for survivor in &left {
        let pid: i32 = survivor.split(':').next().unwrap().parse().unwrap();
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert!(left.is_empty(), "a descendant outlived the run: {left:?}");
}

#[test]
fn a_plan_beyond_max_cells_is_refused_before_any_cell_runs() {
    let store = tempfile::tempdir().unwrap();
    let refused = |args: &[&str], says: &str| {
        let mut command = lockpick();
        command
            .arg("compare")
            .args(args)
            .arg("--store")
            .arg(store.path());
        let out = within(command, Duration::from_secs(60));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(254), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert_eq!(std::fs::read_dir(store.path()).unwrap().count(), 0);
    };
    // The default plan, 4 locks × 2 nemeses, against a bound of 3.
    refused(&["--max-cells", "3"], "more than --max-cells 3");
    // A matrix of 100 × 100 cells.
    let dir = tempfile::tempdir().unwrap();
    let matrix = dir.path().join("lockpick.toml");
    let locks = vec!["\"redis\""; 100].join(",");
    let nemeses: Vec<String> = (0..100).map(|_| "\"none\"".to_string()).collect();
    std::fs::write(
        &matrix,
        format!("locks = [{locks}]\nnemeses = [{}]\n", nemeses.join(",")),
    )
    .unwrap();
    refused(&["--matrix", matrix.to_str().unwrap()], "--max-cells");
}

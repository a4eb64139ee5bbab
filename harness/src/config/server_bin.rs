//! `--server-bin service=/path`: another build of a service's server than the host's package,
//! for the runtimes whose servers run the host's programs. Redis and etcd are one executable
//! each; ZooKeeper is a Java program, so it is named by the folder that holds its jars (each
//! service's catalogue entry says which form it takes).

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::bad_input::bad;
use crate::runtime::RuntimeKind;
use crate::service::catalogue;
use crate::service::entry::{ServerBinForm, ServiceEntry};

/// Reads every `--server-bin` word into a path by service, refusing an unknown service, a path
/// that is missing or cannot run, and a runtime whose servers come from images.
pub fn choose(
    kind: &dyn RuntimeKind,
    words: &[String],
) -> anyhow::Result<BTreeMap<String, PathBuf>> {
    let mut chosen = BTreeMap::new();
    for word in words {
        let Some((service, path)) = word.split_once('=').filter(|(_, p)| !p.is_empty()) else {
            let named = word.split('=').next().and_then(catalogue::find);
            let example = named.unwrap_or(catalogue::SERVICES[0]);
            return Err(bad(format!(
                "--server-bin {word} must be service=path (e.g. {}={})",
                example.name, example.server_bin_example
            )));
        };
        let Some(entry) = catalogue::find(service) else {
            return Err(bad(format!(
                "--server-bin {word}: {service} is not a service lockpick runs: use one of {}",
                catalogue::names().join(", ")
            )));
        };
        if !kind.servers_from_host() {
            return Err(bad(format!(
                "--server-bin {word} needs servers from the host: --runtime {} runs the \
                 image's server (choose it with --image {service}=<image>)",
                kind.name()
            )));
        }
        let path = std::path::absolute(path).unwrap_or_else(|_| PathBuf::from(path));
        if let Some(why) = unusable(entry, &path) {
            return Err(bad(format!("--server-bin {word}: {why}")));
        }
        chosen.insert(service.to_string(), path);
    }
    Ok(chosen)
}

/// Why `path` cannot serve as `service`'s server, if it cannot.
fn unusable(service: &ServiceEntry, path: &Path) -> Option<String> {
    let metadata = match std::fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(e) => return Some(format!("{}: {e}", path.display())),
    };
    match service.server_bin {
        ServerBinForm::Folder { unusable } => unusable(path),
        ServerBinForm::Executable
            if !metadata.is_file() || metadata.permissions().mode() & 0o111 == 0 =>
        {
            Some(format!("{} is not an executable file", path.display()))
        }
        ServerBinForm::Executable => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{docker::Docker, netns::Netns};

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|w| w.to_string()).collect()
    }

    fn refusal(kind: &dyn RuntimeKind, list: &[&str]) -> String {
        choose(kind, &words(list)).unwrap_err().to_string()
    }

    #[test]
    fn an_executable_is_taken_by_its_service() {
        let chosen = choose(&Netns, &words(&["redis=/bin/sh"])).unwrap();
        assert_eq!(chosen["redis"], PathBuf::from("/bin/sh"));
    }

    #[test]
    fn an_unknown_service_a_missing_path_and_a_plain_file_are_refused() {
        assert!(refusal(&Netns, &["mysql=/bin/sh"]).contains("not a service"));
        assert!(refusal(&Netns, &["redis"]).contains("service=path"));
        // The example is the named service's own, else the catalogue's first.
        assert!(refusal(&Netns, &["zookeeper"]).contains("e.g. zookeeper=/opt/apache-zookeeper"));
        assert!(refusal(&Netns, &["mysql"]).contains("e.g. redis=/opt/redis"));
        assert!(refusal(&Netns, &["redis=/no/such/redis-server"]).contains("/no/such"));
        assert!(refusal(&Netns, &["etcd=/etc/debian_version"]).contains("not an executable"));
    }

    #[test]
    fn the_docker_runtime_refuses_server_bins() {
        assert!(refusal(&Docker, &["redis=/bin/sh"]).contains("--image redis="));
    }

    #[test]
    fn zookeeper_is_named_by_a_folder_of_jars() {
        let dir = std::env::temp_dir().join(format!("lockpick-zk-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("lib")).unwrap();
        assert!(refusal(&Netns, &[&format!("zookeeper={}", dir.display())]).contains("no zook"));
        std::fs::write(dir.join("lib/zookeeper-3.9.2.jar"), b"").unwrap();
        let chosen = choose(&Netns, &[format!("zookeeper={}", dir.display())]).unwrap();
        let class_path = crate::service::zookeeper::class_path(&chosen["zookeeper"]).unwrap();
        assert_eq!(class_path, format!("{}/lib/*", dir.display()));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

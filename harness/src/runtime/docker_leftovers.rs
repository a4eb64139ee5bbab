//! The containers of runs that died before tearing down, for `lockpick clean`. Their network
//! namespaces are attached by name like the namespace runtime's, and go with its leftovers.

use anyhow::Result;

use super::{docker, Leftover, Removal, PREFIX_LABEL};
use crate::run_prefix::{is_prefix, prefix_of};

/// The containers of lockpick runs on this machine's engine, by the prefix in their label.
/// A label is whatever the container's creator wrote: only a run prefix that the container's
/// name carries too counts; any other container is told to `complain` and left alone. None
/// when there is no Docker engine to ask.
pub fn containers(complain: &mut dyn FnMut(String)) -> Vec<Leftover> {
    if crate::runtime::program::find_program("docker").is_none() {
        return Vec::new();
    }
    // The label is whatever the container's creator wrote, newlines included: it comes as JSON.
    let format = format!("{{{{.Names}}}} {{{{json (.Label \"{PREFIX_LABEL}\")}}}}");
    let filter = format!("label={PREFIX_LABEL}");
    let Ok(listing) = docker(&["ps", "--all", "--filter", &filter, "--format", &format]) else {
        return Vec::new();
    };
    of_runs(parse_listing(&listing), complain)
}

/// (label, name) of each line of `docker ps` as `containers` asks for it, the label unchecked.
fn parse_listing(listing: &str) -> Vec<(String, String)> {
    listing
        .lines()
        .filter_map(|line| line.split_once(' '))
        .filter_map(|(name, label)| Some((serde_json::from_str(label).ok()?, name.to_string())))
        .collect()
}

/// The listed containers whose label is the run prefix their name carries.
fn of_runs(listed: Vec<(String, String)>, complain: &mut dyn FnMut(String)) -> Vec<Leftover> {
    let mut found = Vec::new();
    for (label, name) in listed {
        if is_prefix(&label) && prefix_of(&name) == Some(label.as_str()) {
            found.push(Leftover {
                prefix: label,
                record: format!("container {name}"),
                name,
                // Its processes run in its network namespace, which the namespace runtime
                // lists with theirs.
                pids: Vec::new(),
            });
        } else {
            complain(format!(
                "container {name:?}: its label {PREFIX_LABEL}={label:?} is not the run prefix in its name, left alone"
            ));
        }
    }
    found
}

/// Removes one run's containers with whatever still runs in them, in one `docker rm`.
pub fn remove(leftovers: &[Leftover], dry_run: bool) -> Removal {
    let mut removal = Removal::default();
    if leftovers.is_empty() {
        return removal;
    }
    let names: Vec<&str> = leftovers.iter().map(|l| l.name.as_str()).collect();
    let names = names.join(" ");
    if dry_run {
        removal
            .said
            .push(format!("would remove containers {names}"));
        return removal;
    }
    match remove_containers(leftovers) {
        Ok(()) => removal.said.push(format!("removed containers {names}")),
        Err(e) => removal.failed.push(format!("{e:#}")),
    }
    removal
}

fn remove_containers(leftovers: &[Leftover]) -> Result<()> {
    let mut args = vec!["rm", "--force", "--volumes"];
    args.extend(leftovers.iter().map(|l| l.name.as_str()));
    docker(&args).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_is_a_run_prefix_only_when_the_name_carries_it_too() {
        let listed = parse_listing(
            "lkp1a2b3c-n1 \"lkp1a2b3c\"\n\
             lkp1a2b3c-n2 \"lkp1a2b3c\"\n\
             evil \"../../tmp/X\"\n\
             root \"/\"\n\
             lkp0000aa-n1 \"lkp0000ab\"\n\
             victim \"x\\nvictim lkp1a2b3c\"\n\
             lkp0000ac-n1 \"lkp0000ac/..\"\n\
             broken lkp0000ad\n",
        );
        // The label with a newline stays one label: it cannot invent a line of its own.
        assert!(listed
            .iter()
            .any(|(label, _)| label == "x\nvictim lkp1a2b3c"));
        let mut complaints = Vec::new();
        let found = of_runs(listed, &mut |line| complaints.push(line));
        let found: Vec<(&str, &str, &str)> = found
            .iter()
            .map(|l| (l.prefix.as_str(), l.name.as_str(), l.record.as_str()))
            .collect();
        assert_eq!(
            found,
            vec![
                ("lkp1a2b3c", "lkp1a2b3c-n1", "container lkp1a2b3c-n1"),
                ("lkp1a2b3c", "lkp1a2b3c-n2", "container lkp1a2b3c-n2"),
            ]
        );
        // Every other parsed line is named, and left alone.
        assert_eq!(complaints.len(), 5, "{complaints:?}");
        assert!(complaints[0].starts_with("container \"evil\": its label lockpick.prefix="));
    }

    #[test]
    fn a_dry_run_names_the_containers_and_removes_none() {
        let leftover = |name: &str| Leftover {
            prefix: "lkp1a2b3c".into(),
            record: format!("container {name}"),
            name: name.into(),
            pids: Vec::new(),
        };
        let removal = remove(&[leftover("lkp1a2b3c-n1"), leftover("lkp1a2b3c-c0")], true);
        assert_eq!(
            removal.said,
            vec!["would remove containers lkp1a2b3c-n1 lkp1a2b3c-c0".to_string()]
        );
        assert_eq!(remove(&[], false), Removal::default());
    }
}

//! `--runtime`, `--image` and `--server-bin`, checked against the runtime and service catalogues
//! and against the machine, before anything is created.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Result;

use super::server_bin;
use crate::bad_input::bad;
use crate::runtime::{self, RuntimeKind};
use crate::service::catalogue;
use crate::service::entry::ClockMover;

/// Where a run's nodes live and which servers they run.
pub struct RuntimeChoice {
    pub kind: &'static dyn RuntimeKind,
    /// `--image`: server images by service.
    pub images: BTreeMap<String, String>,
    /// `--server-bin`: server programs by service.
    pub server_bins: BTreeMap<String, PathBuf>,
}

/// `--runtime`, `--image` and `--server-bin`, checked against the machine: a runtime that
/// cannot work here (no Docker engine, a missing image) stops the run before anything is
/// created.
pub fn choose(
    name: &str,
    image_flags: &[String],
    server_bin_flags: &[String],
    service: &str,
    server_clock: bool,
) -> Result<RuntimeChoice> {
    let kind = runtime::find(name).ok_or_else(|| {
        bad(format!(
            "--runtime {name} is not a runtime lockpick knows: use one of {}",
            runtime::names().join(", ")
        ))
    })?;
    let mut images = BTreeMap::new();
    for word in image_flags {
        let Some((service, image)) = word.split_once('=').filter(|(s, i)| {
            catalogue::find(s).is_some() && !i.is_empty() && !i.contains(char::is_whitespace)
        }) else {
            let example = catalogue::SERVICES[0].name;
            return Err(bad(format!(
                "--image {word} must be service=image with a service among {} (e.g. \
                 {example}={})",
                catalogue::names().join(", "),
                runtime::docker::default_image(example)
            )));
        };
        images.insert(service.to_string(), image.to_string());
    }
    // Before the machine is asked: a flag this runtime cannot take is the line to show.
    let server_bins = server_bin::choose(kind, server_bin_flags)?;
    let mover = catalogue::find(service).map(|s| s.clock_mover);
    if server_clock && mover == Some(ClockMover::Vdso) && !kind.server_pids_reachable() {
        return Err(bad(format!(
            "--nemesis: clock nemeses on {service}'s servers need --runtime netns: their clocks \
             move by patching the server process's vDSO through ptrace, which needs the \
             server's own pid (with --runtime {name} it runs out of reach)"
        )));
    }
    let faketime = server_clock && mover == Some(ClockMover::Faketime);
    if let Some(why) = kind.unavailable(service, &images, faketime) {
        return Err(bad(why));
    }
    Ok(RuntimeChoice {
        kind,
        images,
        server_bins,
    })
}

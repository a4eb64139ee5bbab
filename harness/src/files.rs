//! How lockpick, running as root, writes files: only in folders nobody else can change under it,
//! each file created exclusively and never through a link.

pub mod folder_trust;
pub mod safe_write;

//! Sharding and merging: a stable split of a matrix over CI jobs (`split`), what each shard
//! records for the merge (`record`) and the runs it keeps beside it (`runs`), and `lockpick
//! merge`, which judges every shard's cells again from those runs (`merge`).

pub(crate) mod merge;
pub(crate) mod record;
pub(crate) mod runs;
pub mod split;

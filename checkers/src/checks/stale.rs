//! The stale-accesses checker as outputs tell it.

use super::{Checker, Finding, Sentence};
use crate::model::{AccessKind, Model, Setup};
use crate::stale_accesses::StaleAccesses;
use crate::words::{capitalised, count, seconds, token};

impl Checker for StaleAccesses {
    fn name(&self) -> &'static str {
        "stale writes accepted"
    }

    fn finding(&self) -> Finding {
        Finding::broken_if(self.stale_writes > 0, || {
            format!(
                "{} stale writes and {} stale reads accepted",
                self.stale_writes, self.stale_reads
            )
        })
    }

    fn story_kinds(&self) -> &'static [&'static str] {
        &["stale-write", "stale-read"]
    }

    fn summary_lines(&self, _setup: Option<&Setup>) -> Vec<String> {
        let mut out = vec![format!(
            "  stale writes accepted: {}; stale reads accepted: {}; accesses rejected by fencing: {}",
            self.stale_writes, self.stale_reads, self.rejected
        )];
        let first = self
            .violations
            .iter()
            .find(|v| v.access.kind == AccessKind::Write)
            .or(self.violations.first());
        if let Some(v) = first {
            let verb = match v.access.kind {
                AccessKind::Write => "wrote",
                AccessKind::Read => "read",
            };
            out.push(format!(
                "    first: client {} {verb} at {} under acquisition {} ({}) and the resource \
                 accepted it, although at {} it had accepted client {}'s access under the newer \
                 acquisition {} ({})",
                v.access.process,
                seconds(v.access.time),
                v.holder.acquisition,
                token(&v.holder),
                seconds(v.overtaken_by.time),
                v.overtaken_by.process,
                v.newer_holder.acquisition,
                token(&v.newer_holder),
            ));
        }
        out
    }

    fn table_rows(&self) -> Vec<(&'static str, String)> {
        vec![
            ("stale writes accepted", self.stale_writes.to_string()),
            ("stale reads accepted", self.stale_reads.to_string()),
            ("accesses rejected by fencing", self.rejected.to_string()),
        ]
    }

    /// What the resource did with stale accesses: told with the fence, as fencing is what
    /// stands between them and the resource.
    fn headline(&self, model: &Model) -> Vec<Sentence> {
        self.fence_words(model)
            .map(|fence| Sentence::new("fence", capitalised(&fence)))
            .into_iter()
            .collect()
    }

    /// Stale reads lose nothing by themselves: told last, and not where fencing rejected them.
    fn footnotes(&self, model: &Model) -> Vec<Sentence> {
        let fenced = model.setup.as_ref().is_some_and(Setup::fenced_with_tokens);
        if self.stale_reads == 0 || fenced {
            return Vec::new();
        }
        vec![Sentence::new(
            "stale-reads",
            format!(
                "{} accepted (reported, but not a violation on {}: a read changes nothing)",
                count(self.stale_reads, "stale read", "stale reads"),
                if self.stale_reads == 1 {
                    "its own"
                } else {
                    "their own"
                }
            ),
        )]
    }
}

impl StaleAccesses {
    /// What the resource did with stale accesses, when it matters: always with fencing on, and
    /// with fencing off when stale writes got through.
    fn fence_words(&self, model: &Model) -> Option<String> {
        let setup = model.setup.as_ref()?;
        let writes = count(self.stale_writes, "stale write", "stale writes");
        // A client program's token is a promise: it counts only if a grant carried one.
        let reported = model.holds.iter().any(|h| h.token.is_some());
        match (setup.fencing == "on", setup.gives_tokens() && reported) {
            (true, true) if self.stale_writes == 0 && self.stale_reads == 0 => {
                self.fence_held(model).or_else(|| {
                    Some("the fence was never tested: no stale access reached the resource".into())
                })
            }
            (true, true) => Some(format!(
                "the fence failed: it accepted {writes} and {} (and rejected {})",
                count(self.stale_reads, "stale read", "stale reads"),
                self.rejected
            )),
            (true, false) if self.stale_writes > 0 => Some(format!(
                "fencing was on, but {} gives no token to check: the resource accepted {writes}",
                setup.label()
            )),
            (true, false) => Some(format!(
                "fencing was on, but {} gives no token to check; no stale write reached the \
                 resource",
                setup.label()
            )),
            (false, _) if self.stale_writes > 0 => Some(format!(
                "the resource accepted {writes} from {} already overtaken (fencing was off)",
                if self.stale_writes == 1 {
                    "a holder"
                } else {
                    "holders"
                }
            )),
            (false, _) => None,
        }
    }

    /// "the fence held: it rejected 3 stale accesses (3 writes) and accepted none", when the
    /// fence rejected any and let none through.
    pub fn fence_held(&self, model: &Model) -> Option<String> {
        if self.rejected == 0 || self.stale_writes > 0 || self.stale_reads > 0 {
            return None;
        }
        let rejected = |kind| {
            model
                .accesses
                .iter()
                .filter(|a| !a.accepted && a.kind == kind)
                .count()
        };
        let (writes, reads) = (rejected(AccessKind::Write), rejected(AccessKind::Read));
        let mut kinds = Vec::new();
        if writes > 0 {
            kinds.push(count(writes, "write", "writes"));
        }
        if reads > 0 {
            kinds.push(count(reads, "read", "reads"));
        }
        Some(format!(
            "the fence held: it rejected {} ({}) and accepted none",
            count(self.rejected, "stale access", "stale accesses"),
            kinds.join(", ")
        ))
    }
}

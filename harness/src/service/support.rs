//! Whether a lock or service supports something a nemesis needs, and why not when it does not.
//! Shared by the lock and service catalogues, so that neither has to import the other for it.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Support {
    Yes,
    /// Not supported, with the reason in words (shown to the user as is).
    No(&'static str),
}

impl Support {
    pub fn is_yes(self) -> bool {
        self == Support::Yes
    }
}

//! What a nemesis's faults hit, declared once per nemesis as its [`Aim`]: a random server or a
//! random client, drawn with each window; the server that leads when a fault opens; the holder
//! whose operation sets a fault off; or windows the nemesis draws itself. The aim draws each window's targets and, when a fault
//! opens, finds what it hits, so that a nemesis's `begin` is handed exactly that (and a fault
//! with nothing to hit does not begin).

use anyhow::Result;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use super::window::{Shape, Targets, Window};
use super::{Context, Fault, Holder, Trigger};

/// A fault that began, or `None`: there was nothing to hit.
pub type Begun = Result<Option<Box<dyn Fault>>>;

/// What a nemesis's faults hit, with the nemesis that begins them there.
pub enum Aim<'a> {
    /// One random lock-service server, drawn with each window.
    Server(&'a dyn OnServer),
    /// The server the service names as leader when the fault opens (the window says only
    /// "the leader"): the fault begins there as a server's would, and its records say which
    /// server led, and whether leadership moved before it healed (see [`super::leader_aim`]).
    Leader(&'a dyn OnServer),
    /// One random client node, drawn with each window; the fault hits the process running
    /// there when it opens.
    Client(&'a dyn OnClient),
    /// The client whose operation sets the fault off: the next to acquire
    /// ([`Trigger::Acquired`]) or to read the resource ([`Trigger::Read`]).
    Holder(Trigger, &'a dyn OnHolder),
    /// Windows the nemesis draws itself (the cuts of a partition), naming nodes of this kind.
    Drawn(Targets, &'a dyn Draws),
}

/// Begins a fault on the server its window drew (`node`, the first of the window's targets).
pub trait OnServer {
    fn begin(&self, node: &str, window: &Window, ctx: &mut Context) -> Begun;
}

/// The client a window drew: its node, and the process running there when the fault opens.
pub struct Client {
    pub slot: String,
    pub process: u64,
}

/// Begins a fault on the client its window drew.
pub trait OnClient {
    fn begin(&self, client: Client, ctx: &mut Context) -> Begun;
}

/// Begins a fault on the holder whose operation set it off.
pub trait OnHolder {
    fn begin(&self, holder: &Holder, window: &Window, ctx: &mut Context) -> Begun;
}

/// Draws a window's targets (and cuts) itself, and begins a fault on them.
pub trait Draws {
    fn draw(&self, window: &mut Window, shape: &Shape, rng: &mut ChaCha8Rng);
    fn begin(&self, window: &Window, ctx: &mut Context) -> Begun;
}

impl Aim<'_> {
    /// What kind of node the windows name (a replayed schedule is checked against it).
    pub fn targets(&self) -> Targets {
        match self {
            Aim::Server(_) => Targets::Servers,
            Aim::Leader(_) => Targets::Leader,
            Aim::Client(_) => Targets::Clients,
            Aim::Holder(..) => Targets::Holder,
            Aim::Drawn(targets, _) => *targets,
        }
    }

    /// What opens a fault once its window has begun.
    pub fn trigger(&self) -> Trigger {
        match self {
            Aim::Holder(trigger, _) => *trigger,
            _ => Trigger::Time,
        }
    }

    /// Chooses what a window hits (a holder's fault finds its target when it goes off).
    pub fn draw(&self, window: &mut Window, shape: &Shape, rng: &mut ChaCha8Rng) {
        match self {
            Aim::Server(_) => {
                window.targets = shape.servers.choose(rng).cloned().into_iter().collect()
            }
            Aim::Leader(_) => window.targets = vec![super::window::LEADER.to_string()],
            Aim::Client(_) => {
                window.targets = shape.clients.choose(rng).cloned().into_iter().collect()
            }
            Aim::Holder(..) => {}
            Aim::Drawn(_, nemesis) => nemesis.draw(window, shape, rng),
        }
    }

    /// Begins the window's fault on what it hits now: `holder` is the client whose operation
    /// set it off, for a holder's fault.
    pub fn begin(&self, window: &Window, holder: Option<&Holder>, ctx: &mut Context) -> Begun {
        match self {
            Aim::Server(nemesis) => match window.targets.first() {
                Some(node) => nemesis.begin(node, window, ctx),
                None => Ok(None),
            },
            Aim::Leader(nemesis) => super::leader_aim::begin(*nemesis, window, ctx),
            Aim::Client(nemesis) => {
                let Some(slot) = window.targets.first() else {
                    return Ok(None);
                };
                let Some(process) = ctx.cluster.process_in(slot) else {
                    return Ok(None);
                };
                let slot = slot.clone();
                nemesis.begin(Client { slot, process }, ctx)
            }
            Aim::Holder(_, nemesis) => match holder {
                Some(holder) => nemesis.begin(holder, window, ctx),
                None => Ok(None),
            },
            Aim::Drawn(_, nemesis) => nemesis.begin(window, ctx),
        }
    }
}

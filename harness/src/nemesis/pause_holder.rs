//! `pause-holder`: the failure at the heart of the problem. Right after a client's acquire
//! succeeds, freeze that client for longer than the lease, then resume it. While it sleeps its
//! lease expires and another client takes the lock; when it wakes it still believes it holds it.

use std::time::Duration;

use anyhow::Result;
use lockpick_checkers::{Op, OpType, Process, F};
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::freeze::Pause;
use super::{quiet_period, Context, Nemesis};

enum State {
    /// Waiting until this time before aiming at the next holder.
    Quiet {
        until: u64,
    },
    /// The next client to acquire gets frozen.
    Armed,
    Frozen(Pause),
    Healed,
}

pub struct PauseHolder {
    rng: ChaCha8Rng,
    pause: Duration,
    interval: Duration,
    state: State,
}

impl PauseHolder {
    pub fn new(mut rng: ChaCha8Rng, pause: Duration, interval: Duration) -> PauseHolder {
        let until = quiet_period(&mut rng, interval);
        PauseHolder {
            rng,
            pause,
            interval,
            state: State::Quiet { until },
        }
    }
}

impl Nemesis for PauseHolder {
    fn on_op(&mut self, op: &Op, ctx: &mut Context) -> Result<()> {
        let (State::Armed, Process::Client(p), OpType::Ok, F::Acquire) =
            (&self.state, &op.process, op.kind, op.f)
        else {
            return Ok(());
        };
        let Some(&pid) = ctx.targets.clients.get(p) else {
            return Ok(());
        };
        let acquisition = op.value["acquisition"].as_str().unwrap_or("?");
        let trigger = json!({ "trigger": format!("holder of acquisition {acquisition}") });
        let pause = Pause::begin(ctx, pid, op.process.to_string(), self.pause, trigger)?;
        self.state = State::Frozen(pause);
        Ok(())
    }

    fn on_tick(&mut self, ctx: &mut Context) -> Result<()> {
        match std::mem::replace(&mut self.state, State::Healed) {
            State::Quiet { until } if ctx.now >= until => self.state = State::Armed,
            State::Frozen(pause) if ctx.now >= pause.until => {
                pause.end(ctx)?;
                let until = ctx.now + quiet_period(&mut self.rng, self.interval);
                self.state = State::Quiet { until };
            }
            unchanged => self.state = unchanged,
        }
        Ok(())
    }

    fn heal(&mut self, ctx: &mut Context) -> Result<()> {
        match std::mem::replace(&mut self.state, State::Healed) {
            State::Frozen(pause) => pause.end(ctx),
            _ => Ok(()),
        }
    }
}

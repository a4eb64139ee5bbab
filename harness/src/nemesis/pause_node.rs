//! `pause-node`: freeze a random lock-service server for a while, then resume it. A frozen
//! server still accepts TCP connections (the kernel's backlog) but answers nothing, so clients
//! see timeouts: unknown outcomes.

use std::time::Duration;

use anyhow::Result;
use lockpick_checkers::Op;
use rand::seq::IteratorRandom;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::freeze::Pause;
use super::{quiet_period, Context, Nemesis};

enum State {
    Quiet { until: u64 },
    Frozen(Pause),
    Healed,
}

pub struct PauseNode {
    rng: ChaCha8Rng,
    pause: Duration,
    interval: Duration,
    state: State,
}

impl PauseNode {
    pub fn new(mut rng: ChaCha8Rng, pause: Duration, interval: Duration) -> PauseNode {
        let until = quiet_period(&mut rng, interval);
        PauseNode {
            rng,
            pause,
            interval,
            state: State::Quiet { until },
        }
    }
}

impl Nemesis for PauseNode {
    fn on_op(&mut self, _op: &Op, _ctx: &mut Context) -> Result<()> {
        Ok(())
    }

    fn on_tick(&mut self, ctx: &mut Context) -> Result<()> {
        match std::mem::replace(&mut self.state, State::Healed) {
            State::Quiet { until } if ctx.now >= until => {
                let Some((node, &pid)) = ctx.targets.servers.iter().choose(&mut self.rng) else {
                    self.state = State::Quiet { until };
                    return Ok(());
                };
                let pause = Pause::begin(ctx, pid, node.clone(), self.pause, json!({}))?;
                self.state = State::Frozen(pause);
            }
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

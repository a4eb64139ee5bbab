//! The headline's sentences for hand-made histories.

use super::*;

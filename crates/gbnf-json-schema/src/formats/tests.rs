//! Format tests: each format's automaton on valid and invalid samples.

use super::*;

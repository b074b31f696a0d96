//! Number leaf tests: decimal parsing and ordering, and the automaton's verdicts.

use super::*;

//! ECMA-262 patterns as automata: translation to `regex-syntax`, then HIR → NFA → DFA over
//! code-point intervals, and the DFA operations (product, minimisation) that every leaf
//! uses, and the right-linear grammar a DFA prints as.

//! The reader: GBNF text in the llama.cpp dialect → IR, with located errors.

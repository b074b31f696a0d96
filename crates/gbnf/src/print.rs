//! The printer: IR → GBNF text that llama.cpp always loads.

//! The matcher: decides, per code point and with llama.cpp's semantics, whether a grammar accepts a string.

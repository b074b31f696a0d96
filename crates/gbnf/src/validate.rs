//! The validator: refuses exactly the grammars llama.cpp refuses, and warns about the rest.

//! The AST as comparable rows, for the streaming tests that compare a stream's AST with a
//! fresh parse's. Included with `#[path]` (each test is its own crate).

use gbnf_peg::{Ast, NodeId};

/// The reachable AST as comparable rows: (parser, start, end, partial, depth).
pub fn rows(ast: &Ast) -> Vec<(NodeId, usize, usize, bool, usize)> {
    let mut out = Vec::new();
    let mut stack: Vec<_> = ast.roots().iter().rev().map(|&id| (id, 0)).collect();
    while let Some((id, depth)) = stack.pop() {
        let node = ast.node(id);
        out.push((node.parser, node.start, node.end, node.is_partial, depth));
        stack.extend(
            ast.children(id)
                .iter()
                .rev()
                .map(|&child| (child, depth + 1)),
        );
    }
    out
}

//! An iterative post-order fold over expressions, so that no walk over the IR recurses
//! as deep as the IR is nested.

use crate::ir::Expr;

/// The direct sub-expressions of `expr`, in order.
pub(crate) fn children(expr: &Expr) -> &[Expr] {
    match expr {
        Expr::Seq(items) | Expr::Alt(items) => items,
        Expr::Repeat { expr, .. } => std::slice::from_ref(expr),
        _ => &[],
    }
}

/// Folds `expr` bottom-up: `f` gets each node with the values of its children (which it
/// may take out of the slice).
pub(crate) fn fold<T>(expr: &Expr, mut f: impl FnMut(&Expr, &mut [T]) -> T) -> T {
    enum Step<'e> {
        Enter(&'e Expr),
        Exit(&'e Expr, usize),
    }
    // Sized for a typical rule body, so that the stacks rarely grow.
    let mut steps = Vec::with_capacity(32);
    steps.push(Step::Enter(expr));
    let mut values: Vec<T> = Vec::with_capacity(32);
    while let Some(step) = steps.pop() {
        match step {
            Step::Enter(node) => {
                let kids = children(node);
                if kids.is_empty() {
                    // A leaf (most nodes): its value at once, without a step to exit it.
                    values.push(f(node, &mut []));
                } else {
                    steps.push(Step::Exit(node, kids.len()));
                    steps.extend(kids.iter().rev().map(Step::Enter));
                }
            }
            Step::Exit(node, n_kids) => {
                let first = values.len().saturating_sub(n_kids);
                let value = f(node, &mut values[first..]);
                values.truncate(first);
                values.push(value);
            }
        }
    }
    // The last exit is the root's, so exactly one value is left.
    match values.pop() {
        Some(value) => value,
        None => f(expr, &mut []),
    }
}

/// Calls `f` on every node of `expr`, parents before children, left to right.
pub(crate) fn visit<'e>(expr: &'e Expr, mut f: impl FnMut(&'e Expr)) {
    let mut stack = vec![expr];
    while let Some(node) = stack.pop() {
        f(node);
        stack.extend(children(node).iter().rev());
    }
}

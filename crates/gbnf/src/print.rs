//! The printer: IR → GBNF text that llama.cpp always loads.
//!
//! [`print`] first legalizes the grammar (see `legalize.rs`: repetitions over llama.cpp's
//! limits are rewritten into equivalent ones that load), then writes it:
//! - one rule per line, `root` first if defined, then the other rules in order of first
//!   reference in the output (breadth-first), then the rules not reachable that way in
//!   definition order (each followed by what it alone reaches);
//! - only llama.cpp's escapes: `\t \r \n \\ \" \[ \]`, `\xHH` / `\uHHHH` for control and
//!   invisible characters, and `\x2D` / `\x5E` for a `-` or `^` that would otherwise be
//!   read as syntax in a class; everything else is raw UTF-8;
//! - minimal parentheses, except around a repetition that is repeated again: llama.cpp
//!   treats `x**` (left recursion) and `(x*)*` (accepted) differently, and the group is
//!   what loads;
//! - the empty string as `""`, never as an empty alternative, because a line that ends
//!   in `|` or `::=` continues on the next line;
//! - classes that match nothing as `[^\x00-\U0010FFFF]`, which is also how an empty
//!   alternation is printed.
//!
//! A negated class never excludes a character past ASCII (the IR keeps such a class as the
//! positive class of the rest, see `CharClass::new`): llama.cpp checks the first bytes of a
//! character that a token cuts against a negated class by whether any character they may
//! begin is excluded, so `[^\u2028]` would refuse the first byte of `–`.

use std::collections::{HashMap, VecDeque};
use std::fmt::Write;

use crate::ir::{CharClass, Expr, Grammar, TokenKind};
use crate::legalize::Patched;

/// Prints `grammar` as GBNF that llama.cpp loads, deterministically.
///
/// `read(&print(&g)) == Ok(g)` for every canonical grammar within llama.cpp's limits;
/// other grammars print as an equivalent legal grammar (with helper rules).
///
/// One pass over the rules, in definition order, checks each rule
/// (`legalize::surely_legal`) and prints it while its nodes are in cache; only the rules
/// that are not surely legal are then legalized (`legalize::legalize_rules`) and printed
/// from their fixed bodies, with the helper rules that fixing made. With a separate
/// legality pass first, each of the two passes waited on the first load of every expression
/// (one pass has a fifth fewer misses in a 1 MB cache on a compiled 2 MB grammar).
pub fn print(grammar: &Grammar) -> String {
    let mut lines = LinePrinter::new(grammar.rules.len(), false);
    let mut suspects = Vec::new();
    for (index, (name, body)) in grammar.rules.iter().enumerate() {
        if crate::legalize::surely_legal(body) {
            lines.print(name.as_str(), body);
        } else {
            suspects.push(index);
            lines.skip();
        }
    }
    let patched = crate::legalize::legalize_rules(grammar, &suspects);
    for &index in &suspects {
        if let Some((name, body)) = patched.get_index(index) {
            lines.reprint(index, name.as_str(), body);
        }
    }
    for index in grammar.rules.len()..patched.len() {
        if let Some((name, body)) = patched.get_index(index) {
            lines.print(name.as_str(), body);
        }
    }
    lines.finish(&patched).text
}

/// Printed text, and (when tracked) which repetition each repetition operator's offset
/// came from, identified by its address in the printed grammar.
#[derive(Debug, Default)]
pub(crate) struct Printed {
    pub text: String,
    pub repeats: HashMap<usize, usize>,
}

/// Prints `grammar` as it is, without legalizing it (see [`LinePrinter`]).
pub(crate) fn print_patched(grammar: &Patched<'_>, track: bool) -> Printed {
    let mut lines = LinePrinter::new(grammar.len(), track);
    for index in 0..grammar.len() {
        match grammar.get_index(index) {
            Some((name, body)) => lines.print(name.as_str(), body),
            None => lines.skip(),
        }
    }
    lines.finish(grammar)
}

/// Prints rules one line each, in the order it is given them, which is definition order:
/// the order their expressions were made in and mostly the order they sit in memory. It
/// notes the rules each line names as it goes; [`LinePrinter::finish`] then puts the lines
/// in print order (`rule_order`) by copying text. Walking the expressions in print order
/// instead, once to order the rules and once to print them, jumps around memory: on a
/// 5,000-rule grammar most of the time went to cache misses on the first read of each
/// expression.
struct LinePrinter<'g> {
    printer: Printer<'g>,
    /// For each rule, by index: its line in `printer.out`, the names it references (a range
    /// of `printer.names`) and its repetition operators (a range of `printer.repeats`).
    lines: Vec<Line>,
    tasks: Vec<Task<'g>>,
}

impl<'g> LinePrinter<'g> {
    fn new(n_rules: usize, track: bool) -> LinePrinter<'g> {
        // Sized for a compiled grammar's typical line (~300 bytes naming ~15 rules), so that
        // a large grammar's text is not copied by doubling five times over.
        LinePrinter {
            printer: Printer {
                out: String::with_capacity(n_rules.saturating_mul(256)),
                repeats: Vec::new(),
                track,
                names: Vec::with_capacity(n_rules.saturating_mul(16)),
            },
            lines: Vec::with_capacity(n_rules),
            tasks: Vec::new(),
        }
    }

    /// Prints the next rule's line.
    fn print(&mut self, name: &str, body: &'g Expr) {
        let line = self.line(name, body);
        self.lines.push(line);
    }

    /// Leaves the next rule's line empty, for [`LinePrinter::reprint`].
    fn skip(&mut self) {
        self.lines.push(Line::default());
    }

    /// Prints rule `index`'s line again, with this body.
    fn reprint(&mut self, index: usize, name: &str, body: &'g Expr) {
        let line = self.line(name, body);
        if let Some(slot) = self.lines.get_mut(index) {
            *slot = line;
        }
    }

    fn line(&mut self, name: &str, body: &'g Expr) -> Line {
        let printer = &mut self.printer;
        let (start, names, repeats) = (
            printer.out.len(),
            printer.names.len(),
            printer.repeats.len(),
        );
        printer.out.push_str(name);
        printer.out.push_str(" ::= ");
        printer.expr(body, &mut self.tasks);
        printer.out.push('\n');
        Line {
            text: start..printer.out.len(),
            names: names..printer.names.len(),
            repeats: repeats..printer.repeats.len(),
        }
    }

    /// The lines in print order; `grammar` has the rules printed, by index.
    fn finish(self, grammar: &Patched<'_>) -> Printed {
        let LinePrinter { printer, lines, .. } = self;
        let mut printed = Printed {
            text: String::with_capacity(printer.out.len()),
            repeats: HashMap::with_capacity(printer.repeats.len()),
        };
        for index in rule_order(grammar, &lines, &printer.names) {
            let line = &lines[index];
            let shift = printed.text.len() as isize - line.text.start as isize;
            printed.text.push_str(&printer.out[line.text.clone()]);
            for &(offset, id) in &printer.repeats[line.repeats.clone()] {
                printed
                    .repeats
                    .insert(offset.wrapping_add_signed(shift), id);
            }
        }
        printed
    }
}

/// Where one rule's line is in `Printer::out`, and its references and repetitions.
#[derive(Default)]
struct Line {
    text: std::ops::Range<usize>,
    names: std::ops::Range<usize>,
    repeats: std::ops::Range<usize>,
}

/// The indices of the defined rules in print order: `root`, then breadth-first by first
/// reference, then the rest in definition order. `lines[i].names` are the names rule `i`
/// references, in the order it prints them.
///
/// A reference is looked up by the address of its text first: compilers and the reader
/// share one `Arc<str>` between a rule's definition and its references, so an address and
/// length compared as two words replace hashing and comparing the name (a 2 MB grammar
/// holds some 100,000 references). A name made separately is looked up by its text.
fn rule_order(grammar: &Patched<'_>, lines: &[Line], names: &[&str]) -> Vec<usize> {
    let n_rules = grammar.len();
    let by_address: HashMap<(usize, usize), usize, crate::FastHash> = (0..n_rules)
        .filter_map(|index| {
            let (name, _) = grammar.get_index(index)?;
            let text = name.as_str();
            Some(((text.as_ptr() as usize, text.len()), index))
        })
        .collect();
    let index_of = |name: &str| {
        by_address
            .get(&(name.as_ptr() as usize, name.len()))
            .copied()
            .or_else(|| grammar.index_of(name))
    };
    let mut order: Vec<usize> = Vec::with_capacity(n_rules);
    let mut seen = vec![false; n_rules];
    let roots = grammar.index_of("root").into_iter().chain(0..n_rules);
    let mut queue: VecDeque<usize> = VecDeque::new();
    for start in roots {
        if std::mem::replace(&mut seen[start], true) {
            continue;
        }
        queue.push_back(start);
        while let Some(index) = queue.pop_front() {
            order.push(index);
            for &target in &names[lines[index].names.clone()] {
                if let Some(target) = index_of(target) {
                    if !std::mem::replace(&mut seen[target], true) {
                        queue.push_back(target);
                    }
                }
            }
        }
    }
    order
}

struct Printer<'g> {
    out: String,
    /// When tracked: (offset in `out`, repetition) for each repetition operator.
    repeats: Vec<(usize, usize)>,
    track: bool,
    /// The names of the rules referenced, in print order.
    names: Vec<&'g str>,
}

/// Where an expression is printed, which decides whether it needs parentheses.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    /// A rule body or the inside of a group.
    Top,
    /// An alternative.
    AltItem,
    /// An item of a sequence.
    SeqItem,
    /// The item of a repetition.
    RepItem,
}

/// What is left to print of the expressions opened so far, innermost last.
enum Task<'g> {
    /// The items of a sequence (joined by ` `, each in `Ctx::SeqItem`) or an alternation
    /// (joined by ` | `, each in `Ctx::AltItem`) from `next` on.
    Items {
        items: &'g [Expr],
        next: usize,
        alt: bool,
    },
    Str(&'static str),
    Suffix(&'g Expr),
}

impl<'g> Printer<'g> {
    /// Prints `body`, with `tasks` (empty, reused between rules) as the explicit stack.
    ///
    /// Leaves print where they are met; only a sequence or alternation of several items
    /// takes a task, which stays on the stack and hands out its items one at a time (most
    /// items are leaves, printed without a push).
    fn expr(&mut self, body: &'g Expr, tasks: &mut Vec<Task<'g>>) {
        self.node(body, Ctx::Top, tasks);
        while let Some(task) = tasks.last_mut() {
            match task {
                Task::Items { items, next, alt } => {
                    let Some(item) = items.get(*next) else {
                        tasks.pop();
                        continue;
                    };
                    // Constant separators, so that they are stores rather than calls.
                    let ctx = match (*alt, *next > 0) {
                        (false, false) => Ctx::SeqItem,
                        (false, true) => {
                            self.out.push(' ');
                            Ctx::SeqItem
                        }
                        (true, false) => Ctx::AltItem,
                        (true, true) => {
                            self.out.push_str(" | ");
                            Ctx::AltItem
                        }
                    };
                    *next += 1;
                    self.node(item, ctx, tasks);
                }
                Task::Str(text) => {
                    self.out.push_str(text);
                    tasks.pop();
                }
                Task::Suffix(expr) => {
                    let expr = *expr;
                    tasks.pop();
                    self.suffix(expr);
                }
            }
        }
    }

    /// Prints `expr` in `ctx` as far as it goes without a task: a leaf whole, a composite
    /// down to its first item that needs one, the rest left on `tasks`.
    fn node(&mut self, mut expr: &'g Expr, mut ctx: Ctx, tasks: &mut Vec<Task<'g>>) {
        loop {
            let parens = match expr {
                Expr::Alt(items) if items.len() >= 2 => ctx != Ctx::Top,
                Expr::Seq(items) if items.len() >= 2 => matches!(ctx, Ctx::SeqItem | Ctx::RepItem),
                Expr::Repeat { .. } | Expr::Empty => ctx == Ctx::RepItem,
                _ => false,
            };
            if parens {
                self.out.push('(');
                tasks.push(Task::Str(")"));
                ctx = Ctx::Top;
            }
            match expr {
                Expr::Empty => self.out.push_str("\"\""),
                Expr::Literal(text) => self.literal(text),
                Expr::Class(class) => self.class(class),
                Expr::Any => self.out.push('.'),
                Expr::Rule(name) => {
                    self.out.push_str(name.as_str());
                    self.names.push(name.as_str());
                }
                Expr::Token(token) => {
                    if token.negated {
                        self.out.push('!');
                    }
                    match &token.kind {
                        TokenKind::Id(id) => {
                            let _ = write!(self.out, "<[{id}]>");
                        }
                        TokenKind::Text(text) => {
                            self.out.push('<');
                            self.out.push_str(text);
                            self.out.push('>');
                        }
                    }
                }
                Expr::Alt(items) if items.is_empty() => {
                    self.class(&crate::read::never_class());
                }
                Expr::Seq(items) | Expr::Alt(items) if items.len() == 1 => {
                    expr = &items[0];
                    continue;
                }
                Expr::Seq(items) if items.is_empty() => self.out.push_str("\"\""),
                Expr::Seq(items) => tasks.push(Task::Items {
                    items,
                    next: 0,
                    alt: false,
                }),
                Expr::Alt(items) => tasks.push(Task::Items {
                    items,
                    next: 0,
                    alt: true,
                }),
                Expr::Repeat { expr: inner, .. } => {
                    tasks.push(Task::Suffix(expr));
                    expr = inner;
                    ctx = Ctx::RepItem;
                    continue;
                }
            }
            return;
        }
    }

    fn suffix(&mut self, expr: &Expr) {
        let Expr::Repeat { min, max, .. } = expr else {
            return;
        };
        if self.track {
            self.repeats
                .push((self.out.len(), expr as *const Expr as usize));
        }
        let _ = match (*min, *max) {
            (0, Some(1)) => self.out.write_char('?'),
            (0, None) => self.out.write_char('*'),
            (1, None) => self.out.write_char('+'),
            (min, None) => write!(self.out, "{{{min},}}"),
            (min, Some(max)) if min == max => write!(self.out, "{{{min}}}"),
            (min, Some(max)) => write!(self.out, "{{{min},{max}}}"),
        };
    }

    /// Writes `text` quoted: runs of printable ASCII are copied whole, and only the
    /// characters between them are looked at one by one (a JSON key's literal is all
    /// plain bytes but for its two quotes).
    fn literal(&mut self, text: &str) {
        self.out.push('"');
        let plain = |b: u8| b.is_ascii_graphic() && b != b'"' && b != b'\\' || b == b' ';
        let mut rest = text;
        while let Some(at) = rest.bytes().position(|b| !plain(b)) {
            self.out.push_str(&rest[..at]);
            // `at` is a character boundary: every byte before it is ASCII.
            let mut chars = rest[at..].chars();
            let Some(ch) = chars.next() else {
                rest = "";
                break;
            };
            match ch {
                '"' => self.out.push_str("\\\""),
                '\\' => self.out.push_str("\\\\"),
                _ => push_char(&mut self.out, ch),
            }
            rest = chars.as_str();
        }
        self.out.push_str(rest);
        self.out.push('"');
    }

    fn class(&mut self, class: &CharClass) {
        let ranges = class.ranges();
        if ranges.is_empty() {
            // Matches nothing (or, negated, everything); `[]` would mean the empty string.
            self.out.push_str(if class.is_negated() {
                "[\\x00-\\U0010FFFF]"
            } else {
                "[^\\x00-\\U0010FFFF]"
            });
            return;
        }
        self.out.push('[');
        if class.is_negated() {
            self.out.push('^');
        }
        // A lone '-' goes last, where it reads as itself.
        let dash_alone = ranges.contains(&('-', '-'));
        let mut first = true;
        for &(lo, hi) in ranges {
            if dash_alone && lo == '-' {
                continue;
            }
            self.class_char(lo, first && !class.is_negated());
            first = false;
            if hi != lo {
                if u32::from(hi) > u32::from(lo) + 1 {
                    self.out.push('-');
                }
                self.class_char(hi, false);
            }
        }
        if dash_alone {
            self.out.push('-');
        }
        self.out.push(']');
    }

    fn class_char(&mut self, ch: char, first: bool) {
        match ch {
            '\\' => self.out.push_str("\\\\"),
            ']' => self.out.push_str("\\]"),
            '[' => self.out.push_str("\\["),
            '-' => self.out.push_str("\\x2D"),
            '^' if first => self.out.push_str("\\x5E"),
            _ => push_char(&mut self.out, ch),
        }
    }
}

/// Writes `ch`, escaped if it is a control or invisible character.
fn push_char(out: &mut String, ch: char) {
    if ch.is_ascii_graphic() || ch == ' ' {
        out.push(ch);
        return;
    }
    match ch {
        '\t' => out.push_str("\\t"),
        '\r' => out.push_str("\\r"),
        '\n' => out.push_str("\\n"),
        _ if needs_escape(ch) => {
            let code = u32::from(ch);
            // By hand: `write!` with a format spec is slow on the printer's hot path.
            let (prefix, digits) = if code <= 0xFF {
                ("\\x", 2)
            } else if code <= 0xFFFF {
                ("\\u", 4)
            } else {
                ("\\U", 8)
            };
            out.push_str(prefix);
            for shift in (0..digits).rev() {
                let nibble = (code >> (shift * 4)) & 0xF;
                out.push(char::from(b"0123456789ABCDEF"[nibble as usize]));
            }
        }
        _ => out.push(ch),
    }
}

/// Control characters, whitespace other than the space, and common invisible characters.
fn needs_escape(ch: char) -> bool {
    ch.is_control()
        || (ch.is_whitespace() && ch != ' ')
        || matches!(
            u32::from(ch),
            0xAD | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2064 | 0xFEFF | 0xFFF9..=0xFFFB
        )
        || (0xE000..=0xF8FF).contains(&u32::from(ch))
        || u32::from(ch) >= 0xF0000
}

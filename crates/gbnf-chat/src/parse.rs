//! Running a chat parser: a whole output to a [`Message`], or a streamed output chunk by
//! chunk to the message so far and what each chunk added.

use std::fmt;

use gbnf_peg::{Arena, Ast, AstId, Node, NodeId, Outcome, StreamParser};

use crate::mapper::{is_blank, Mapper};
use crate::message::{Message, MessageDelta, ToolCallDelta};
use crate::tags;

/// The output does not have the shape the parser describes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    /// Byte offset in the output where parsing stopped.
    pub offset: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The output does not match the parser.
    NoMatch,
    /// A new chunk would change text that was already emitted (the parser is not
    /// prefix-stable for this output).
    Retraction,
    /// The parse gave up at its step limit (`gbnf_peg::Outcome::StepLimit`): the parser's
    /// definition backtracks excessively on this output. The text names the rule.
    StepLimit(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "offset {}: ", self.offset)?;
        match self.kind {
            ErrorKind::NoMatch => f.write_str("the output does not match the chat parser"),
            ErrorKind::Retraction => {
                f.write_str("the parse would take back text that was already emitted")
            }
            ErrorKind::StepLimit(ref text) => f.write_str(text),
        }
    }
}

impl std::error::Error for Error {}

/// Parses a complete output.
pub fn parse_message(arena: &Arena, output: &str) -> Result<Message, Error> {
    let mut stream = ChatStream::new(arena);
    stream.feed(output)?;
    Ok(stream.finish()?.message.clone())
}

/// Maps the tagged nodes of an AST (over `input`) to a message.
pub fn map_ast(arena: &Arena, ast: &Ast, input: &[u8]) -> Message {
    map_spans(arena, Walker::new(arena).spans(ast), input)
}

/// The message the mapper makes of `spans` over `input`.
fn map_spans(arena: &Arena, spans: &[Span], input: &[u8]) -> Message {
    let mut mapper = Mapper::new();
    feed_spans(&mut mapper, arena, spans, input);
    mapper.finish()
}

/// Feeds `spans` (tagged nodes over `input`) to `mapper`.
fn feed_spans(mapper: &mut Mapper, arena: &Arena, spans: &[Span], input: &[u8]) {
    for span in spans {
        if let Node::Tag { tag, .. } = arena.node(span.parser) {
            let text = input.get(span.start..span.end).unwrap_or_default();
            mapper.node(tag, &String::from_utf8_lossy(text));
        }
    }
}

/// The state of a streamed message after a chunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Update<'s> {
    /// Everything emitted so far.
    pub message: &'s Message,
    /// What this chunk added.
    pub delta: MessageDelta,
    /// The parse of the output so far would have changed emitted text, so this update
    /// emitted nothing (the parser is not prefix-stable at this point).
    pub held_back: bool,
}

/// Parses an output as it streams. Each update only ever adds to what was emitted before.
///
/// An update costs about the new bytes plus a walk over the open tagged nodes, never a
/// mapping of the whole output. The walk skips what holds no tag the mapper reads (a call's
/// JSON arguments), keeps the walk before's tags of the nodes the parser has fixed (so that
/// complete calls are not visited again) and takes a complete node's tags from the walk
/// before in one step; then:
/// - when the only change to the tagged nodes is that the last one (content, reasoning, a
///   call's arguments) grew, the new text is appended;
/// - otherwise the nodes that are complete are mapped once, into a mapper kept from one
///   update to the next (`stable`), and only the nodes after them are mapped again, into a
///   fork of it (see [`Mapper`]'s `fork`).
#[derive(Debug)]
pub struct ChatStream<'a> {
    arena: &'a Arena,
    parser: StreamParser<'a>,
    /// Its `out` holds the tagged nodes of the latest parse.
    walker: Walker,
    emitted: Message,
    /// Whether `emitted` is exactly the mapping of the walk before the latest one (not after
    /// a hold-back).
    mapped: bool,
    /// The mapper fed with `stable_spans`: the complete tagged nodes at the start of a
    /// recent parse. Started again if a parse no longer begins with them.
    stable: Mapper,
    stable_spans: Vec<Span>,
    /// Whether the reasoning in `stable` is only white space.
    stable_blank: bool,
    /// How many leading spans every walk kept since `stable_spans` was last found to begin
    /// the walk's spans: while it covers them, they still do.
    unchanged: usize,
    /// How many leading calls of `stable` are in `emitted` as they are (all but its last,
    /// which more nodes may extend, after a delta made from it).
    matched_calls: usize,
}

/// A tagged node the mapper reads: its parser and the bytes it spans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    parser: NodeId,
    start: usize,
    end: usize,
}

impl<'a> ChatStream<'a> {
    pub fn new(arena: &'a Arena) -> ChatStream<'a> {
        ChatStream {
            arena,
            parser: StreamParser::new(arena),
            walker: Walker::new(arena),
            emitted: Message::default(),
            mapped: false,
            stable: Mapper::new(),
            stable_spans: Vec::new(),
            stable_blank: true,
            unchanged: 0,
            matched_calls: 0,
        }
    }

    /// Makes the stream ready for another output, as [`ChatStream::new`] would, but keeps the
    /// parser's memory (see [`StreamParser::reset`]).
    pub fn reset(&mut self) {
        let mut parser = std::mem::replace(&mut self.parser, StreamParser::new(self.arena));
        parser.reset();
        *self = ChatStream {
            parser,
            ..ChatStream::new(self.arena)
        };
    }

    /// The message emitted so far.
    pub fn message(&self) -> &Message {
        &self.emitted
    }

    /// Adds a chunk of output (bytes may split a code point) and returns the message so far.
    ///
    /// If the parse of the longer output would change text already emitted, the update holds
    /// back (an empty delta) until the output extends what was emitted again; [`finish`]
    /// reports it if it never does.
    ///
    /// [`finish`]: ChatStream::finish
    pub fn feed(&mut self, chunk: &str) -> Result<Update<'_>, Error> {
        self.feed_bytes(chunk.as_bytes())
    }

    /// [`ChatStream::feed`] for raw bytes.
    pub fn feed_bytes(&mut self, chunk: &[u8]) -> Result<Update<'_>, Error> {
        let status = self.parser.feed(chunk);
        if matches!(status.outcome, Outcome::NoMatch | Outcome::StepLimit) {
            return Err(self.parse_error(status.end));
        }
        let fixed = self.parser.fixed_nodes();
        let complete = self.walker.walk(self.parser.ast(), fixed);
        self.unchanged = self.unchanged.min(self.walker.same);
        let delta = match self.grown_text() {
            Some(delta) => Some(delta),
            None => {
                self.advance_stable(complete);
                self.remapped_delta().inspect(|_| {
                    // All of `stable`'s calls but its last are now in `emitted`.
                    let calls = self.stable.message().tool_calls.len();
                    self.matched_calls = calls.saturating_sub(1);
                })
            }
        };
        let held_back = delta.is_none();
        self.mapped = !held_back;
        let delta = delta.unwrap_or_default();
        self.emitted.apply(&delta);
        Ok(Update {
            message: &self.emitted,
            delta,
            held_back,
        })
    }

    /// Feeds `stable` the complete tagged nodes at the start of the parse (`spans`, of which
    /// the first `complete` are complete) that it has not read, after starting it again if
    /// the parse no longer begins with the nodes it read (the parser took a node back:
    /// rare, and only a cost).
    fn advance_stable(&mut self, complete: usize) {
        let spans = &self.walker.out;
        // `stable_spans` was a prefix of the walk's spans after the last call, and the walks
        // since changed nothing before `unchanged`: only the spans from there are compared.
        let from = self.unchanged;
        if from < self.stable_spans.len()
            && spans.get(from..self.stable_spans.len()) != Some(&self.stable_spans[from..])
        {
            self.stable = Mapper::new();
            self.stable_spans.clear();
            self.stable_blank = true;
            self.matched_calls = 0;
        }
        self.unchanged = usize::MAX;
        let Some(new) = spans.get(self.stable_spans.len()..complete) else {
            return;
        };
        let reasoning_from = self.stable.message().reasoning_content.len();
        feed_spans(&mut self.stable, self.arena, new, self.parser.input());
        self.stable_blank &= is_blank(&self.stable.message().reasoning_content[reasoning_from..]);
        self.stable_spans.extend_from_slice(new);
    }

    /// What the mapping of `spans` adds to `emitted` (`None`: it would take text back): the
    /// nodes after those `stable` read are mapped into a fork of it, and the message is
    /// compared part by part, `stable`'s and the fork's, without being put together.
    fn remapped_delta(&self) -> Option<MessageDelta> {
        let spans = &self.walker.out;
        let stable = self.stable.message();
        // `advance_stable` left `stable_spans` a prefix of `spans`.
        let (mut fork, base) = self.stable.fork();
        let tail = &spans[self.stable_spans.len()..];
        feed_spans(&mut fork, self.arena, tail, self.parser.input());
        let tail = fork.finish_fork();
        let emitted = &self.emitted;
        let content = suffix_of_concat(&stable.content, &tail.content, &emitted.content)?;
        let reasoning = if self.stable_blank && is_blank(&tail.reasoning_content) {
            // Blank reasoning is dropped: the mapping has none.
            if !emitted.reasoning_content.is_empty() {
                return None;
            }
            String::new()
        } else {
            suffix_of_concat(
                &stable.reasoning_content,
                &tail.reasoning_content,
                &emitted.reasoning_content,
            )?
        };
        let count = base + tail.tool_calls.len();
        if count < emitted.tool_calls.len() {
            return None;
        }
        let mut tool_calls = Vec::new();
        // The calls `emitted` has as they are need no comparing.
        for index in self.matched_calls.min(base)..count {
            let call = match index.checked_sub(base) {
                Some(local) => &tail.tool_calls[local],
                None => &stable.tool_calls[index],
            };
            call.push_delta(index, emitted.tool_calls.get(index), &mut tool_calls)?;
        }
        Some(MessageDelta {
            content,
            reasoning_content: reasoning,
            tool_calls,
        })
    }

    /// Ends the output: parses it as complete and returns the final message.
    ///
    /// As in llama.cpp, an output that ends inside a possible marker (content ending in
    /// `<tool` when `<tool_call>` may follow) is not complete: `until` stops before the
    /// partial marker, which then matches nothing.
    pub fn finish(&mut self) -> Result<Update<'_>, Error> {
        let status = self.parser.finish();
        if status.outcome != Outcome::Match {
            return Err(self.parse_error(status.end));
        }
        let fixed = self.parser.fixed_nodes();
        self.walker.walk(self.parser.ast(), fixed);
        self.unchanged = self.unchanged.min(self.walker.same);
        let message = map_spans(self.arena, &self.walker.out, self.parser.input());
        let Some(delta) = message.delta_from(&self.emitted) else {
            self.mapped = false;
            return Err(Error {
                kind: ErrorKind::Retraction,
                offset: status.end,
            });
        };
        self.emitted = message;
        self.mapped = true;
        Ok(Update {
            message: &self.emitted,
            delta,
            held_back: false,
        })
    }

    /// The error of a parse that did not match (or gave up) at `offset`.
    fn parse_error(&self, offset: usize) -> Error {
        let kind = match self.parser.step_limit() {
            Some(limit) => ErrorKind::StepLimit(limit.describe(self.arena)),
            None => ErrorKind::NoMatch,
        };
        Error { kind, offset }
    }

    /// The delta when the only change is that the last tagged node, a content node or a
    /// reasoning node whose text is already emitted, grew at its end.
    fn grown_text(&self) -> Option<MessageDelta> {
        if !self.mapped {
            return None;
        }
        // The walk before's spans: `out[..same]`, then `old_tail`.
        let Walker {
            out: spans,
            same,
            old_tail,
            ..
        } = &self.walker;
        let (last, before) = spans.split_last()?;
        let old_len = same + old_tail.len();
        let old_last = match old_tail.last() {
            Some(span) => span,
            None => spans.get(old_len.checked_sub(1)?)?,
        };
        // The same spans before the last: the same count, and the same after `same`.
        if spans.len() != old_len
            || (*same < before.len() && before[*same..] != old_tail[..old_tail.len() - 1])
            || last.parser != old_last.parser
            || last.start != old_last.start
        {
            return None;
        }
        if last.end < old_last.end {
            return None;
        }
        let Node::Tag { tag, .. } = self.arena.node(last.parser) else {
            return None;
        };
        let input = self.parser.input();
        let added = std::str::from_utf8(input.get(old_last.end..last.end)?).ok()?;
        let mut delta = MessageDelta::default();
        match tag.as_str() {
            tags::CONTENT => delta.content = added.to_owned(),
            // Whitespace-only reasoning is dropped, so only append to reasoning that has
            // something else already.
            tags::REASONING if !self.emitted.reasoning_content.is_empty() => {
                delta.reasoning_content = added.to_owned();
            }
            tags::TOOL_ARGS => {
                // The arguments of the call named since the last tool-open, verbatim but
                // trailing-trimmed: new text extends them unless only blanks were added.
                let named = before
                    .iter()
                    .rev()
                    .map(|span| self.tag_of(span.parser))
                    .take_while(|&tag| tag != Some(tags::TOOL_OPEN))
                    .any(|tag| tag == Some(tags::TOOL_NAME));
                // `emitted` is the mapping of the same nodes with the shorter text, so the
                // call's arguments are that text trimmed; only the lengths need checking.
                let call = self.emitted.tool_calls.last()?;
                let old = trim_blanks(input.get(old_last.start..old_last.end)?);
                if !named || old.first() != Some(&b'{') || call.arguments.len() != old.len() {
                    return None;
                }
                let new = trim_blanks(input.get(last.start..last.end)?);
                let added = std::str::from_utf8(new.get(old.len()..)?).ok()?;
                // Only blanks added: nothing to say (as `Message::delta_from`).
                if !added.is_empty() {
                    delta.tool_calls.push(ToolCallDelta {
                        index: self.emitted.tool_calls.len() - 1,
                        id: None,
                        name: None,
                        arguments: added.to_owned(),
                    });
                }
            }
            _ => return None,
        }
        Some(delta)
    }

    fn tag_of(&self, parser: NodeId) -> Option<&'a str> {
        match self.arena.node(parser) {
            Node::Tag { tag, .. } => Some(tag.as_str()),
            _ => None,
        }
    }
}

/// `bytes` without its trailing C `isspace` bytes (as the mapper trims).
fn trim_blanks(bytes: &[u8]) -> &[u8] {
    let len = bytes
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0B' | b'\x0C'))
        .map_or(0, |idx| idx + 1);
    &bytes[..len]
}

/// The tags the mapper reads (`tool` and `tool-arg` only group).
const MAPPED_TAGS: [&str; 12] = [
    tags::REASONING,
    tags::CONTENT,
    tags::TOOL_OPEN,
    tags::TOOL_CLOSE,
    tags::TOOL_ID,
    tags::TOOL_NAME,
    tags::TOOL_ARGS,
    tags::TOOL_ARG_OPEN,
    tags::TOOL_ARG_CLOSE,
    tags::TOOL_ARG_NAME,
    tags::TOOL_ARG_VALUE,
    tags::TOOL_ARG_STRING_VALUE,
];

/// `first` followed by `second`, without `prefix`, if it starts with `prefix`.
fn suffix_of_concat(first: &str, second: &str, prefix: &str) -> Option<String> {
    match prefix.strip_prefix(first) {
        Some(rest) => second.strip_prefix(rest).map(str::to_owned),
        None => {
            let rest = first.strip_prefix(prefix)?;
            Some([rest, second].concat())
        }
    }
}

/// What the walk over a parse does with the nodes of a parser.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SpanKind {
    /// No tag the mapper reads can be at or under them: skipped with their subtrees.
    Skip,
    /// Entered: a tag the mapper reads may be under them.
    Enter,
    /// Read (a tag the mapper reads), and entered.
    Read,
}

/// [`SpanKind`] per parser of `arena`: a parser's nodes hold a tag the mapper reads if it is
/// such a tag, or if one is among the parsers it can reach.
fn span_kinds(arena: &Arena) -> Vec<SpanKind> {
    let nodes = arena.nodes();
    let mut parents: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    let mut kinds = vec![SpanKind::Skip; nodes.len()];
    let mut work = Vec::new();
    for (index, node) in nodes.iter().enumerate() {
        for child in node.children() {
            parents[child.index()].push(index);
        }
        if matches!(node, Node::Tag { tag, .. } if MAPPED_TAGS.contains(&tag.as_str())) {
            kinds[index] = SpanKind::Read;
            work.push(index);
        }
    }
    while let Some(index) = work.pop() {
        for &parent in &parents[index] {
            if kinds[parent] == SpanKind::Skip {
                kinds[parent] = SpanKind::Enter;
                work.push(parent);
            }
        }
    }
    kinds
}

/// Finds the nodes of a parse that the mapper reads. Subtrees that cannot hold them are
/// skipped (`kinds`), and what a complete node's subtree holds is kept from one walk to the
/// next (a complete node never changes). A walk over a stream's latest parse also keeps the
/// spans of the walk before up to the open path (the partial nodes, one under the other):
/// at each of its levels, the leading children that are the same fixed nodes as before (see
/// `StreamParser::fixed_nodes`) are not visited again. A walk costs about the nodes that are
/// still open, not the whole output, however many calls it holds.
#[derive(Debug)]
struct Walker {
    /// Per parser of the arena.
    kinds: Vec<SpanKind>,
    stack: Vec<Step>,
    /// Per AST node id: a complete node's spans, `cached[from..to]`, with its parser and span
    /// (an id that the parser reused for another node does not match).
    cache: Vec<Cached>,
    cached: Vec<Span>,
    /// The latest walk's spans, in pre-order.
    out: Vec<Span>,
    /// How many leading spans of `out` the latest walk kept from the walk before, and what
    /// the walk before had after them (`old_tail`).
    same: usize,
    old_tail: Vec<Span>,
    /// The latest walk's open path: per level (the roots, then the children of each partial
    /// node under the one before), what it walked.
    path: Vec<Level>,
    /// The parser's fixed nodes at the latest walk: the ids below it name the same nodes in
    /// the next parse (ids between it and the next parse's own count may name new ones).
    fixed: usize,
}

#[derive(Clone, Copy, Debug)]
enum Step {
    Visit(AstId),
    /// The end of a complete node's subtree, whose spans start at `from` in the output.
    Close(AstId, usize),
}

#[derive(Clone, Copy, Debug, Default)]
struct Cached {
    node: Option<Span>,
    from: usize,
    to: usize,
}

/// One level of a walk's open path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Level {
    /// The partial node (parser, start) whose children the level holds; `None`: the roots.
    node: Option<(NodeId, usize)>,
    /// Where the level's spans start in `out`.
    from: usize,
    /// Its leading complete children, where `out` ended after each, and the largest id
    /// among them up to each.
    kids: Vec<AstId>,
    ends: Vec<usize>,
    highest: Vec<u32>,
}

impl Walker {
    fn new(arena: &Arena) -> Walker {
        Walker {
            kinds: span_kinds(arena),
            stack: Vec::new(),
            cache: Vec::new(),
            cached: Vec::new(),
            out: Vec::new(),
            same: 0,
            old_tail: Vec::new(),
            path: Vec::new(),
            fixed: 0,
        }
    }

    /// The nodes of `ast` that the mapper reads, in pre-order, with a fresh walk.
    fn spans(&mut self, ast: &Ast) -> &[Span] {
        self.path.clear();
        self.out.clear();
        self.fixed = 0;
        self.walk(ast, 0);
        &self.out
    }

    /// Walks `ast` into `out`, keeping what the walk before made of the nodes that were
    /// fixed then (see `Walker::fixed`); `fixed` is the parser's count now. Returns how many
    /// spans come before the first partial one; `same` and `old_tail` say what changed.
    fn walk(&mut self, ast: &Ast, fixed: usize) -> usize {
        let kept_below = std::mem::replace(&mut self.fixed, fixed);
        // Spans kept for replaced nodes are dropped now and then, so that a parser that
        // keeps taking nodes back cannot make the cache grow without end.
        if self.cached.len() > 4 * (self.cache.len() + 64) {
            self.cache.clear();
            self.cached.clear();
        }
        self.same = self.out.len();
        self.old_tail.clear();
        let mut complete = None;
        let mut list = ast.roots();
        let mut node = None;
        let mut from = 0;
        // Whether `out` is still the walk before's from `from` on (nothing written yet).
        let mut keep = true;
        let mut depth = 0;
        loop {
            // The leading children this level shares with the walk before's, which are
            // fixed: their spans are where they were.
            let mut kept = 0;
            let same_level = keep
                && (self.path.get(depth))
                    .is_some_and(|level| level.node == node && level.from == from);
            if same_level {
                let level = &mut self.path[depth];
                let n = level.kids.len().min(list.len());
                // A child that was fixed at the same place vouches for those before it (see
                // `StreamParser::fixed_nodes`): one comparison, not one a child (a section of
                // hundreds of calls was compared whole after every token).
                let vouched = n.checked_sub(1).map_or(true, |last| {
                    list[last] == level.kids[last] && (level.highest[last] as usize) < kept_below
                });
                if vouched {
                    debug_assert!(list[..n] == level.kids[..n], "fixed children moved");
                    kept = n;
                } else {
                    while kept < n
                        && list[kept] == level.kids[kept]
                        && (list[kept].0 as usize) < kept_below
                    {
                        kept += 1;
                    }
                }
                keep = kept == level.kids.len();
                level.kids.truncate(kept);
                level.ends.truncate(kept);
                level.highest.truncate(kept);
            } else {
                keep = false;
                self.path.truncate(depth);
                self.path.push(Level {
                    node,
                    from,
                    ..Level::default()
                });
            }
            let mut at = self.path[depth].ends.last().copied().unwrap_or(from);
            let rest = &list[kept..];
            // Only the last child of a level can be partial.
            let (closed, open) = match rest.split_last() {
                Some((&last, before)) if ast.node(last).is_partial => (before, Some(last)),
                _ => (rest, None),
            };
            if !closed.is_empty() {
                keep = false;
            }
            if !keep {
                self.write_from(at);
            }
            for &kid in closed {
                if self.kinds[ast.node(kid).parser.index()] != SpanKind::Skip {
                    self.walk_closed(ast, kid);
                }
                at = self.out.len();
                let level = &mut self.path[depth];
                let highest = level.highest.last().map_or(kid.0, |&id| id.max(kid.0));
                level.kids.push(kid);
                level.ends.push(at);
                level.highest.push(highest);
            }
            let Some(open) = open else {
                break;
            };
            let partial = ast.node(open);
            let kind = self.kinds[partial.parser.index()];
            if kind == SpanKind::Skip {
                break;
            }
            if kind == SpanKind::Read {
                complete.get_or_insert(at);
                let span = span_of(ast, open);
                // Kept if the walk before had the very span there (then its level below
                // starts where this one's does).
                if !(keep && self.out.get(at) == Some(&span)) {
                    keep = false;
                    self.write_from(at);
                    self.out.push(span);
                }
                at += 1;
            }
            list = ast.children(open);
            node = Some((partial.parser, partial.start));
            from = at;
            depth += 1;
        }
        // Levels and spans past this walk's last level were the walk before's.
        self.path.truncate(depth + 1);
        let end = self.path[depth].ends.last().copied().unwrap_or(from);
        if self.out.len() > end {
            self.write_from(end);
        }
        complete.unwrap_or(self.out.len())
    }

    /// Drops `out` from `at` on, to be written again, keeping the walk before's spans there
    /// in `old_tail` if nothing before `at` was written yet (the walk writes in order).
    fn write_from(&mut self, at: usize) {
        if at < self.same {
            self.old_tail.extend_from_slice(&self.out[at..]);
            self.same = at;
        }
        self.out.truncate(at);
    }

    /// Appends the spans of the complete node `id` (not skipped) and its subtree to `out`,
    /// from the cache if the walk before saw the node.
    fn walk_closed(&mut self, ast: &Ast, id: AstId) {
        let stack = &mut self.stack;
        stack.clear();
        stack.push(Step::Visit(id));
        // Inside a complete node whose spans are being kept.
        let mut keeping = false;
        while let Some(step) = stack.pop() {
            let id = match step {
                Step::Visit(id) => id,
                Step::Close(id, from) => {
                    let at = self.cached.len();
                    self.cached.extend_from_slice(&self.out[from..]);
                    let index = id.0 as usize;
                    if self.cache.len() <= index {
                        self.cache.resize(index + 1, Cached::default());
                    }
                    self.cache[index] = Cached {
                        node: Some(span_of(ast, id)),
                        from: at,
                        to: self.cached.len(),
                    };
                    keeping = false;
                    continue;
                }
            };
            let node = ast.node(id);
            let kind = self.kinds[node.parser.index()];
            if kind == SpanKind::Skip {
                continue;
            }
            if !keeping {
                let span = span_of(ast, id);
                match self.cache.get(id.0 as usize) {
                    Some(kept) if kept.node == Some(span) => {
                        self.out.extend_from_slice(&self.cached[kept.from..kept.to]);
                        continue;
                    }
                    _ => {
                        stack.push(Step::Close(id, self.out.len()));
                        keeping = true;
                    }
                }
            }
            if kind == SpanKind::Read {
                self.out.push(span_of(ast, id));
            }
            stack.extend(ast.children(id).iter().rev().map(|&id| Step::Visit(id)));
        }
    }
}

/// A node's parser and span.
fn span_of(ast: &Ast, id: AstId) -> Span {
    let node = ast.node(id);
    Span {
        parser: node.parser,
        start: node.start,
        end: node.end,
    }
}

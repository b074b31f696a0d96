//! Maps the tagged nodes of a parse, in pre-order, to a [`Message`], following the rules of
//! llama.cpp's chat mapper so that both produce the same message from the same output.
//!
//! The mapper is a small state machine fed one `(tag, text)` pair at a time, which keeps it
//! independent of how the parse tree is stored. Tool calls are published as soon as their
//! name is seen, so a streaming client learns about a call before its arguments are complete.

use crate::message::{Message, ToolCall};
use crate::tags;

/// Builds a [`Message`] from tagged nodes given in pre-order.
#[derive(Debug, Default)]
pub struct Mapper {
    message: Message,
    /// A call whose `tool-open` was seen but whose name was not (yet).
    pending: Option<ToolCall>,
    /// Which call argument tags write to.
    current: Option<Current>,
    arg_count: usize,
    /// Arguments seen before the call's name.
    args_buffer: String,
    /// A string argument value was opened with `"` and not closed yet.
    closing_quote_pending: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Current {
    Pending,
    Published(usize),
}

impl Mapper {
    pub fn new() -> Mapper {
        Mapper::default()
    }

    /// Feeds one node. Nodes without a chat tag are ignored.
    pub fn node(&mut self, tag: &str, text: &str) {
        match tag {
            tags::REASONING => self.message.reasoning_content.push_str(text),
            tags::CONTENT => self.message.content.push_str(text),
            tags::TOOL_OPEN => {
                self.pending = Some(ToolCall::default());
                self.current = Some(Current::Pending);
                self.arg_count = 0;
                self.args_buffer.clear();
                self.closing_quote_pending = false;
            }
            tags::TOOL_ID => {
                let mut id = trim_trailing_space(text);
                if id.len() >= 2 && id.starts_with('"') && id.ends_with('"') {
                    id = &id[1..id.len() - 1];
                }
                if let Some(call) = self.current_call() {
                    call.id = id.to_owned();
                }
            }
            tags::TOOL_NAME => self.tool_name(text),
            tags::TOOL_ARGS => {
                let text = trim_trailing_space(text);
                if self.current.is_some() && text.starts_with('{') {
                    *self.args_target() = text.to_owned();
                }
            }
            tags::TOOL_ARG_OPEN => self.closing_quote_pending = false,
            tags::TOOL_ARG_NAME => {
                if self.current.is_none() {
                    return;
                }
                let mut name = trim_trailing_space(trim_one_leading_space(text));
                // A quoted name (`"city"` or `'city'`) is the name without its quotes.
                for quote in ['"', '\''] {
                    if name.len() >= 2 && name.starts_with(quote) && name.ends_with(quote) {
                        name = &name[1..name.len() - 1];
                    }
                }
                let mut entry = String::new();
                if self.arg_count > 0 {
                    entry.push(',');
                }
                entry.push_str(&json_quote(name));
                entry.push(':');
                self.arg_count += 1;
                let target = self.args_target();
                if target.is_empty() {
                    target.push('{');
                }
                target.push_str(&entry);
            }
            tags::TOOL_ARG_STRING_VALUE => {
                if self.current.is_none() {
                    return;
                }
                let mut addition = String::new();
                if !self.closing_quote_pending {
                    addition.push('"');
                    self.closing_quote_pending = true;
                }
                let quoted = json_quote(text);
                addition.push_str(&quoted[1..quoted.len() - 1]);
                self.args_target().push_str(&addition);
            }
            tags::TOOL_ARG_VALUE => {
                if self.current.is_none() || text.is_empty() {
                    return;
                }
                let normalized = python_to_json(text);
                self.args_target().push_str(&normalized);
            }
            tags::TOOL_ARG_CLOSE if self.current.is_some() && self.closing_quote_pending => {
                self.args_target().push('"');
                self.closing_quote_pending = false;
            }
            tags::TOOL_CLOSE => self.tool_close(),
            _ => {}
        }
    }

    /// Ends the mapping: publishes a named call still open (a partial parse) and drops
    /// reasoning that is only whitespace (an empty `<think></think>`).
    pub fn finish(mut self) -> Message {
        self.publish_pending();
        if is_blank(&self.message.reasoning_content) {
            self.message.reasoning_content.clear();
        }
        self.message
    }

    /// A mapper that goes on from this one's state but writes to a message of its own, which
    /// holds only what the nodes fed to it add: the content and reasoning they append, and
    /// the calls from the one they may still change (the current call, if published) on.
    /// Returns it with the index of its first call in the whole message.
    ///
    /// So a stream maps the nodes that can still change without copying what came before.
    pub(crate) fn fork(&self) -> (Mapper, usize) {
        let calls = &self.message.tool_calls;
        let base = match self.current {
            Some(Current::Published(index)) => index.min(calls.len()),
            _ => calls.len(),
        };
        let current = match self.current {
            Some(Current::Published(index)) => Some(Current::Published(index - base)),
            other => other,
        };
        let message = Message {
            tool_calls: calls[base..].to_vec(),
            ..Message::default()
        };
        let mapper = Mapper {
            message,
            pending: self.pending.clone(),
            current,
            arg_count: self.arg_count,
            args_buffer: self.args_buffer.clone(),
            closing_quote_pending: self.closing_quote_pending,
        };
        (mapper, base)
    }

    /// The message so far (without [`Mapper::finish`]'s last steps).
    pub(crate) fn message(&self) -> &Message {
        &self.message
    }

    /// [`Mapper::finish`] but for dropping blank reasoning, which a fork cannot judge
    /// alone (it holds only the end of the reasoning).
    pub(crate) fn finish_fork(mut self) -> Message {
        self.publish_pending();
        self.message
    }

    /// Publishes a named call still open (a partial parse).
    fn publish_pending(&mut self) {
        if let Some(mut call) = self.pending.take() {
            if !call.name.is_empty() {
                if !self.args_buffer.is_empty() {
                    call.arguments = std::mem::take(&mut self.args_buffer);
                }
                if self.closing_quote_pending && !call.arguments.is_empty() {
                    call.arguments.push('"');
                }
                self.message.tool_calls.push(call);
            }
        }
    }

    fn current_call(&mut self) -> Option<&mut ToolCall> {
        match self.current? {
            Current::Pending => self.pending.as_mut(),
            Current::Published(index) => self.message.tool_calls.get_mut(index),
        }
    }

    /// The arguments of the current call once it has a name, else the buffer.
    fn args_target(&mut self) -> &mut String {
        let call = match self.current {
            Some(Current::Pending) => self.pending.as_mut(),
            Some(Current::Published(index)) => self.message.tool_calls.get_mut(index),
            None => None,
        };
        match call {
            Some(call) if !call.name.is_empty() => &mut call.arguments,
            _ => &mut self.args_buffer,
        }
    }

    fn tool_name(&mut self, text: &str) {
        let buffer = std::mem::take(&mut self.args_buffer);
        let Some(call) = self.current_call() else {
            self.args_buffer = buffer;
            return;
        };
        call.name = trim_trailing_space(text).to_owned();
        if !buffer.is_empty() {
            call.arguments = buffer;
        } else if call.arguments.is_empty() {
            call.arguments.push('{');
        }
        if let Some(pending) = self.pending.take() {
            self.message.tool_calls.push(pending);
            self.current = Some(Current::Published(self.message.tool_calls.len() - 1));
        }
    }

    fn tool_close(&mut self) {
        let buffer = std::mem::take(&mut self.args_buffer);
        let closing_quote = std::mem::replace(&mut self.closing_quote_pending, false);
        let Some(call) = self.current_call() else {
            self.args_buffer = buffer;
            return;
        };
        if call.name.is_empty() && !buffer.is_empty() {
            call.arguments = buffer;
        }
        if closing_quote {
            call.arguments.push('"');
        }
        for _ in 0..unclosed_braces(&call.arguments) {
            call.arguments.push('}');
        }
        if let Some(pending) = self.pending.take() {
            if !pending.name.is_empty() {
                self.message.tool_calls.push(pending);
            }
            self.current = None;
        }
    }
}

/// Whether reasoning is only white space, which the mapping drops (an empty
/// `<think></think>`).
pub(crate) fn is_blank(reasoning: &str) -> bool {
    reasoning
        .bytes()
        .all(|b| matches!(b, b' ' | b'\n' | b'\r' | b'\t'))
}

/// Removes trailing C-`isspace` bytes.
fn trim_trailing_space(text: &str) -> &str {
    text.trim_end_matches([' ', '\t', '\n', '\r', '\x0B', '\x0C'])
}

/// Removes at most one leading C-`isspace` byte.
fn trim_one_leading_space(text: &str) -> &str {
    match text.as_bytes().first() {
        Some(b' ' | b'\t' | b'\n' | b'\r' | b'\x0B' | b'\x0C') => &text[1..],
        _ => text,
    }
}

/// `text` as a JSON string literal, quotes included.
fn json_quote(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}

/// The number of `{` not closed by a `}`, outside JSON strings.
fn unclosed_braces(text: &str) -> usize {
    let mut depth: i64 = 0;
    let mut in_string = false;
    let mut escaped = false;
    for byte in text.bytes() {
        if escaped {
            escaped = false;
            continue;
        }
        match byte {
            b'\\' if in_string => escaped = true,
            b'"' => in_string = !in_string,
            b'{' if !in_string => depth += 1,
            b'}' if !in_string => depth -= 1,
            _ => {}
        }
    }
    usize::try_from(depth).unwrap_or(0)
}

/// Rewrites a Python literal as JSON: single-quoted strings become double-quoted, and
/// `True`/`False`/`None` become `true`/`false`/`null`. A prefix of a Python literal maps to
/// a prefix of its JSON form (`Tr` → `tr`), so streamed values only ever grow.
fn python_to_json(input: &str) -> String {
    let mut out = String::with_capacity(input.len() + 8);
    let mut in_single = false;
    let mut in_double = false;
    let chars: Vec<char> = input.chars().collect();
    let is_word = |ch: char| ch.is_ascii_alphanumeric() || ch == '_';
    let mut idx = 0;
    while idx < chars.len() {
        let ch = chars[idx];
        if ch == '\\' && idx + 1 < chars.len() {
            let next = chars[idx + 1];
            if in_single && next == '\'' {
                out.push('\'');
            } else if in_single && next == '"' {
                out.push_str("\\\"");
            } else {
                out.push(ch);
                out.push(next);
            }
            idx += 2;
            continue;
        }
        match ch {
            '"' if in_single => out.push_str("\\\""),
            '"' => {
                in_double = !in_double;
                out.push(ch);
            }
            '\'' if in_double => out.push(ch),
            '\'' => {
                in_single = !in_single;
                out.push('"');
            }
            'T' | 'F' | 'N'
                if !in_single && !in_double && (idx == 0 || !is_word(chars[idx - 1])) =>
            {
                let len = chars[idx..].iter().take_while(|&&c| is_word(c)).count();
                let word: String = chars[idx..idx + len].iter().collect();
                let replacement = [("True", "true"), ("False", "false"), ("None", "null")]
                    .iter()
                    .find(|(python, _)| python.starts_with(word.as_str()))
                    .map(|(_, json)| &json[..len]);
                match replacement {
                    Some(json) => {
                        out.push_str(json);
                        idx += len;
                        continue;
                    }
                    None => out.push(ch),
                }
            }
            _ => out.push(ch),
        }
        idx += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_literals_become_json() {
        assert_eq!(
            python_to_json("{'a': True, 'b': None}"),
            r#"{"a": true, "b": null}"#
        );
        assert_eq!(python_to_json("'it\\'s \"x\"'"), r#""it's \"x\"""#);
        assert_eq!(python_to_json("Fa"), "fa");
        assert_eq!(python_to_json("Foo"), "Foo");
    }

    #[test]
    fn braces_inside_strings_do_not_count() {
        assert_eq!(unclosed_braces(r#"{"a": {"b": "}{\"{"#), 2);
    }

    #[test]
    fn constructed_arguments_are_assembled_as_json() {
        let mut mapper = Mapper::new();
        mapper.node(tags::TOOL_OPEN, "<function=");
        mapper.node(tags::TOOL_NAME, "get_weather");
        mapper.node(tags::TOOL_ARG_OPEN, "<param=");
        mapper.node(tags::TOOL_ARG_NAME, "city");
        mapper.node(tags::TOOL_ARG_STRING_VALUE, "Paris \"FR\"");
        mapper.node(tags::TOOL_ARG_CLOSE, "</param>");
        mapper.node(tags::TOOL_ARG_OPEN, "<param=");
        mapper.node(tags::TOOL_ARG_NAME, "days");
        mapper.node(tags::TOOL_ARG_VALUE, "3");
        mapper.node(tags::TOOL_ARG_CLOSE, "</param>");
        mapper.node(tags::TOOL_CLOSE, "</function>");
        let message = mapper.finish();
        assert_eq!(message.tool_calls.len(), 1);
        assert_eq!(
            message.tool_calls[0].arguments,
            r#"{"city":"Paris \"FR\"","days":3}"#
        );
    }
}

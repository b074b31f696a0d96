//! The assistant message a parse maps to, in the OpenAI chat-completions shape, and the
//! difference between two successive messages of a stream.

use serde_json::{json, Map, Value};

/// An assistant message: what the model said, thought, and which tools it called.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Message {
    pub content: String,
    pub reasoning_content: String,
    pub tool_calls: Vec<ToolCall>,
}

/// One tool call. `arguments` is JSON text, kept as the model wrote it (while streaming,
/// a prefix of it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolCall {
    /// Empty when the model gave no id.
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// What a new message adds to the previous one of the same stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MessageDelta {
    pub content: String,
    pub reasoning_content: String,
    pub tool_calls: Vec<ToolCallDelta>,
}

/// What a stream adds to tool call `index`: its id and name when the call first appears,
/// then argument text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolCallDelta {
    pub index: usize,
    pub id: Option<String>,
    pub name: Option<String>,
    pub arguments: String,
}

impl Message {
    /// The message as an OpenAI-compatible JSON object:
    /// `{role, content, reasoning_content?, tool_calls?: [{id?, type, function: {name, arguments}}]}`.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("role".to_owned(), json!("assistant"));
        object.insert("content".to_owned(), json!(self.content));
        if !self.reasoning_content.is_empty() {
            object.insert(
                "reasoning_content".to_owned(),
                json!(self.reasoning_content),
            );
        }
        if !self.tool_calls.is_empty() {
            let calls: Vec<Value> = self
                .tool_calls
                .iter()
                .map(|call| {
                    let mut entry = Map::new();
                    if !call.id.is_empty() {
                        entry.insert("id".to_owned(), json!(call.id));
                    }
                    entry.insert("type".to_owned(), json!("function"));
                    entry.insert(
                        "function".to_owned(),
                        json!({"name": call.name, "arguments": call.arguments}),
                    );
                    Value::Object(entry)
                })
                .collect();
            object.insert("tool_calls".to_owned(), Value::Array(calls));
        }
        Value::Object(object)
    }

    /// What `self` adds to `previous`, or `None` if `self` does not extend it (some text
    /// would have to be taken back).
    pub fn delta_from(&self, previous: &Message) -> Option<MessageDelta> {
        let content = self.content.strip_prefix(previous.content.as_str())?;
        let reasoning = self
            .reasoning_content
            .strip_prefix(previous.reasoning_content.as_str())?;
        if self.tool_calls.len() < previous.tool_calls.len() {
            return None;
        }
        let mut tool_calls = Vec::new();
        for (index, call) in self.tool_calls.iter().enumerate() {
            call.push_delta(index, previous.tool_calls.get(index), &mut tool_calls)?;
        }
        Some(MessageDelta {
            content: content.to_owned(),
            reasoning_content: reasoning.to_owned(),
            tool_calls,
        })
    }

    /// Applies a delta (the inverse of [`Message::delta_from`]).
    pub fn apply(&mut self, delta: &MessageDelta) {
        self.content.push_str(&delta.content);
        self.reasoning_content.push_str(&delta.reasoning_content);
        for call_delta in &delta.tool_calls {
            while self.tool_calls.len() <= call_delta.index {
                self.tool_calls.push(ToolCall::default());
            }
            let call = &mut self.tool_calls[call_delta.index];
            if let Some(id) = &call_delta.id {
                call.id.clone_from(id);
            }
            if let Some(name) = &call_delta.name {
                call.name.clone_from(name);
            }
            call.arguments.push_str(&call_delta.arguments);
        }
    }
}

impl ToolCall {
    /// Adds what call `index` (this one) adds to `previous`, its version in the previous
    /// message (none: the call is new), to `deltas`; `None` if it does not extend it.
    pub(crate) fn push_delta(
        &self,
        index: usize,
        previous: Option<&ToolCall>,
        deltas: &mut Vec<ToolCallDelta>,
    ) -> Option<()> {
        match previous {
            Some(old) => {
                if old.id != self.id || old.name != self.name {
                    return None;
                }
                let arguments = self.arguments.strip_prefix(old.arguments.as_str())?;
                if !arguments.is_empty() {
                    deltas.push(ToolCallDelta {
                        index,
                        id: None,
                        name: None,
                        arguments: arguments.to_owned(),
                    });
                }
            }
            None => deltas.push(ToolCallDelta {
                index,
                id: Some(self.id.clone()),
                name: Some(self.name.clone()),
                arguments: self.arguments.clone(),
            }),
        }
        Some(())
    }
}

impl MessageDelta {
    /// Whether the delta adds nothing.
    pub fn is_empty(&self) -> bool {
        self.content.is_empty() && self.reasoning_content.is_empty() && self.tool_calls.is_empty()
    }
}

//! Conformance with llama.cpp's native chat parser: the 9 `test-chat-peg-parser/native`
//! rows of `tests/data/llamacpp/peg-parser.jsonl` (tools, reasoning, generation prompt,
//! response format) parse to the expected message, and the parser's eager GBNF accepts
//! each output.

use std::path::PathBuf;

use gbnf_chat::{native_parser, parse_message, NativeOptions, Tool};
use serde_json::Value;

fn rows() -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/llamacpp/peg-parser.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path:?}: {error}"));
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|row| row["suite"] == "test-chat-peg-parser/native")
        .collect()
}

fn check(row: &Value) -> Result<(), String> {
    let name = row["name"].as_str().unwrap_or_default();
    let expect = &row["expect"];
    let options = NativeOptions {
        tools: Tool::from_openai(&row["tools"]),
        parallel_tool_calls: row["parallel_tool_calls"].as_bool().unwrap_or(false),
        force_tool_calls: row["tool_choice"] == "COMMON_CHAT_TOOL_CHOICE_REQUIRED",
        extract_reasoning: row["reasoning_format"] != "COMMON_REASONING_FORMAT_NONE",
        json_schema: Some(row["json_schema"].clone()).filter(|schema| !schema.is_null()),
    };
    let arena = native_parser(&options).map_err(|error| format!("{name}: {error}"))?;
    let output = format!(
        "{}{}",
        row["generation_prompt"].as_str().unwrap_or_default(),
        row["input"].as_str().unwrap_or_default()
    );
    // The same parser, lowered (eagerly), accepts the output it parses.
    let lowered = gbnf_peg::lower(&arena, &gbnf_peg::LowerOptions::default())
        .map_err(|error| format!("{name}: lower: {error}"))?;
    let matcher =
        gbnf::Matcher::new(&lowered.grammar, "root").map_err(|error| format!("{name}: {error}"))?;
    let verdict = matcher.verdict(&output);
    if expect["success"] == true && verdict != gbnf::Verdict::Accept {
        return Err(format!("{name}: the lowered grammar says {verdict:?}"));
    }
    let message = match parse_message(&arena, &output) {
        Ok(message) => message,
        Err(_) if expect["success"] == false => return Ok(()),
        Err(error) => return Err(format!("{name}: {error}")),
    };
    let calls: Vec<Value> = message
        .tool_calls
        .iter()
        .map(|call| serde_json::json!({"name": call.name, "arguments": call.arguments, "id": call.id}))
        .collect();
    let got = serde_json::json!({
        "success": true,
        "reasoning_content": message.reasoning_content,
        "content": message.content,
        "tool_calls": calls,
    });
    if &got != expect {
        return Err(format!("{name}:\n  got      {got}\n  expected {expect}"));
    }
    Ok(())
}

#[test]
fn the_nine_native_rows_map_like_llama_cpp() {
    let rows = rows();
    assert_eq!(rows.len(), 9);
    let failures: Vec<String> = rows.iter().filter_map(|row| check(row).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of 9 rows differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

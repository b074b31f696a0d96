#!/usr/bin/env node
// llama-compat harness: asks llama.cpp's own grammar code what it thinks of GBNF grammars
// and strings, for `cargo xtask llama-compat`.
//
// Input (stdin, or --input FILE): one JSON record per line,
//   {"id": any, "grammar": "GBNF text", "root": "root", "strings": ["...", ...]}
// Output (stdout): one JSON line per record, in input order,
//   {"id": ..., "status": "ok", "verdicts": ["ACCEPT", "PREFIX", "REJECT 3", ...]}
//   {"id": ..., "status": "grammar_error", "error": "llama.cpp's message"}
//   {"id": ..., "status": "timeout" | "crash", "error": "..."}
// A verdict is the one a sampler with a byte-level vocabulary gives: the string is fed one
// byte per token through llama.cpp's grammar sampler; `REJECT n` names the first byte whose
// token the sampler refuses; after the last byte the string is ACCEPT when end-of-generation
// is allowed and PREFIX otherwise.
//
// Process layout: this process (the supervisor) forks one long-lived worker that loads the
// native addon once and answers records over IPC. llama.cpp reports syntax errors with
// fprintf(stderr), which cannot be caught inside the process, so the supervisor reads the
// worker's stderr; the worker ends each record with a marker line there, so the supervisor
// knows when all of the record's messages have arrived. A record that is not answered within
// --timeout seconds gets the worker killed and replaced, so no grammar can hang the run.
//
// Environment: NODE_LLAMA_CPP_DIR = the directory holding `node_modules/node-llama-cpp`
// (default: this script's directory). Nothing is ever downloaded or built.

import { fork } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";

const SCRIPT = fileURLToPath(import.meta.url);
const WORKER_ARG = "--worker";
const MARKER = "\u001e@@llama-compat-record-done@@";

// Token ids of the byte vocabulary: 0 <unk>, 1 <s>, 2 </s> (end of generation), 3 + b = byte b.
const EOS_TOKEN = 2;
const FIRST_BYTE_TOKEN = 3;

const USAGE = `usage: node harness.mjs [--input FILE] [--timeout SECONDS]
reads JSONL records {id, grammar, root, strings} (stdin by default), writes one JSON verdict
line per record to stdout; see the comment at the top of this file`;


// ------------------------------------------------------------------------------ supervisor --

function parseArgs(argv) {
  const options = { input: null, timeoutSeconds: 30 };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) fail(`${arg} needs a value`);
      return argv[++i];
    };
    if (arg === "--help" || arg === "-h") {
      process.stdout.write(USAGE + "\n");
      process.exit(0);
    } else if (arg === "--input") options.input = value();
    else if (arg === "--timeout") options.timeoutSeconds = Number(value());
    else fail(`unexpected argument ${arg}\n${USAGE}`);
  }
  if (!(options.timeoutSeconds > 0)) fail("--timeout needs a positive number of seconds");
  return options;
}

function fail(message) {
  process.stderr.write(`llama-compat harness: ${message}\n`);
  process.exit(2);
}

async function supervisorMain(options) {
  // A reader that stops early (`| head`) is not an error.
  process.stdout.on("error", (error) => process.exit(error.code === "EPIPE" ? 0 : 2));
  const input = options.input === null ? process.stdin : fs.createReadStream(options.input, "utf8");
  input.on("error", (error) => fail(`cannot read ${options.input}: ${error.message}`));
  const lines = readline.createInterface({ input, crlfDelay: Infinity });
  let worker = null;
  let lineNumber = 0;
  for await (const line of lines) {
    lineNumber++;
    if (line.trim() === "") continue;
    let record;
    try {
      record = JSON.parse(line);
    } catch (error) {
      fail(`line ${lineNumber}: not JSON: ${error.message}`);
    }
    if (typeof record.grammar !== "string") fail(`line ${lineNumber}: "grammar" must be a string`);
    const strings = record.strings ?? [];
    if (!Array.isArray(strings) || !strings.every((s) => typeof s === "string")) {
      fail(`line ${lineNumber}: "strings" must be an array of strings`);
    }
    if (worker === null) worker = await Worker.start();
    const answer = await worker.ask(
      { grammar: record.grammar, root: record.root ?? "root", strings },
      options.timeoutSeconds * 1000,
    );
    let result;
    if (answer.kind === "reply" && answer.reply.ok) {
      result = { id: record.id, status: "ok", verdicts: answer.reply.verdicts };
    } else if (answer.kind === "reply") {
      result = { id: record.id, status: "grammar_error", error: grammarError(answer.stderr, record.grammar) };
    } else {
      result = { id: record.id, status: answer.kind, error: answer.detail };
      worker.kill();
      worker = null;
    }
    await writeLine(JSON.stringify(result));
  }
  if (worker !== null) worker.kill();
}

function writeLine(text) {
  return new Promise((resolve) => {
    if (process.stdout.write(text + "\n")) resolve();
    else process.stdout.once("drain", resolve);
  });
}

// llama.cpp's message from what the worker wrote to stderr during one record. Syntax errors
// arrive as "parse: error parsing grammar: <message>\n\n<the grammar text>\n"; the others
// (missing root, left recursion, limits) come through the log callback as "llama: ..." lines.
function grammarError(stderr, grammarText) {
  const syntaxTag = "error parsing grammar: ";
  const at = stderr.indexOf(syntaxTag);
  if (at >= 0) {
    let message = stderr.slice(at + syntaxTag.length);
    const echo = message.indexOf("\n\n" + grammarText);
    message = echo >= 0 ? message.slice(0, echo) : message.split("\n")[0];
    return clip(message.trim());
  }
  const logged = stderr
    .split("\n")
    .filter((line) => line.startsWith("llama: "))
    .map((line) => line.slice("llama: ".length).trim())
    .filter((line) => line !== "" && !/failed to parse grammar/i.test(line));
  if (logged.length > 0) return clip(logged.join("; "));
  const other = stderr.split("\n").filter((line) => line.trim() !== "");
  return clip(other.length > 0 ? other.join("; ") : "llama.cpp refused the grammar without a message");
}

function clip(text) {
  return text.length > 500 ? text.slice(0, 500) + "..." : text;
}

// One forked worker process and the record it is answering.
class Worker {
  static async start() {
    const worker = new Worker();
    const first = await worker.next(120_000);
    if (first.kind !== "reply" || !first.reply.ready) {
      worker.kill();
      fail(`the worker did not start (${first.detail ?? "no ready message"}):\n${worker.stderr.slice(-2000)}`);
    }
    return worker;
  }

  constructor() {
    this.stderr = "";
    this.reply = null;
    this.exit = null;
    this.wake = null;
    this.child = fork(SCRIPT, [WORKER_ARG], {
      stdio: ["ignore", "ignore", "pipe", "ipc"],
      env: { ...process.env, NODE_LLAMA_CPP_SKIP_DOWNLOAD: "true" },
    });
    this.child.stderr.setEncoding("utf8");
    this.child.stderr.on("data", (chunk) => {
      this.stderr += chunk;
      this.poke();
    });
    this.child.on("message", (message) => {
      this.reply = message;
      this.poke();
    });
    this.child.on("exit", (code, signal) => {
      this.exit = signal ? `killed by ${signal}` : `exited with code ${code}`;
      this.poke();
    });
  }

  poke() {
    if (this.wake !== null) this.wake();
  }

  // Sends one record and waits for its reply and its stderr marker.
  ask(request, timeoutMs) {
    this.stderr = "";
    this.reply = null;
    this.child.send(request);
    return this.next(timeoutMs, true);
  }

  // Resolves with {kind: "reply", reply, stderr} | {kind: "timeout" | "crash", detail}.
  next(timeoutMs, needMarker = false) {
    return new Promise((resolve) => {
      const timer = setTimeout(() => finish({ kind: "timeout", detail: `no answer within ${timeoutMs / 1000} s` }), timeoutMs);
      const finish = (answer) => {
        clearTimeout(timer);
        this.wake = null;
        resolve(answer);
      };
      const check = () => {
        const markerAt = this.stderr.indexOf(MARKER);
        if (this.reply !== null && (!needMarker || markerAt >= 0)) {
          const stderr = needMarker ? this.stderr.slice(0, markerAt) : this.stderr;
          const reply = this.reply;
          this.reply = null;
          finish({ kind: "reply", reply, stderr });
        } else if (this.exit !== null) {
          finish({ kind: "crash", detail: `the worker ${this.exit}: ${this.stderr.slice(-500).trim()}` });
        }
      };
      this.wake = check;
      check();
    });
  }

  kill() {
    if (this.exit === null) this.child.kill("SIGKILL");
  }
}

// ---------------------------------------------------------------------------------- worker --

async function workerMain() {
  // The supervisor is gone (finished or killed): nothing is left to answer.
  process.on("disconnect", () => process.exit(0));
  const llama = await loadLlama();
  const model = await loadByteVocab(llama);
  const bindings = llama._bindings;
  process.on("message", async (request) => {
    let reply;
    try {
      const grammar = await llama.createGrammar({ grammar: request.grammar, rootRuleName: request.root });
      const initial = new bindings.AddonGrammarEvaluationState(model, grammar._grammar);
      reply = { ok: true, verdicts: request.strings.map((text) => verdict(bindings, initial, text)) };
    } catch (error) {
      // The native side queues its log lines for the event loop; give them time to reach
      // our logger (this only costs time on grammars that fail to load).
      await new Promise((resolve) => setTimeout(resolve, 100));
      fs.writeSync(2, `node-llama-cpp: ${String(error?.message ?? error)}\n`);
      reply = { ok: false };
    }
    // Writes to a pipe are synchronous here, so everything llama.cpp printed for this
    // record is in the pipe before the marker.
    fs.writeSync(2, `\n${MARKER}\n`);
    process.send(reply);
  });
  process.send({ ready: true });
}

async function loadLlama() {
  const base = process.env.NODE_LLAMA_CPP_DIR || path.dirname(SCRIPT);
  const entry = path.join(base, "node_modules", "node-llama-cpp", "dist", "index.js");
  if (!fs.existsSync(entry)) {
    fs.writeSync(2, `llama-compat: node-llama-cpp is not installed at ${entry}\n`);
    process.exit(3);
  }
  const nodeLlamaCpp = await import(pathToFileURL(entry).href);
  return nodeLlamaCpp.getLlama({
    gpu: false,
    build: "never",
    usePrebuiltBinaries: true,
    skipDownload: true,
    progressLogs: false,
    logLevel: nodeLlamaCpp.LlamaLogLevel.warn,
    logger: (level, message) => {
      if (level === "error" || level === "fatal") fs.writeSync(2, `llama: ${message.trimEnd()}\n`);
    },
  });
}

// Feeds `text` byte by byte from a copy of the grammar's initial state.
function verdict(bindings, initial, text) {
  const sampler = bindings.AddonSampler;
  const state = new bindings.AddonGrammarEvaluationState(initial);
  const bytes = Buffer.from(text, "utf8");
  for (let offset = 0; offset < bytes.length; offset++) {
    const token = FIRST_BYTE_TOKEN + bytes[offset];
    if (!sampler.canBeNextTokenForGrammarEvaluationState(state, token)) return `REJECT ${offset}`;
    sampler.acceptGrammarEvaluationStateToken(state, token);
  }
  return sampler.canBeNextTokenForGrammarEvaluationState(state, EOS_TOKEN) ? "ACCEPT" : "PREFIX";
}

// Loads a vocabulary-only model with one token per byte, written as a GGUF file.
async function loadByteVocab(llama) {
  const file = path.join(os.tmpdir(), `llama-compat-byte-vocab-${process.pid}.gguf`);
  fs.writeFileSync(file, byteVocabGguf());
  const bindings = llama._bindings;
  const model = new bindings.AddonModel(file, { addonExports: bindings, vocabOnly: true, gpuLayers: 0, useMmap: false });
  const loaded = await model.init();
  fs.rmSync(file, { force: true });
  if (!loaded) {
    fs.writeSync(2, "llama-compat: llama.cpp could not load the byte vocabulary\n");
    process.exit(3);
  }
  return model;
}

// A GGUF (version 3) file with no tensors whose metadata is a SentencePiece-style ("llama")
// vocabulary: <unk>, <s>, </s> and the 256 byte tokens <0x00>..<0xFF>. The pieces of byte
// tokens are the raw bytes, which is what lets the sampler see every byte on its own.
function byteVocabGguf() {
  const GGUF_U32 = 4, GGUF_I32 = 5, GGUF_F32 = 6, GGUF_BOOL = 7, GGUF_STRING = 8, GGUF_ARRAY = 9;
  const TOKEN_UNKNOWN = 2, TOKEN_CONTROL = 3, TOKEN_BYTE = 6;
  const chunks = [];
  const u32 = (n) => { const b = Buffer.alloc(4); b.writeUInt32LE(n); chunks.push(b); };
  const i32 = (n) => { const b = Buffer.alloc(4); b.writeInt32LE(n); chunks.push(b); };
  const f32 = (n) => { const b = Buffer.alloc(4); b.writeFloatLE(n); chunks.push(b); };
  const u64 = (n) => { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(n)); chunks.push(b); };
  const string = (s) => { const b = Buffer.from(s, "utf8"); u64(b.length); chunks.push(b); };

  const pieces = ["<unk>", "<s>", "</s>"];
  const kinds = [TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_CONTROL];
  for (let byte = 0; byte < 256; byte++) {
    pieces.push(`<0x${byte.toString(16).toUpperCase().padStart(2, "0")}>`);
    kinds.push(TOKEN_BYTE);
  }
  const entries = [
    ["general.architecture", () => { u32(GGUF_STRING); string("llama"); }],
    ["general.name", () => { u32(GGUF_STRING); string("schema2gbnf byte vocabulary"); }],
    ["tokenizer.ggml.model", () => { u32(GGUF_STRING); string("llama"); }],
    ["tokenizer.ggml.tokens", () => { u32(GGUF_ARRAY); u32(GGUF_STRING); u64(pieces.length); pieces.forEach(string); }],
    ["tokenizer.ggml.scores", () => { u32(GGUF_ARRAY); u32(GGUF_F32); u64(pieces.length); pieces.forEach(() => f32(0)); }],
    ["tokenizer.ggml.token_type", () => { u32(GGUF_ARRAY); u32(GGUF_I32); u64(kinds.length); kinds.forEach(i32); }],
    ["tokenizer.ggml.unknown_token_id", () => { u32(GGUF_U32); u32(0); }],
    ["tokenizer.ggml.bos_token_id", () => { u32(GGUF_U32); u32(1); }],
    ["tokenizer.ggml.eos_token_id", () => { u32(GGUF_U32); u32(EOS_TOKEN); }],
    ["tokenizer.ggml.add_bos_token", () => { u32(GGUF_BOOL); chunks.push(Buffer.from([0])); }],
    ["tokenizer.ggml.add_space_prefix", () => { u32(GGUF_BOOL); chunks.push(Buffer.from([0])); }],
  ];
  chunks.push(Buffer.from("GGUF"));
  u32(3); // version
  u64(0); // tensors
  u64(entries.length);
  for (const [key, writeValue] of entries) {
    string(key);
    writeValue();
  }
  const body = Buffer.concat(chunks);
  const padding = (32 - (body.length % 32)) % 32; // the default general.alignment
  return Buffer.concat([body, Buffer.alloc(padding)]);
}

// ------------------------------------------------------------------------------------ main --

if (process.argv.includes(WORKER_ARG)) {
  await workerMain();
} else {
  await supervisorMain(parseArgs(process.argv.slice(2)));
}

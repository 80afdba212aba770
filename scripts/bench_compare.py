#!/usr/bin/env python3
"""Summarize `scripts/bench-compare.sh`: this Hub against the reference Hub, round by round.

Each round directory holds the two servers' `ma2h-bench submit --json` summaries, taken one
right after the other with the same load generator (`hub/submit.json`,
`ref/submit-reference.json`). A round's ratio is this Hub's throughput over the reference's in
that round. The machine's speed drifts by several per cent over minutes, so a single round
proves little; the summary gives the median ratio with a distribution-free confidence interval
for it (order statistics of the binomial: no assumption about the shape of the noise).

A round in which some other process took more than `--max-other` per cent of a core while
either server was measured (the machine's busy time less the server's and the load
generator's, as `ma2h-bench` reports it) measured that process, not the servers: it is listed
but left out of the statistics. On an otherwise idle machine the Hub's runs show ~5-6 % there
(kernel threads, most likely the disk's writeback and I/O completions), the reference's 0-4 %.

    python3 scripts/bench_compare.py summarize OUT_DIR [--goal 1.5] [--max-other 15] [--round N]
    python3 scripts/bench_compare.py --self-test
"""

import json
import math
import pathlib
import statistics
import sys


def median_interval(n, confidence=0.95):
    """1-based ranks (lo, hi) of the order statistics bracketing the median with at least
    `confidence` coverage, or None when n is too small for any such interval."""
    # P(X < k) for X ~ Binomial(n, 1/2); [x(k), x(n-k+1)] covers the median with 1 - 2 P(X < k).
    best = None
    cumulative = 0.0
    for k in range(1, n // 2 + 1):
        cumulative += math.comb(n, k - 1) / 2**n  # now P(X <= k - 1)
        if 1 - 2 * cumulative >= confidence:
            best = k
    return None if best is None else (best, n - best + 1)


def level(path):
    doc = json.loads(path.read_text())
    lv = doc["levels"][-1]
    cpu = lv["cpu"]
    return {
        "other_pct": cpu["machine_busy_pct_of_all_cores"] * cpu["cores"]
        - cpu["hub_pct_of_one_core"]
        - cpu["client_pct_of_one_core"],
        "concurrency": lv["concurrency"],
        "throughput": lv["throughput_per_s"],
        "p99_ms": lv["latency"]["p99_us"] / 1000,
        "cpu_pct": lv["cpu"]["hub_pct_of_one_core"],
        "errors": sum(lv["errors"].values()) if lv["errors"] else 0,
    }


def cpu_us(side):
    """Server CPU per request: its share of a core over its throughput."""
    return side["cpu_pct"] / 100 / side["throughput"] * 1e6


def rounds(out):
    found = []
    for d in sorted(out.glob("round-*"), key=lambda p: int(p.name.split("-")[1])):
        hub, ref = d / "hub" / "submit.json", d / "ref" / "submit-reference.json"
        if hub.exists() and ref.exists():
            found.append((int(d.name.split("-")[1]), level(hub), level(ref)))
    return found


def disturbed(hub, ref, max_other):
    return max(hub["other_pct"], ref["other_pct"]) > max_other


def row(n, hub, ref, max_other):
    note = ""
    if disturbed(hub, ref, max_other):
        note = (f" — left out: other processes {hub['other_pct']:.0f} % / {ref['other_pct']:.0f} % "
                f"of a core during the two runs")
    return (f"| {n} | {hub['throughput']:,.0f}/s · {cpu_us(hub):.1f} µs · p99 {hub['p99_ms']:.1f} ms "
            f"| {ref['throughput']:,.0f}/s · {cpu_us(ref):.1f} µs | {hub['throughput'] / ref['throughput']:.2f}×{note} |")


def summarize(out, goal, max_other, only=None):
    found = rounds(out)
    if only is not None:
        for n, hub, ref in found:
            if n == only:
                print(row(n, hub, ref, max_other))
        return 0
    if not found:
        print(f"no complete round under {out}", file=sys.stderr)
        return 1
    print("| round | this Hub (durable) | reference (in memory) | ratio |")
    print("|---:|---:|---:|---:|")
    for n, hub, ref in found:
        print(row(n, hub, ref, max_other))
    left_out = [n for n, hub, ref in found if disturbed(hub, ref, max_other)]
    found = [(n, hub, ref) for n, hub, ref in found if n not in left_out]
    if not found:
        print(f"every round was disturbed by another process (over {max_other} % of a core)", file=sys.stderr)
        return 1
    ratios = sorted(hub["throughput"] / ref["throughput"] for _, hub, ref in found)
    errors = sum(hub["errors"] + ref["errors"] for _, hub, ref in found)
    med = statistics.median(ratios)
    summary = {
        "rounds": len(ratios),
        "left_out": left_out,
        "max_other_pct": max_other,
        "median_ratio": round(med, 3),
        "min_ratio": round(ratios[0], 3),
        "max_ratio": round(ratios[-1], 3),
        "rounds_at_goal": sum(r >= goal for r in ratios),
        "goal": goal,
        "errors": errors,
        "hub_cpu_us_per_submit": [round(cpu_us(h), 1) for _, h, _ in found],
        "hub_p99_ms": [round(h["p99_ms"], 2) for _, h, _ in found],
    }
    print()
    if left_out:
        print(f"left out (another process over {max_other} % of a core): rounds {', '.join(map(str, left_out))}")
    print(f"rounds {len(ratios)}: ratio median {med:.2f}×, range {ratios[0]:.2f}–{ratios[-1]:.2f}×, "
          f"{summary['rounds_at_goal']} of {len(ratios)} rounds ≥ {goal}×; request errors {errors}")
    ranks = median_interval(len(ratios))
    if ranks is None:
        print("too few rounds for a 95 % interval on the median (run at least 6)")
    else:
        lo, hi = ratios[ranks[0] - 1], ratios[ranks[1] - 1]
        summary["median_interval_95"] = [round(lo, 3), round(hi, 3)]
        verdict = "above" if lo >= goal else ("below" if hi < goal else "not separable from")
        print(f"95 % interval for the median ratio: {lo:.2f}–{hi:.2f}× (order statistics {ranks[0]} and "
              f"{ranks[1]} of {len(ratios)}): {verdict} the {goal}× goal")
        summary["verdict"] = verdict
    (out / "compare.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"wrote {out / 'compare.json'}")
    return 0


def self_test():
    # n = 20: P(X <= 5) = 0.0207 -> [x(6), x(15)], coverage 95.9 %
    assert median_interval(20) == (6, 15), median_interval(20)
    # n = 10: P(X <= 1) = 0.0107 -> [x(2), x(9)], coverage 97.9 %; x(3) would give 89 %
    assert median_interval(10) == (2, 9), median_interval(10)
    # n = 6: only [x(1), x(6)] reaches 95 % (96.9 %); n = 5 cannot (93.8 %)
    assert median_interval(6) == (1, 6), median_interval(6)
    assert median_interval(5) is None
    assert cpu_us({"cpu_pct": 100.0, "throughput": 20_000.0}) == 50.0
    quiet, busy = {"other_pct": 5.5}, {"other_pct": 96.0}
    assert not disturbed(quiet, quiet, 15) and disturbed(quiet, busy, 15) and disturbed(busy, quiet, 15)
    print("bench_compare self-test: ok")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) < 3 or argv[1] != "summarize":
        print(__doc__, file=sys.stderr)
        return 2
    out = pathlib.Path(argv[2])
    goal, max_other, only = 1.5, 15.0, None
    rest = argv[3:]
    while rest:
        flag, value, rest = rest[0], rest[1], rest[2:]
        if flag == "--goal":
            goal = float(value)
        elif flag == "--max-other":
            max_other = float(value)
        elif flag == "--round":
            only = int(value)
        else:
            print(f"unknown option {flag}", file=sys.stderr)
            return 2
    return summarize(out, goal, max_other, only)


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Human-in-the-loop for a LangGraph graph: a node calls ``interrupt(...)``, the question goes to a
human through the MA2H Hub, and the graph resumes with ``Command(resume=<the human's answer>)``.

    source data/dev.env && export MA2H_RESOLVERS=human:dev
    python sdk/python/examples/langgraph_style.py          # then answer in the inbox

With ``langgraph`` installed the real ``StateGraph``/``interrupt``/``Command``/``InMemorySaver``
are used. Without it, a **minimal stand-in** below implements the same contract — so this file
runs (and reads) anywhere:

- a node that calls ``interrupt(value)`` stops the run; ``invoke`` returns the state so far plus
  ``"__interrupt__": [Interrupt(value=…)]``, and the checkpointer keeps the thread;
- ``invoke(Command(resume=x), config)`` on the same ``thread_id`` re-runs the interrupted node
  from its start, and this time ``interrupt(...)`` returns ``x``.

The pattern: the graph's *thread id* goes into the ask's sealed ``state`` (§9.3), so whichever
process receives the answer — this one via ``wait()``, or a re-invoked one via a verified push
(``hub.verify_callback``) or a session's ``response`` entry — resumes exactly that thread, after
checking the Hub did not alter it. For an agent that exits while the human thinks, use a durable
checkpointer (e.g. LangGraph's SQLite/Postgres savers) instead of the in-memory one.
"""

from __future__ import annotations

import sys
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, TypedDict

from ma2h import Hub, StateKey

try:  # the real library
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Command, interrupt

    STAND_IN = False
except ImportError:  # a faithful minimal stand-in of the parts used here (linear graphs only)
    STAND_IN = True
    START, END = "__start__", "__end__"

    @dataclass
    class Command:  # type: ignore[no-redef]
        resume: Any = None

    @dataclass
    class Interrupt:
        value: Any

    class _GraphInterrupt(Exception):
        def __init__(self, value: Any) -> None:
            super().__init__("interrupted")
            self.value = value

    _RESUME: List[Any] = []  # the resume value offered to the node being re-run

    def interrupt(value: Any) -> Any:  # type: ignore[no-redef]
        """Stop the run and surface ``value``; on resume, return the resume value instead."""
        if _RESUME:
            return _RESUME.pop()
        raise _GraphInterrupt(value)

    class InMemorySaver:  # type: ignore[no-redef]
        def __init__(self) -> None:
            self.threads: Dict[str, Dict[str, Any]] = {}

    class StateGraph:  # type: ignore[no-redef]
        def __init__(self, schema: Any) -> None:
            self.nodes: Dict[str, Callable[[Dict[str, Any]], Dict[str, Any]]] = {}
            self.edges: Dict[str, str] = {}

        def add_node(self, name: str, fn: Callable[[Dict[str, Any]], Dict[str, Any]]) -> None:
            self.nodes[name] = fn

        def add_edge(self, source: str, target: str) -> None:
            self.edges[source] = target

        def compile(self, checkpointer: "InMemorySaver") -> "_Compiled":
            return _Compiled(self, checkpointer)

    class _Compiled:
        def __init__(self, graph: "StateGraph", saver: "InMemorySaver") -> None:
            self.graph, self.saver = graph, saver

        def invoke(self, value: Any, config: Dict[str, Any]) -> Dict[str, Any]:
            thread = config["configurable"]["thread_id"]
            if isinstance(value, Command):
                saved = self.saver.threads[thread]
                state, node = dict(saved["state"]), saved["next"]
                _RESUME[:] = [value.resume]
            else:
                state, node = dict(value), self.graph.edges[START]
            while node != END:
                try:
                    state.update(self.graph.nodes[node](state) or {})
                except _GraphInterrupt as stop:
                    _RESUME.clear()
                    self.saver.threads[thread] = {"state": state, "next": node}
                    return {**state, "__interrupt__": [Interrupt(stop.value)]}
                _RESUME.clear()
                node = self.graph.edges[node]
            self.saver.threads[thread] = {"state": state, "next": END}
            return state


class DeployState(TypedDict, total=False):
    build: int
    decision: str
    log: List[str]


def plan(state: DeployState) -> Dict[str, Any]:
    return {"log": [f"planned deploy of build {state['build']}"]}


def approval(state: DeployState) -> Dict[str, Any]:
    # Everything before interrupt() re-runs on resume: keep it free of side effects.
    decision = interrupt(
        {
            "title": f"Ship build {state['build']} to prod?",
            "options": [["ship", "Ship now"], ["hold", "Hold"]],
        }
    )
    return {"decision": decision}


def deploy(state: DeployState) -> Dict[str, Any]:
    action = "deployed" if state["decision"] == "ship" else "held"
    return {"log": state.get("log", []) + [f"{action} build {state['build']}"]}


def build_graph() -> Any:
    graph = StateGraph(DeployState)
    graph.add_node("plan", plan)
    graph.add_node("approval", approval)
    graph.add_node("deploy", deploy)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "approval")
    graph.add_edge("approval", "deploy")
    graph.add_edge("deploy", END)
    return graph.compile(checkpointer=InMemorySaver())


def ask_the_hub(hub: Hub, thread_id: str, question: Dict[str, Any]) -> Any:
    """File the interrupt's question as an ask; return the human's verified answer value."""
    ack = hub.submit(
        hub.ask(
            question["title"],
            options=[tuple(o) for o in question["options"]],
            default_on_expire="hold",
            expires_in=3600,
            state={"thread_id": thread_id},  # sealed: names the graph thread to resume
            idempotency_key=f"langgraph-{thread_id}",  # a retried run files the same ask (§8.1)
        )
    )
    print(f"interrupted: asked {ack.id}, waiting for a human", flush=True)
    answer = hub.wait(ack.id, timeout=3600)
    resumed_thread = answer.open_state(hub.state_key, hub.agent.id)["thread_id"]  # StateError if forged
    if resumed_thread != thread_id:
        raise RuntimeError("the answer belongs to another graph thread")
    print(f"{answer.actor} answered {answer.value!r} ({answer.resolution})")
    # Fail closed: anything but an explicit human "ship" resumes as "hold".
    return answer.value if answer.resolution == "answered" else "hold"


def main() -> int:
    hub = Hub.from_env()
    if hub.state_key is None:
        hub.state_key = StateKey.generate()  # demo only: a real agent pre-positions MA2H_STATE_KEY
    print("using", "a stand-in for LangGraph (not installed)" if STAND_IN else "LangGraph")
    graph = build_graph()
    thread_id = f"deploy-{uuid.uuid4().hex[:12]}"
    config = {"configurable": {"thread_id": thread_id}}
    result: Optional[Dict[str, Any]] = graph.invoke({"build": 412, "log": []}, config)
    while result is not None and result.get("__interrupt__"):
        resume = ask_the_hub(hub, thread_id, result["__interrupt__"][0].value)
        result = graph.invoke(Command(resume=resume), config)
    assert result is not None
    print("\n".join(result["log"]))
    return 0 if result.get("decision") == "ship" else 10


if __name__ == "__main__":
    sys.exit(main())

"""The conformance suite: every scenario of scenarios.json against every language's helpers,
through each language's driver (DRIVER.md). A scenario is data; this file only interprets it.

    CONFORMANCE_LANGUAGES=python,go pytest -q clients/conformance   (default: all five)

Each scenario gets its own Baton (with its embedded Redis) and its own driver processes. Steps:

- {"send": CMD, "to": DRIVER}            a command to a driver (default "main")
- {"expect": MATCH, "count": N, "from": DRIVER, "distinct": FIELD, "exactly": true,
   "within_s_since": [MARK, S], "report_since": MARK}
                                         waits until N events (since the start) match MATCH (every
                                         key equal); with "distinct", N different values of FIELD;
                                         with "exactly", no more than N events match at that point.
                                         A "reason" in MATCH is left out for the languages whose
                                         helpers give a handler no reason (WITHOUT_REASON)
- {"on": MATCH, "nth": N, "send": CMD}   sends CMD the moment the Nth matching event is read
- {"auto_finish": ID}                    answers every `started` of worker ID with a `finish`
- {"invariant": {"max_running": N, "id": ID}}
                                         started minus (finished + cancelled) never above N
- {"fault": "kill_driver" | "freeze_baton" | "thaw_baton", "driver": DRIVER}
- {"driver": NAME}                       starts another driver process of the same language
- {"mark": NAME}                         remembers the time
- {"register_direct": {...}}             registers an agent with the generated Python stubs
- {"cancel_run": {"queue", "name"}}      AgentService.CancelRun
- {"end_lease": {"queue", "name"}}       someone else ends the agent's current lease: Complete
                                         (SUCCESS) with the token GetAgent shows, as a worker that
                                         took the lease over after its expiry would
- {"check": {...}}                       Baton's state (see `check`): "agents" (how many), "names",
                                         "states" (ListAgents), "agent_states" (GetAgent, by name),
                                         "released" (names waiting, held by nobody, no failure
                                         counted: handed back, not failed), "trace_id", "dead_letter";
                                         {"group": G, "held": N}: GetGroupLimits (no queue)
- {"no_more": MATCH, "count": N, "for_s": S, "from": DRIVER}
                                         for S seconds, no more than N events (since the start)
                                         match MATCH
- {"expect_sequence": [MATCH, ...], "among": MATCH, "exactly": true, "from": DRIVER}
                                         waits until as many events match "among" as the list is
                                         long; the first ones, in arrival order, match the list's
                                         patterns one by one (with "exactly", no more arrived)
- {"increasing": MATCH, "fields": [F, ...], "from": DRIVER}
                                         the events matching MATCH carry strictly increasing
                                         (F, ...) tuples in arrival order (none repeated)
- {"finish_started": MATCH, "from": DRIVER}
                                         sends `finish` for the first `started` event matching MATCH
- {"set_group_limits": {"group", "concurrency"}}
                                         AdminService.SetGroupLimits
- {"set_limits": {"queue", "group", "concurrency", "create"}}
                                         AdminService.SetLimits (QueueLimits.group)
- {"until_state": {"queue", "name", "state"}}
                                         GetAgent until the agent is in that AgentState (at most
                                         10 s): a driver's event can come before Baton applied
                                         what the helper sends next (a wait's completion)
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import threading
import time

import pytest

HERE = pathlib.Path(__file__).resolve().parent
CLIENTS = HERE.parent
REPO = CLIENTS.parent
sys.path.insert(0, str(CLIENTS / "crosslang"))

from harness import BatonServer, java_classpath  # noqa: E402

SCENARIOS = json.loads((HERE / "scenarios.json").read_text())
LANGUAGES = ["python", "typescript", "go", "java", "rust"]
SELECTED = [lang for lang in os.environ.get("CONFORMANCE_LANGUAGES", ",".join(LANGUAGES)).split(",") if lang]
TIMEOUT_S = 60.0
# Languages whose worker helper tells a cancelled handler no reason (no LEASE_LOST, RUN_CANCELLED
# or SHUTDOWN): their drivers' `cancelled` events carry none (DRIVER.md).
WITHOUT_REASON = {"python", "rust"}


def driver_command(language: str) -> list[str]:
    """How each language's driver starts (built by `scripts/clients test conformance`)."""
    if language == "python":
        return [sys.executable, str(CLIENTS / "python" / "conformance_driver.py")]
    if language == "typescript":
        return ["node", str(CLIENTS / "typescript" / "dist" / "test" / "conformance-driver.js")]
    if language == "go":
        return [str(CLIENTS / ".tools" / "bin" / "baton-go-conformance-driver")]
    if language == "java":
        return ["java", "-XX:TieredStopAtLevel=1", "-cp", java_classpath(), "dev.baton.client.ConformanceDriver"]
    if language == "rust":
        binary = os.environ.get("TEST_CONFORMANCE_RUST_DRIVER") or str(REPO / "target" / "debug" / "examples" / "conformance_driver")
        return [binary]
    raise ValueError(language)


class Driver:
    """One driver process: commands in, events out (each stamped with the time it was read)."""

    def __init__(self, name: str, language: str, target: str, run: "Run"):
        self.name, self.language, self.run = name, language, run
        self.stderr = tempfile.TemporaryFile()
        env = {**os.environ, "BATON_TARGET": target}
        self.proc = subprocess.Popen(driver_command(language), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, text=True, bufsize=1, env=env, cwd=str(REPO))
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            line = line.strip()
            if not line:
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                self.run.fail(f"driver {self.name} printed a line that is not JSON: {line!r}")
                continue
            self.run.arrived(self, event)

    def send(self, cmd: dict) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(cmd) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            self.run.fail(f"driver {self.name} is gone; could not send {cmd}")

    def error_output(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")[-4000:]

    def close(self) -> None:
        """End of input: the driver stops everything gracefully and exits."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except (BrokenPipeError, OSError):
                pass
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(timeout=5)


def matches(event: dict, pattern: dict) -> bool:
    return all(event.get(k) == v for k, v in pattern.items())


class Run:
    """One scenario in one language: its Baton, its drivers, every event read, the rules."""

    def __init__(self, language: str, scenario: dict):
        self.language, self.scenario = language, scenario
        self.cond = threading.Condition()
        self.events: list[tuple[float, str, dict]] = []  # (time, driver, event)
        self.failures: list[str] = []
        self.rules: list[dict] = []  # "on" rules, auto_finish, invariants
        self.marks: dict[str, float] = {}
        self.report: list[str] = []
        self.baton = BatonServer(env=scenario.get("baton_env"))
        self.drivers: dict[str, Driver] = {}
        try:
            self.start_driver("main")
        except BaseException:
            self.close()  # a driver that cannot start must not leave its Baton running
            raise

    def start_driver(self, name: str) -> None:
        self.drivers[name] = Driver(name, self.language, self.baton.addr, self)
        self.wait({"event": "ready"}, 1, name, timeout=TIMEOUT_S)

    def fail(self, message: str) -> None:
        with self.cond:
            self.failures.append(message)
            self.cond.notify_all()

    def arrived(self, driver: Driver, event: dict) -> None:
        to_send = []
        with self.cond:
            self.events.append((time.monotonic(), driver.name, event))
            if event.get("event") == "error":
                self.failures.append(f"driver {driver.name} reported an error: {event}")
            for rule in self.rules:
                kind = rule["kind"]
                if kind == "on" and matches(event, rule["match"]) and rule["driver"] == driver.name:
                    rule["seen"] += 1
                    if rule["seen"] == rule["nth"]:
                        to_send.append((driver, rule["send"]))
                elif kind == "auto_finish" and event.get("event") == "started" and event.get("id") == rule["id"]:
                    to_send.append((driver, {"cmd": "finish", "id": rule["id"], "name": event.get("name")}))
                elif kind == "invariant" and event.get("id") == rule["id"]:
                    if event.get("event") == "started":
                        rule["running"] += 1
                    elif event.get("event") in ("finished", "cancelled", "waiting"):
                        rule["running"] -= 1
                    if rule["running"] > rule["max"]:
                        self.failures.append(f"{rule['running']} handlers of {rule['id']} ran at once, more than {rule['max']}")
            self.cond.notify_all()
        for d, cmd in to_send:
            d.send(cmd)

    def count(self, pattern: dict, driver: str, distinct: str | None) -> tuple[int, float | None]:
        hits = [(t, e) for t, d, e in self.events if d == driver and matches(e, pattern)]
        if distinct:
            firsts: dict = {}
            for t, e in hits:
                firsts.setdefault(e.get(distinct), t)
            times = sorted(firsts.values())
        else:
            times = [t for t, _ in hits]
        return len(times), (times[-1] if times else None)

    def wait(self, pattern: dict, n: int, driver: str, distinct: str | None = None,
             timeout: float = TIMEOUT_S) -> float:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                if self.failures:
                    raise AssertionError("; ".join(self.failures))
                got, last = self.count(pattern, driver, distinct)
                if got >= n:
                    return last if n > 0 else time.monotonic()
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"waited {timeout:.0f} s for {n} × {pattern} from {driver}; saw {got}")
                self.cond.wait(timeout=min(left, 1.0))

    # --- Baton's state, through the generated Python stubs ------------------------------------
    def stubs(self):
        from baton.v1 import admin_pb2, admin_pb2_grpc, agent_pb2, agent_pb2_grpc
        channel = self.baton.channel()
        return channel, agent_pb2, agent_pb2_grpc.AgentServiceStub(channel), admin_pb2, admin_pb2_grpc.AdminServiceStub(channel)

    def agents(self, queue: str):
        channel, agent_pb2, agents, _, _ = self.stubs()
        with channel:
            return list(agents.ListAgents(agent_pb2.ListAgentsRequest(queue=queue, page_size=1000), timeout=10).agents)

    def check(self, spec: dict) -> None:
        from baton.v1 import agent_pb2
        if "group" in spec:
            channel, _, _, admin_pb2, admin = self.stubs()
            with channel:
                entry = admin.GetGroupLimits(admin_pb2.GetGroupLimitsRequest(group=spec["group"]), timeout=10).group
            assert entry.held == spec["held"], f"group {spec['group']} holds {entry.held}, expected {spec['held']}"
            return
        queue = spec["queue"]
        found = self.agents(queue)
        if "agents" in spec:
            assert len(found) == spec["agents"], f"{len(found)} agents left in {queue}, expected {spec['agents']}: {found}"
        if "names" in spec:
            assert sorted(a.agent.name for a in found) == sorted(spec["names"]), found
        if "states" in spec:
            states: dict[str, int] = {}
            for a in found:
                name = agent_pb2.AgentState.Name(a.state)
                states[name] = states.get(name, 0) + 1
            assert states == spec["states"], f"states {states}, expected {spec['states']}"
        if "agent_states" in spec:
            # GetAgent's state, one agent at a time (ListAgents does not tell a blocked agent).
            channel, _, agents, _, _ = self.stubs()
            with channel:
                for name, want in spec["agent_states"].items():
                    got = agents.GetAgent(agent_pb2.GetAgentRequest(queue=queue, name=name), timeout=10).agent.state
                    assert agent_pb2.AgentState.Name(got) == want, f"{name} is {agent_pb2.AgentState.Name(got)}, expected {want}"
        if "released" in spec:
            channel, _, agents, _, _ = self.stubs()
            with channel:
                for name in spec["released"]:
                    got = agents.GetAgent(agent_pb2.GetAgentRequest(queue=queue, name=name), timeout=10).agent
                    state = agent_pb2.AgentState.Name(got.state)
                    assert (state, got.holder, got.failure_streak) == ("AGENT_STATE_WAITING", "", 0), \
                        f"{name} not handed back cleanly: {state}, holder {got.holder!r}, failure streak {got.failure_streak}"
        if "trace_id" in spec:
            want = spec["trace_id"]
            agent = next(a for a in found if a.agent.name == want["name"])
            assert want["trace_id"] in agent.agent.traceparent, agent.agent.traceparent
        if "dead_letter" in spec:
            want = spec["dead_letter"]
            channel, _, _, admin_pb2, admin = self.stubs()
            with channel:
                source = admin_pb2.Source(kind=admin_pb2.SOURCE_KIND_QUEUE, name=queue)
                letters = admin.ListDeadLetters(admin_pb2.ListDeadLettersRequest(source=source), timeout=10).dead_letters
            letter = next((d for d in letters if d.id == want["name"]), None)
            assert letter is not None, f"{want['name']} is not dead-lettered: {letters}"
            assert letter.error_class == want["error_class"], letter
            message = letter.message
            assert len(message.encode()) <= want["clipped_to"], f"{len(message.encode())} bytes kept"
            assert message.endswith("…"), f"a clipped message ends with …: {message!r}"
            assert want["contains"] in message, message

    def register_direct(self, spec: dict) -> None:
        channel, agent_pb2, agents, _, _ = self.stubs()
        with channel:
            from google.protobuf.duration_pb2 import Duration
            agent = agent_pb2.Agent(name=spec["name"], timeout=Duration(seconds=30),
                                    max_attempts=spec.get("max_attempts", 0))
            agents.Register(agent_pb2.RegisterRequest(queue=spec["queue"], agents=[agent]), timeout=10)

    def until_state(self, spec: dict) -> None:
        from baton.v1 import agent_pb2
        channel, _, agents, _, _ = self.stubs()
        deadline = time.monotonic() + 10
        with channel:
            while True:
                got = agents.GetAgent(agent_pb2.GetAgentRequest(queue=spec["queue"], name=spec["name"]), timeout=10)
                state = agent_pb2.AgentState.Name(got.agent.state)
                if state == spec["state"]:
                    return
                if time.monotonic() > deadline:
                    raise AssertionError(f"{spec['name']} is {state} after 10 s, expected {spec['state']}")
                with self.cond:
                    self.cond.wait(timeout=0.02)

    def set_group_limits(self, spec: dict) -> None:
        channel, _, _, admin_pb2, admin = self.stubs()
        with channel:
            limits = admin_pb2.GroupLimits(concurrency=spec.get("concurrency", 0))
            admin.SetGroupLimits(admin_pb2.SetGroupLimitsRequest(group=spec["group"], limits=limits), timeout=10)

    def set_limits(self, spec: dict) -> None:
        channel, _, _, admin_pb2, admin = self.stubs()
        with channel:
            limits = admin_pb2.QueueLimits(concurrency=spec.get("concurrency", 0), group=spec.get("group", ""))
            admin.SetLimits(admin_pb2.SetLimitsRequest(queue=spec["queue"], limits=limits, create=spec.get("create", False)),
                            timeout=10)

    def matching(self, pattern: dict, driver: str) -> list[dict]:
        with self.cond:
            return [e for _, d, e in self.events if d == driver and matches(e, pattern)]

    def cancel_run(self, spec: dict) -> None:
        channel, agent_pb2, agents, _, _ = self.stubs()
        with channel:
            agents.CancelRun(agent_pb2.CancelRunRequest(queue=spec["queue"], name=spec["name"]), timeout=10)

    def end_lease(self, spec: dict) -> None:
        channel, agent_pb2, agents, _, _ = self.stubs()
        with channel:
            held = agents.GetAgent(agent_pb2.GetAgentRequest(queue=spec["queue"], name=spec["name"]), timeout=10).agent
            assert held.state == agent_pb2.AGENT_STATE_WORKING, f"{spec['name']} is not held: {held}"
            agents.Complete(agent_pb2.CompleteRequest(queue=spec["queue"], name=spec["name"], token=held.token,
                                                      outcome=agent_pb2.OUTCOME_SUCCESS), timeout=10)

    # --- the steps ----------------------------------------------------------------------------
    def step(self, s: dict) -> None:
        driver = s.get("to") or s.get("from") or s.get("driver") or "main"
        if "on" in s:
            with self.cond:
                self.rules.append({"kind": "on", "match": s["on"], "nth": s["nth"], "send": s["send"], "seen": 0,
                                   "driver": s.get("to", "main")})
        elif "send" in s:
            self.drivers[driver].send(s["send"])
        elif "expect" in s:
            pattern = dict(s["expect"])
            if self.language in WITHOUT_REASON:
                pattern.pop("reason", None)
            last = self.wait(pattern, s.get("count", 1), driver, s.get("distinct"))
            if s.get("exactly"):
                with self.cond:
                    got = sum(1 for _, d, e in self.events if d == driver and matches(e, pattern))
                assert got == s.get("count", 1), f"{got} × {pattern} from {driver}, expected exactly {s.get('count', 1)}"
            if "report_since" in s:
                self.report.append(f"{s['expect']} {last - self.marks[s['report_since']]:.2f} s after {s['report_since']}")
            if "within_s_since" in s:
                mark, bound = s["within_s_since"]
                took = last - self.marks[mark]
                assert took <= bound, f"{s['expect']} came {took:.2f} s after {mark}, more than {bound} s"
        elif "no_more" in s:
            deadline = time.monotonic() + s["for_s"]
            with self.cond:
                while True:
                    got, _ = self.count(s["no_more"], driver, None)
                    assert got <= s["count"], f"{got} × {s['no_more']} from {driver}, expected at most {s['count']}"
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self.cond.wait(timeout=left)
        elif "expect_sequence" in s:
            want = s["expect_sequence"]
            self.wait(s["among"], len(want), driver)
            got = self.matching(s["among"], driver)
            for i, (pattern, event) in enumerate(zip(want, got)):
                assert matches(event, pattern), f"event {i} of {s['among']} is {event}, expected {pattern}; all: {got}"
            if s.get("exactly"):
                assert len(got) == len(want), f"{len(got)} × {s['among']}, expected exactly {len(want)}: {got}"
        elif "increasing" in s:
            keys = [tuple(e.get(f) for f in s["fields"]) for e in self.matching(s["increasing"], driver)]
            assert all(a < b for a, b in zip(keys, keys[1:])), f"{s['fields']} of {s['increasing']} not strictly increasing: {keys}"
        elif "finish_started" in s:
            started = self.matching({**s["finish_started"], "event": "started"}, driver)
            assert started, f"no started event matches {s['finish_started']}"
            self.drivers[driver].send({"cmd": "finish", "id": started[0]["id"], "name": started[0]["name"]})
        elif "set_group_limits" in s:
            self.set_group_limits(s["set_group_limits"])
        elif "set_limits" in s:
            self.set_limits(s["set_limits"])
        elif "until_state" in s:
            self.until_state(s["until_state"])
        elif "auto_finish" in s:
            with self.cond:
                self.rules.append({"kind": "auto_finish", "id": s["auto_finish"]})
        elif "invariant" in s:
            with self.cond:
                self.rules.append({"kind": "invariant", "id": s["invariant"]["id"], "max": s["invariant"]["max_running"],
                                   "running": 0})
        elif "fault" in s:
            fault = s["fault"]
            if fault == "kill_driver":
                d = self.drivers.pop(driver)
                d.proc.send_signal(signal.SIGKILL)
                d.proc.wait()
            elif fault == "freeze_baton":
                self.baton.proc.send_signal(signal.SIGSTOP)
            elif fault == "thaw_baton":
                self.baton.proc.send_signal(signal.SIGCONT)
            else:
                raise ValueError(fault)
        elif "driver" in s:
            self.start_driver(s["driver"])
        elif "mark" in s:
            self.marks[s["mark"]] = time.monotonic()
        elif "check" in s:
            # Baton's state converges (a `finished` event comes before its completion): the
            # check holds within the timeout or fails with its last complaint.
            deadline = time.monotonic() + TIMEOUT_S
            while True:
                try:
                    self.check(s["check"])
                    break
                except AssertionError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
        elif "register_direct" in s:
            self.register_direct(s["register_direct"])
        elif "cancel_run" in s:
            self.cancel_run(s["cancel_run"])
        elif "end_lease" in s:
            self.end_lease(s["end_lease"])
        else:
            raise ValueError(f"unknown step {s}")

    def close(self) -> None:
        self.baton.proc.send_signal(signal.SIGCONT)
        for d in self.drivers.values():
            d.close()
        self.baton.stop()

    def diagnostics(self) -> str:
        tail = [f"{d}: {e}" for _, d, e in self.events[-40:]]
        errs = [f"--- driver {d.name} stderr:\n{d.error_output()}" for d in self.drivers.values()]
        return "\n".join(["events (last 40):", *tail, *errs, "--- baton:", self.baton.logs()])


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
@pytest.mark.parametrize("language", SELECTED)
def test_scenario(language: str, scenario: dict) -> None:
    run = Run(language, scenario)
    try:
        for i, s in enumerate(scenario["steps"]):
            try:
                run.step(s)
            except AssertionError as e:
                raise AssertionError(f"step {i} {s}: {e}\n{run.diagnostics()}") from None
        with run.cond:
            assert not run.failures, f"{run.failures}\n{run.diagnostics()}"
    finally:
        run.close()
    for line in run.report:
        print(f"conformance {language} {scenario['name']}: {line}")

"""A live Baton for the tests: target/debug/baton (or $TEST_BATON_BIN) with its own embedded
redis-server in a temporary data dir, on free loopback ports; stopped with SIGTERM after."""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]


def free_ports() -> tuple[int, int]:
    """Two distinct free loopback ports: both sockets are open at once, so the kernel cannot
    hand out the same port twice."""
    with socket.socket() as a, socket.socket() as b:
        a.bind(("127.0.0.1", 0))
        b.bind(("127.0.0.1", 0))
        return a.getsockname()[1], b.getsockname()[1]


class BatonServer:
    def __init__(self, env: dict | None = None):
        self.binary = os.environ.get("TEST_BATON_BIN") or str(REPO / "target" / "debug" / "baton")
        if not os.path.exists(self.binary):
            raise RuntimeError(f"{self.binary} is missing: build it with `cargo build --bin baton`")
        self.env = {**os.environ, **(env or {})}
        self.data_dir = tempfile.mkdtemp(prefix="baton-py-")
        self.port, self.metrics_port = free_ports()
        self.addr = f"127.0.0.1:{self.port}"
        self.log = open(os.path.join(self.data_dir, "baton.log"), "ab")
        self._spawn()

    def _spawn(self) -> None:
        self.proc = subprocess.Popen(
            [self.binary, "serve", "--listen", self.addr, "--metrics-listen", f"127.0.0.1:{self.metrics_port}",
             "--data-dir", self.data_dir],
            stdout=self.log, stderr=subprocess.STDOUT, env=self.env,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"baton exited with {self.proc.returncode}: {self.logs()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("baton did not start listening within 30 s")

    def _terminate(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def restart(self) -> None:
        """SIGTERM (streams end cleanly, long polls answer), then the same binary again on the
        same port and data dir: what was in Redis is still there."""
        self._terminate()
        self._spawn()

    def logs(self) -> str:
        self.log.flush()
        return pathlib.Path(self.data_dir, "baton.log").read_text(errors="replace")[-4000:]

    def completed(self, queue: str) -> dict:
        """baton_agents_completed_total for `queue`, by outcome."""
        text = urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5).read().decode()
        counts = {}
        for line in text.splitlines():
            if line.startswith("baton_agents_completed_total{"):
                labels = dict(re.findall(r'(\w+)="([^"]*)"', line))
                if labels.get("queue") == queue:
                    counts[labels["outcome"]] = int(float(line.rsplit(" ", 1)[1]))
        return counts

    def stop(self) -> None:
        self._terminate()
        self.log.close()
        shutil.rmtree(self.data_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def baton_server():
    server = BatonServer()
    yield server
    server.stop()


#: For the claim and subscriber tests: unacked messages come back after 0.5 s, a pool's line
#: holds one waiting claim, and a full line hints a 250 ms pushback.
QUICK_ENV = {
    "BATON_SCHEDULE__ACK_TIMEOUT_MS": "500",
    "BATON_POOL__MAX_LINE": "1",
    "BATON_POOL__FULL_LINE_PUSHBACK_MS": "250",
}


@pytest.fixture(scope="session")
def quick_baton():
    server = BatonServer(QUICK_ENV)
    yield server
    server.stop()


@pytest.fixture
def own_baton():
    """A Baton of the test's own, which it may restart."""
    server = BatonServer(QUICK_ENV)
    yield server
    server.stop()

"""Shared by the cross-language and tools tests: a live Baton, and worker processes of every
language that print the example workers' JSON lines."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
CLIENTS = REPO / "clients"
TOOLS_BIN = CLIENTS / ".tools" / "bin"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class BatonServer:
    """target/debug/baton (or $TEST_BATON_BIN) with its own embedded redis-server in a temp dir.
    With `secure`: TLS, mutual TLS and an admin API token, from `baton dev-certs` and
    `baton token` (`ca`, `client_cert`, `client_key`, `token`)."""

    def __init__(self, env: dict | None = None, secure: bool = False):
        binary = os.environ.get("TEST_BATON_BIN") or str(REPO / "target" / "debug" / "baton")
        if not os.path.exists(binary):
            raise RuntimeError(f"{binary} is missing: build it with `cargo build --bin baton`")
        self.data_dir = tempfile.mkdtemp(prefix="baton-crosslang-")
        self.port = free_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.secure = secure
        env = {**os.environ, **(env or {})}
        if secure:
            certs = pathlib.Path(self.data_dir, "certs")
            subprocess.run([binary, "dev-certs", "--dir", str(certs)], check=True, capture_output=True)
            made = subprocess.run([binary, "token", "--name", "crosslang", "--role", "admin"], check=True,
                                  capture_output=True, text=True).stdout.splitlines()
            self.token = made[0].strip()
            tokens = certs / "crosslang-tokens.toml"
            tokens.write_text("\n".join(made[1:]) + "\n")
            self.ca, self.client_cert, self.client_key = certs / "ca.pem", certs / "client.pem", certs / "client.key"
            env.update({
                "BATON_TLS__CERT_FILE": str(certs / "server.pem"),
                "BATON_TLS__KEY_FILE": str(certs / "server.key"),
                "BATON_TLS__CLIENT_CA_FILE": str(self.ca),
                "BATON_AUTH__TOKENS_FILE": str(tokens),
            })
        self.log = open(os.path.join(self.data_dir, "baton.log"), "wb")
        self.proc = subprocess.Popen(
            [binary, "serve", "--listen", self.addr, "--metrics-listen", "", "--data-dir", self.data_dir],
            stdout=self.log, stderr=subprocess.STDOUT, env=env,
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

    def channel(self):
        """A synchronous grpc channel to this Baton (with TLS, the client certificate and the
        token when `secure`)."""
        import grpc
        if not self.secure:
            return grpc.insecure_channel(self.addr)
        creds = grpc.composite_channel_credentials(
            grpc.ssl_channel_credentials(self.ca.read_bytes(), self.client_key.read_bytes(),
                                         self.client_cert.read_bytes()),
            grpc.access_token_call_credentials(self.token))
        return grpc.secure_channel(self.addr, creds)

    def worker_flags(self) -> list[str]:
        """The example workers' connection flags for this Baton."""
        if not self.secure:
            return []
        return ["--ca-file", str(self.ca), "--cert-file", str(self.client_cert), "--key-file", str(self.client_key),
                "--token", self.token]

    def logs(self) -> str:
        self.log.flush()
        return pathlib.Path(self.data_dir, "baton.log").read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.data_dir, ignore_errors=True)


def java_classpath() -> str:
    """target/classes, target/test-classes (the example) and the dependencies, as built by
    `scripts/clients test` (clients/.tools/java-classpath.txt)."""
    deps = (CLIENTS / ".tools" / "java-classpath.txt").read_text().strip()
    java = CLIENTS / "java" / "target"
    return os.pathsep.join([str(java / "classes"), str(java / "test-classes"), deps])


def worker_command(language: str, addr: str, queue: str, worker_id: str, *, max_leases: int, work_ms: int,
                   heartbeat_ms: int, connection: list[str] | None = None) -> list[str]:
    """The example worker of `language`; all take the Rust baton-worker's flags, and the same
    connection flags (`BatonServer.worker_flags`)."""
    connection = connection or []
    flags = ["--addr", addr, "--queue", queue, "--worker-id", worker_id, "--max-leases", str(max_leases),
             "--work-ms", str(work_ms), "--heartbeat-ms", str(heartbeat_ms), *connection]
    if language == "rust":
        binary = os.environ.get("TEST_BATON_WORKER_BIN") or str(REPO / "target" / "debug" / "baton-worker")
        scheme = "https" if connection else "http"
        return [binary, *flags[:1], f"{scheme}://{addr}", *flags[2:]]
    if language == "python":
        python = CLIENTS / ".tools" / "py" / "bin" / "python"
        return [str(python), str(CLIENTS / "python" / "examples" / "worker.py"), *flags]
    if language == "typescript":
        return ["node", str(CLIENTS / "typescript" / "dist" / "examples" / "worker.js"), *flags]
    if language == "go":
        return [str(TOOLS_BIN / "baton-go-example-worker"), *flags]
    if language == "java":
        return ["java", "-Xss512k", "-XX:TieredStopAtLevel=1", "-cp", java_classpath(),
                "dev.baton.examples.ExampleWorker", *flags]
    raise ValueError(language)


class WorkerProcess:
    """A worker process whose JSON lines are collected with the time each was read."""

    def __init__(self, language: str, worker_id: str, command: list[str]):
        self.language = language
        self.worker_id = worker_id
        self.events: list[dict] = []
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self.stderr, text=True, bufsize=1)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            seen = int(time.time() * 1000)
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            event["worker"] = self.worker_id
            event["language"] = self.language
            # Our example workers stamp events themselves; the Rust one does not: use read time.
            event.setdefault("t", seen)
            self.events.append(event)

    def error_output(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")[-3000:]

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self._reader.join(timeout=5)

    def terminate(self, timeout: float = 20) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._reader.join(timeout=5)
        return code

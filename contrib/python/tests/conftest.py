"""Fixtures: the real dshq binary (``DSHQ_BIN``, set by the Rust driver tests/it/clients.rs)
and real daemons on temporary state roots. Nothing is mocked: the package talks to the
daemon through its directories or its HTTP API, and a person answers with the real CLI."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import pytest

DEADLINE = 30.0


def wait_until(cond: Callable[[], Any], limit: float = DEADLINE, what: str = "condition") -> Any:
    """Poll ``cond`` until it returns something truthy, for at most ``limit`` seconds."""
    start = time.monotonic()
    pause = 0.005
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() - start > limit:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def dshq_bin() -> str:
    path = os.environ.get("DSHQ_BIN")
    if not path or not os.path.exists(path):
        pytest.fail("DSHQ_BIN must name the built dshq binary (run these through cargo test --test it clients)")
    return path


class Dshq:
    """A state root with the real CLI and, once started, the real daemon."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.root = str(base / "root")
        self.daemon: Optional[subprocess.Popen] = None
        self.log = base / "daemon.log"
        self.url: Optional[str] = None

    def env(self, **extra: str) -> Dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DSHQ_")}
        env.update({"DSHQ_ROOT": self.root, "RUST_LOG": "warn", "USER": "tester"})
        env.update(extra)
        return env

    def run(self, *args: str, check: bool = True, stdin: Optional[str] = None) -> subprocess.CompletedProcess:
        p = subprocess.run(
            [dshq_bin(), *args],
            env=self.env(),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=DEADLINE,
        )
        if check and p.returncode != 0:
            raise AssertionError("dshq %s failed (%d): %s %s" % (" ".join(args), p.returncode, p.stdout, p.stderr))
        return p

    def json(self, *args: str) -> Any:
        return json.loads(self.run("--json", *args).stdout)

    def start(self, *args: str) -> "Dshq":
        """Start ``dshq daemon ARGS`` and wait until it runs (and, with --listen, its URL)."""
        self.daemon = subprocess.Popen(
            [dshq_bin(), "daemon", *args],
            env=self.env(RUST_LOG="info"),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=open(self.log, "w"),
        )
        wait_until(lambda: "daemon started" in self.log.read_text(), what="the daemon to start")
        if "--listen" in args:
            m = wait_until(lambda: re.search(r"listening on (\S+)", self.log.read_text()), what="its address")
            self.url = m.group(1) if m.group(1).startswith("http") else "http://" + m.group(1)
        return self

    def stop(self) -> None:
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
            try:
                self.daemon.wait(DEADLINE)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                self.daemon.wait()
        self.daemon = None

    def status(self, request_id: str) -> Optional[str]:
        """The request's status, or None while it is not accepted yet."""
        p = self.run("--json", "show", request_id, check=False)
        if p.returncode != 0:
            return None
        return json.loads(p.stdout).get("status")

    def accepted(self, request_id: str) -> None:
        wait_until(lambda: self.status(request_id) is not None, what="request %s to be accepted" % request_id)

    def answer(self, request_id: str, *flags: str) -> None:
        """Answer as a reviewer would, with ``dshq answer ID FLAGS``, once it is accepted."""
        self.accepted(request_id)
        self.run("answer", request_id, *flags)

    def edit(self, request_id: str, old: str, new: str) -> str:
        """Approve a plan review as edited, as a reviewer would: the plan as shown, with
        ``old`` replaced by ``new`` (``dshq answer ID --edit -``). Returns the edited plan."""
        self.accepted(request_id)
        shown = self.json("show", request_id)["questions"][0]["detail"]
        assert old in shown, shown
        edited = shown.replace(old, new)
        self.run("answer", request_id, "--edit", "-", stdin=edited)
        return edited

    def token(self, role: str, name: str) -> str:
        return self.json("token", "create", "--role", role, "--name", name)["token"]

    def requests(self) -> List[Dict[str, Any]]:
        """Every request in the store, finished ones included (``list`` alone shows the open)."""
        return self.json("list", "--all")


@pytest.fixture
def host(tmp_path: Path):
    """A fresh root with a running daemon (the file transport's counterpart)."""
    d = Dshq(tmp_path).start()
    yield d
    d.stop()


@pytest.fixture
def host_http(tmp_path: Path):
    """A fresh root with a daemon serving the HTTP API on a free loopback port."""
    d = Dshq(tmp_path).start("--listen", "0")
    yield d
    d.stop()


@pytest.fixture
def python() -> str:
    """The Python running the tests (the project's venv), for the agent subprocesses."""
    return sys.executable


class Agent:
    """An agent process of the adapter tests: started with its arguments, it prints one
    JSON line when it pauses (then stays alive to be killed), or when it is done."""

    def __init__(self, python: str, script: str, *args: str, env: Dict[str, str]) -> None:
        self.proc = subprocess.Popen([python, script, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def line(self) -> Dict[str, Any]:
        """The first JSON line it prints (a framework may print its own lines first)."""
        while True:
            out = self.proc.stdout.readline()
            if not out:
                self.proc.wait(DEADLINE)
                raise AssertionError("the agent printed nothing: %s" % self.proc.stderr.read())
            if out.startswith("{"):
                return json.loads(out)

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        assert self.proc.wait(DEADLINE) == -signal.SIGKILL

    def finish(self) -> Dict[str, Any]:
        out, err = self.proc.communicate(timeout=DEADLINE * 2)
        assert self.proc.returncode == 0, err
        return json.loads(out.strip().splitlines()[-1])

"""A real Redis Cluster for the store tests: three masters (and, if asked, a replica of
each) on free loopback ports, joined by ``redis-cli --cluster create``, stopped by pid.

Debian's ``redis-server`` and ``redis-cli`` (``.ci/run`` installs them). Where either
is missing the tests skip, except in CI, where they fail (``require_redis_server``).
Every node gets two free ports of its own (the client port and ``--cluster-port``,
the bus), its files in the test's folder, and a node timeout of 1 s, so a killed
master's replica is promoted in a few seconds; nothing waits a fixed time: each
step waits until the nodes say so (``cluster_state:ok``, a replica now a master).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from redis_server import RedisServer, free_port, require_redis_server

REDIS_CLI = shutil.which("redis-cli") or (
    "/usr/bin/redis-cli" if os.path.exists("/usr/bin/redis-cli") else None
)
DEADLINE = 120  # a hang guard only: a loaded machine starts nodes slowly


def require_redis_cli() -> str:
    require_redis_server()
    if REDIS_CLI is None:
        message = "redis-cli is not installed (apt-get install -y redis-tools)"
        if os.environ.get("CI"):
            pytest.fail(message + " (CI is set: these tests must not skip)")
        pytest.skip(message)
    return REDIS_CLI


def _wait(condition, failure: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(failure)
        time.sleep(0.02)


class ClusterNode(RedisServer):
    """One cluster-enabled redis-server, its files in ``folder``."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.bus = free_port()
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    def start(self) -> ClusterNode:
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1"]
            + ["--cluster-enabled", "yes", "--cluster-port", str(self.bus)]
            + ["--cluster-config-file", str(self.folder / "nodes.conf")]
            + ["--cluster-node-timeout", "1000", "--dir", str(self.folder)]
            # a replica syncs at once, and fails over however long its link was down
            + ["--repl-diskless-sync-delay", "0", "--cluster-replica-validity-factor", "0"]
            + ["--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

        def answers() -> bool:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.process.returncode}")
            try:
                return self.command("PING") == "PONG"
            except OSError:
                return False

        _wait(answers, "a cluster node did not answer PING")
        return self

    def info(self, section: str) -> dict[str, str]:
        """``CLUSTER INFO`` or ``INFO <section>`` as fields (``command`` reads bulk text)."""
        words = ("CLUSTER", "INFO") if section == "cluster" else ("INFO", section)
        text = self.command(*words)
        return dict(
            line.split(":", 1) for line in text.splitlines() if ":" in line and line[0] != "#"
        )


class RedisCluster:
    """``masters`` masters, each with ``replicas`` replicas, all slots assigned."""

    def __init__(self, folder: Path, masters: int = 3, replicas: int = 0) -> None:
        self.cli = require_redis_cli()
        self.replicas = replicas
        self.nodes = [ClusterNode(folder / f"node-{k}") for k in range(masters * (1 + replicas))]
        self.url = f"redis+cluster://127.0.0.1:{self.nodes[0].port}/0"

    def start(self) -> RedisCluster:
        for node in self.nodes:
            node.start()
        addresses = [f"127.0.0.1:{node.port}" for node in self.nodes]
        done = subprocess.run(
            [self.cli, "--cluster", "create", *addresses]
            + ["--cluster-replicas", str(self.replicas), "--cluster-yes"],
            capture_output=True,
            timeout=DEADLINE,
        )
        if done.returncode != 0:
            self.stop()
            raise RuntimeError(f"redis-cli --cluster create failed: {done.stdout!r}")
        self.wait_ok()
        return self

    def wait_ok(self) -> None:
        """Until every live node says ``cluster_state:ok`` and knows every node, and
        every replica's link to its master is up (synced: it can take over)."""

        def ok() -> bool:
            for node in self.live():
                info = node.info("cluster")
                if info.get("cluster_state") != "ok":
                    return False
                if int(info.get("cluster_known_nodes", 0)) != len(self.nodes):
                    return False
                replication = node.info("replication")
                if replication.get("role") == "slave":
                    if replication.get("master_link_status") != "up":
                        return False
            return True

        _wait(ok, "the cluster did not reach cluster_state:ok")

    def masters(self) -> list[ClusterNode]:
        return [node for node in self.live() if node.info("replication").get("role") == "master"]

    def flush(self) -> None:
        for node in self.masters():
            node.command("FLUSHALL")

    def live(self) -> list[ClusterNode]:
        return [node for node in self.nodes if node.process and node.process.poll() is None]

    def master_of(self, key: str) -> ClusterNode:
        """The master that holds ``key``'s slot, as every live node sees it now (a
        RuntimeError while they disagree or none holds it)."""
        slot = int(self.live()[0].command("CLUSTER", "KEYSLOT", key))
        owners = {_owner(node.command("CLUSTER", "NODES"), slot) for node in self.live()}
        ports = {node.port: node for node in self.live()}
        if len(owners) != 1 or next(iter(owners)) not in ports:
            raise RuntimeError(f"slot {slot}: owners {owners}")
        return ports[owners.pop()]

    def kill(self, node: ClusterNode) -> None:
        """SIGKILL by pid: a master's crash."""
        node.kill()

    def wait_promoted(self, dead: ClusterNode, key: str) -> ClusterNode:
        """Until a live master holds ``key``'s slot (a replica of ``dead`` promoted)."""
        found: list[ClusterNode] = []

        def promoted() -> bool:
            try:
                node = self.master_of(key)
            except (RuntimeError, OSError):
                return False
            found.append(node)
            return node is not dead

        _wait(promoted, "no replica was promoted")
        return found[-1]

    def stop(self) -> None:
        for node in self.nodes:
            if node.process is not None and node.process.poll() is None:
                os.kill(node.process.pid, signal.SIGTERM)
        for node in self.nodes:
            if node.process is not None:
                try:
                    node.process.wait(10)
                except subprocess.TimeoutExpired:
                    node.kill()


def _owner(nodes: str, slot: int) -> int | None:
    """The port of the master that ``CLUSTER NODES`` text gives ``slot`` to (not failed)."""
    for line in nodes.splitlines():
        fields = line.split()
        if len(fields) < 8 or "master" not in fields[2] or "fail" in fields[2]:
            continue
        for served in fields[8:]:
            if served.startswith("["):
                continue  # a slot being migrated
            low, _, high = served.partition("-")
            if int(low) <= slot <= int(high or low):
                return int(fields[1].split("@")[0].rpartition(":")[2])
    return None

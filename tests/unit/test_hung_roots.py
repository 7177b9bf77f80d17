"""The roots kubegc opens on the host before it walks (podLogsDir, `/var/log/containers`) on a
mount that never answers (tests/unit/hangfs.py: a FUSE filesystem whose daemon never replies,
as a stale NFS or FUSE mount behaves): every command still ends within about `--timeout`, says
which root did not answer, removes nothing there, and the process exits.

Each run is a real `kubegc` process with a hard deadline, so a run that would hang fails the
test instead of hanging the suite."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.faultcri import FaultCri
from tests.unit.hangfs import hung_mount, needs_fuse
from tests.unit.test_faults import NOW, node_inventory

#: Each command must end within `--timeout` (1 s) times this many walks, plus process start
#: and exit: a root that hangs costs one timeout, never one per log directory.
DEADLINE = 12.0


@pytest.fixture
def node() -> Iterator[tuple[FaultCri, Path]]:
    """A fake runtime with dead containers to collect, and a host root with the kubelet's
    log layout for them (podLogsDir `/var/log/pods`, links in `/var/log/containers`)."""
    with tempfile.TemporaryDirectory(prefix="kgc-") as d:
        host = Path(d) / "host"
        inv = node_inventory()
        for c in inv.containers.values():
            labels = c.labels
            folder = (
                host
                / "var/log/pods"
                / (
                    f"{labels['io.kubernetes.pod.namespace']}_{labels['io.kubernetes.pod.name']}_"
                    f"{labels['io.kubernetes.pod.uid']}"
                )
                / labels["io.kubernetes.container.name"]
            )
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{c.metadata.attempt}.log").write_bytes(b"x" * 1000)
            inv.log_paths[c.id] = f"/{folder.relative_to(host)}/{c.metadata.attempt}.log"
        (host / "var/log/containers").mkdir(parents=True)
        (host / "var/lib/kubelet/pods").mkdir(parents=True)
        (host / "var/lib/containerd").mkdir(parents=True)
        with FaultCri(Path(d) / "cri.sock", inv) as cri:
            yield cri, host


def run(cri: FaultCri, host: Path, *args: str) -> tuple[int, str, str, float]:
    """`kubegc --timeout 1s ARGS` on the node: (exit code, stdout, stderr, seconds); the test
    fails when it has not ended within `DEADLINE` (it is killed)."""
    argv = [
        sys.executable, "-m", "kubegc_cli", "--timeout", "1s", "--host-root", str(host),
        "-r", cri.endpoint, "--state-dir", str(host.parent / "state"), "--pod-source", "none",
        "--now", NOW, *args,
    ]  # fmt: skip
    began = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"kubegc {' '.join(args)} still running after {DEADLINE} s: {err[-600:]}")
    return proc.returncode, out, err, time.monotonic() - began


#: (command, hung root) -> (exit code, what the run says about it). A hung podLogsDir or
#: link directory is a host source kubegc cannot read: `gc logs`/`gc all` exit 3 as for an
#: unreadable pod log root, `gc containers --yes` keeps every container whose log it cannot
#: remove (as the kubelet does), the dry run shows its plan with the logs' sizes unknown, and
#: `df` and `residue scan` say which directory did not answer.
PODS = "var/log/pods"
LINKS = "var/log/containers"
KUBELET = "var/lib/kubelet"  # (the kubelet config file is in it)
POD_DIRS = "var/lib/kubelet/pods"
CONFIG = "/host/var/lib/kubelet/config.yaml: no answer within 1s (a hung mount?)"
HUNG_PODS = "podLogsDir /var/log/pods gave no answer within 1s (a hung mount?)"
HUNG_LINKS = "/var/log/containers gave no answer within 1s (a hung mount?)"
NO_ROOT = "cannot read pod log root /var/log/pods: no answer within 1s (a hung mount?)"
NO_LINKS = f"cannot read the legacy log links: {HUNG_LINKS}"
LOG_0 = "/var/log/pods/default_pod-0_uid-0/job/0.log"
YES = ("gc", "containers", "--yes", "-o", "json")
EXPECTED = {
    (("gc", "containers", "--dry-run"), PODS): (0, HUNG_PODS),
    (YES, PODS): (1, f"cannot remove log {LOG_0}: {HUNG_PODS}"),
    (("gc", "logs", "--dry-run"), PODS): (3, NO_ROOT),
    (("gc", "logs", "--yes"), PODS): (3, NO_ROOT),
    (("gc", "all", "--dry-run"), PODS): (3, NO_ROOT),
    (("df",), PODS): (0, "cannot read the pod log root /var/log/pods: no answer within 1s"),
    (("residue", "scan"), PODS): (0, f"{HUNG_PODS}: nothing below it was looked at"),
    (("gc", "containers", "--dry-run"), LINKS): (0, "10 container(s) to remove"),
    (YES, LINKS): (1, f"cannot remove the legacy link of the container: {HUNG_LINKS}"),
    (("gc", "logs", "--dry-run"), LINKS): (3, NO_LINKS),
    (("gc", "logs", "--yes"), LINKS): (3, NO_LINKS),
    (("gc", "all", "--dry-run"), LINKS): (3, NO_LINKS),
    (("df",), LINKS): (0, "reclaimable"),
    (("residue", "scan"), LINKS): (0, f"legacy log link directory {HUNG_LINKS}: nothing below"),
    (("gc", "containers", "--dry-run"), KUBELET): (2, CONFIG),
    (("df",), KUBELET): (2, CONFIG),
    (("df",), POD_DIRS): (0, f"cannot read the pods directory /{POD_DIRS}: no answer within 1s"),
    (("residue", "scan"), POD_DIRS): (0, f"pod directory /{POD_DIRS} gave no answer within 1s"),
}


def _id(value: object) -> str:
    if isinstance(value, tuple):
        return "-".join(x.strip("-") for x in value)
    return str(value).replace("/", "-")


@needs_fuse
@pytest.mark.parametrize(
    ("args", "root"),
    list(EXPECTED),
    ids=_id,
)
def test_a_hung_log_root_costs_one_timeout_and_the_run_exits(
    node: tuple[FaultCri, Path], args: tuple[str, ...], root: str
) -> None:
    """The command ends within `--timeout` plus process start and exit (never once per log
    directory, never waiting at exit for the call that hangs), says which directory did not
    answer, removes nothing (no container whose log or link stays, no log file) and exits
    with its code; no traceback."""
    cri, host = node
    logs = sorted(p for p in (host / PODS).rglob("*.log"))
    with hung_mount(host / root):
        code, out, err, took = run(cri, host, *args)
    print(f"{' '.join(args)} ({root}): exit {code} in {took:.1f}s")
    want_code, says = EXPECTED[(args, root)]
    assert "Traceback" not in err
    assert took < 6, f"took {took:.1f}s"
    assert code == want_code, err
    assert says in " ".join((out + err).split()), out + err
    assert cri.removed == []
    assert sorted(p for p in (host / PODS).rglob("*.log")) == logs and len(logs) == 14


@needs_fuse
@pytest.mark.parametrize("args", [("evict", "check"), ("df",)], ids=_id)
def test_a_kubelet_root_that_never_answers_to_statfs_costs_one_timeout(
    node: tuple[FaultCri, Path], args: tuple[str, ...]
) -> None:
    """nodefs is statvfs'd at the kubelet root: on a mount that never answers (the kubelet
    config read from elsewhere), `evict check` and `df` end after one `--timeout`, exit 3 (an
    eviction signal, the node filesystem, that cannot be read), naming it; never a hang."""
    cri, host = node
    config = host.parent / "kubelet-config.yaml"
    config.write_text("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n")
    with hung_mount(host / KUBELET):
        code, out, err, took = run(cri, host, "--kubelet-config", str(config), *args)
    assert "Traceback" not in err
    assert took < 6, f"took {took:.1f}s"
    assert code == 3, err
    said = " ".join((out + err).split())  # (a table may wrap the line)
    assert f"{KUBELET}" in said and "no answer within 1s (a hung mount?)" in said, out + err

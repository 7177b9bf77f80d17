"""What the kubelet's memory signals leave out, read from the host's files: swap and pressure
stall information (PSI). Shown beside the signals, never used as one.

- Swap: the node's from `/proc/meminfo` (`SwapTotal − SwapFree`), a pod's from its cgroup
  (v2 `memory.swap.current`; v1 `memory.memsw.usage_in_bytes − memory.usage_in_bytes`, where
  the kernel accounts swap). The kubelet's `memory.available` is MemTotal minus the root
  cgroup's working set: RAM only, whatever is swapped out (kubelet eviction: the summary's
  `WorkingSetBytes`; NodeSwap, KEP-2400, adds no eviction signal for swap).
- PSI (`/proc/pressure/{cpu,memory,io}`, and the kubepods cgroup's `memory.pressure` and
  `io.pressure` on cgroup v2): the share of wall time in which some (or all) tasks stalled on
  the resource, averaged over 10 and 60 seconds (`avg10`, `avg60`, percent). The kubelet's
  eviction manager does not read it (its signals are the thresholds' only).

Figures are bytes and percent. A file that is absent (a kernel without PSI, a host without
swap accounting) gives None; one that cannot be read or parsed raises `SignalUnavailable`
naming the file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kubegc_cli.core.errors import SignalUnavailable
from kubegc_cli.core.units import format_bytes
from kubegc_cli.node.host.cgroups import CgroupLayout, read_int
from kubegc_cli.node.host.logs import on_host

PRESSURE_DIR = "/proc/pressure"
NODE_RESOURCES = ("cpu", "memory", "io")
POD_RESOURCES = ("memory", "io")


@dataclass(frozen=True, slots=True)
class Stall:
    """One PSI file: `resource` (cpu, memory, io), `scope` ("node", or the cgroup's host
    path), and the `some` and `full` averages over 10 and 60 seconds, in percent (`full`
    None where the file has no such line: the node's cpu before Linux 5.13)."""

    resource: str
    scope: str
    some_avg10: float
    some_avg60: float
    full_avg10: float | None = None
    full_avg60: float | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "resource": self.resource,
            "scope": self.scope,
            "some_avg10": self.some_avg10,
            "some_avg60": self.some_avg60,
            "full_avg10": self.full_avg10,
            "full_avg60": self.full_avg60,
        }


def parse_psi(local: str, text: str, resource: str, scope: str) -> Stall:
    """A PSI file's text (`some avg10=0.12 avg60=0.05 avg300=0.00 total=123` and perhaps a
    `full ...` line) → `Stall`. Raises `SignalUnavailable` naming the file for any other
    text (no `some` line, an average that is not a number from 0 to 100)."""
    lines: dict[str, tuple[float, float]] = {}
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        if not kind:
            continue
        fields = dict(part.partition("=")[::2] for part in rest.split())
        try:
            avg10, avg60 = float(fields["avg10"]), float(fields["avg60"])
        except (KeyError, ValueError):
            raise SignalUnavailable(
                f"cannot parse {local}: {line[:60]!r} is not 'some|full avg10=N avg60=N ...'"
            ) from None
        if kind not in ("some", "full") or not (0 <= avg10 <= 100 and 0 <= avg60 <= 100):
            raise SignalUnavailable(f"cannot parse {local}: {line[:60]!r}")
        lines[kind] = (avg10, avg60)
    if "some" not in lines:
        raise SignalUnavailable(f"cannot parse {local}: no 'some' line")
    full = lines.get("full")
    return Stall(resource, scope, *lines["some"], *(full if full else (None, None)))


def read_psi(local: str, resource: str, scope: str) -> Stall | None:
    """The PSI file at local path `local`, or None when it does not exist or the kernel
    does not support it (`EOPNOTSUPP` with `psi=0`). Raises `SignalUnavailable` naming the
    file when it cannot be read otherwise or parsed."""
    try:
        with open(local, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == getattr(os, "EOPNOTSUPP", 95):
            return None
        raise SignalUnavailable(f"cannot read {local}: {exc.strerror or exc}") from None
    return parse_psi(local, text, resource, scope)


def stalls(host_root: Path, layout: CgroupLayout) -> list[Stall]:
    """The node's PSI (cpu, memory, io) and, on cgroup v2, the kubepods cgroup's (memory,
    io), those the host has. Raises `SignalUnavailable` as `read_psi` does."""
    out = []
    for resource in NODE_RESOURCES:
        got = read_psi(on_host(host_root, f"{PRESSURE_DIR}/{resource}"), resource, "node")
        if got is not None:
            out.append(got)
    if layout.version == 2 and layout.pods_cgroup:
        for resource in POD_RESOURCES:
            local = on_host(host_root, f"{layout.pods_cgroup}/{resource}.pressure")
            got = read_psi(local, resource, layout.pods_cgroup)
            if got is not None:
                out.append(got)
    return out


@dataclass(frozen=True, slots=True)
class Swap:
    """The node's swap (`total`, `used`, bytes, from /proc/meminfo) and the pods' (`pods`,
    bytes; None where the cgroup does not account swap)."""

    total: int
    used: int
    pods: int | None = None

    def to_dict(self) -> dict[str, int | None]:
        return {"total": self.total, "used": self.used, "pods": self.pods}


def swapping(swap: Swap | None) -> bool:
    """Whether the node has swap (SwapTotal > 0): then the pods' swapped-out bytes, which no
    memory signal counts, are shown beside their working sets."""
    return swap is not None and swap.total > 0


def node_swap(meminfo: dict[str, int]) -> tuple[int, int]:
    """(SwapTotal, SwapTotal − SwapFree) in bytes from a read /proc/meminfo (0, 0 without
    the lines)."""
    total = meminfo.get("SwapTotal", 0)
    return total, max(0, total - meminfo.get("SwapFree", total))


def cgroup_swap(host_root: Path, layout: CgroupLayout, path: str) -> int | None:
    """Bytes of swap the cgroup at host path `path` uses: v2 `memory.swap.current`; v1
    `memory.memsw.usage_in_bytes − memory.usage_in_bytes`. None when the files are absent
    (swap not accounted: no swap controller, or v1 without `swapaccount=1`). Raises
    `SignalUnavailable` naming a file that exists but cannot be read or parsed."""
    if layout.version == 2:
        local = on_host(host_root, f"{path}/memory.swap.current")
        return read_int(local) if os.path.exists(local) else None
    memsw = on_host(host_root, f"{path}/memory.memsw.usage_in_bytes")
    if not os.path.exists(memsw):
        return None
    return max(0, read_int(memsw) - read_int(on_host(host_root, f"{path}/memory.usage_in_bytes")))


def swap_note(swap: Swap) -> str:
    """The line saying what swap is in use and that `memory.available` does not count it;
    "" without swap."""
    if swap.total <= 0:
        return ""
    pods = "" if swap.pods is None else f", {format_bytes(swap.pods)} of it by pods"
    return (
        f"swap: {format_bytes(swap.used)} of {format_bytes(swap.total)} in use{pods}; "
        "memory.available does not count swap (the kubelet's signal is RAM only)"
    )


def stall_note(found: list[Stall]) -> str:
    """One line with every PSI figure (`avg10/avg60` percent) and that the kubelet does not
    evict on them; "" when the host has none."""
    if not found:
        return ""
    parts = []
    for st in found:
        where = "" if st.scope == "node" else "kubepods "
        text = f"{where}{st.resource} some {st.some_avg10:g}/{st.some_avg60:g}%"
        if st.full_avg10 is not None:
            text += f" full {st.full_avg10:g}/{st.full_avg60:g}%"
        parts.append(text)
    return (
        f"pressure stall, avg10/avg60: {', '.join(parts)} (shown only: the kubelet does not "
        "evict on it)"
    )


CGROUP_V1_NOTE = (
    "cgroup v1: kubelets from 1.35 refuse to start on it unless their config sets "
    "failCgroupV1: false (the default became true in 1.35)"
)

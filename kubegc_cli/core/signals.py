"""An observed eviction signal: what `node.signals` reads and `policy.eviction` judges."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Observation:
    """One observed signal: `available` and `capacity` in bytes (or inodes, PIDs).

    `source` says where the figures came from (`statvfs /var/lib/kubelet`, `/proc/meminfo and
    the root cgroup`, ...).
    """

    signal: str
    available: int
    capacity: int
    source: str = ""

"""The fleet's vocabulary: what one node's agent reports (`NodeReport`, the status of its
`NodeGCReport`), and the names every part of the fleet form agrees on.

A `NodeGCReport` (group `kubegc.io`, version `v1alpha1`, plural `nodegcreports`, cluster
scoped) is named after its node and owned by the Node (an `ownerReference`), so it goes when
the Node goes. Its `status` is `NodeReport.to_status()`: plain JSON, camelCase keys, bytes as
integers, times as RFC 3339 strings, every list bounded (`TOP` items at most) so that a
report stays small whatever the node holds. The CRD's schema (`deploy/kubernetes/`) matches
these keys; a key added here is added there.

Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

GROUP = "kubegc.io"
VERSION = "v1alpha1"
KIND = "NodeGCReport"
PLURAL = "nodegcreports"
LEASE_PREFIX = "kubegc-apply-"
#: At most this many items in any list of a report (pods to evict first, ...).
TOP = 5
#: The longest strings a report holds (deploy/kubernetes/crd-nodegcreport.yaml's `maxLength`s,
#: which `to_status` cuts to, so that kubegc never writes what its CRD refuses): a name (a
#: signal, a category, a condition, a namespace, a plan), a pod name (a DNS subdomain), a
#: time or version, a threshold, free text (an error, why paused).
NAME_MAX, POD_NAME_MAX, STAMP_MAX, THRESHOLD_MAX, TEXT_MAX = 63, 253, 64, 256, 1024
#: The most items of each list and map of a report (the CRD's `maxItems`, `maxProperties`).
CATEGORIES_MAX, SIGNALS_MAX, CONDITIONS_MAX, PLANS_MAX, RESIDUE_MAX = 32, 32, 8, 16, 32


def cut(text: str, most: int) -> str:
    """`text` at most `most` characters long: cut, its last character `…` when cut."""
    return text if len(text) <= most else text[: most - 1] + "…"


#: A report's time (`observedAt`, `lastApply.at`) more than this many seconds ahead of the
#: reader's clock is not believed: clocks may run a little ahead, a time far in the future is
#: a broken clock or a forged report (any node's agent can write any report).
FUTURE_SKEW = 300


def lease_name(slot: int) -> str:
    """The name of apply slot `slot` (0-based): `kubegc-apply-<slot>`."""
    return f"{LEASE_PREFIX}{slot}"


@dataclass(frozen=True, slots=True)
class Category:
    """One `df` category on the node (a top-level `df` line key: images, writable-layers,
    container-logs, ...), summed over its filesystems: `bytes` used, `reclaimable` bytes a
    kubegc command frees. Bytes unknown (the runtime was not read) are None."""

    name: str
    bytes: int | None
    reclaimable: int | None

    def to_status(self) -> dict[str, Any]:
        return {
            "name": cut(self.name, NAME_MAX),
            "bytes": self.bytes,
            "reclaimableBytes": self.reclaimable,
        }

    @classmethod
    def from_status(cls, d: Mapping[str, Any]) -> Category:
        return cls(str(d.get("name", "")), _int(d.get("bytes")), _int(d.get("reclaimableBytes")))


@dataclass(frozen=True, slots=True)
class SignalMargin:
    """One eviction signal against its threshold: `available` and `threshold` in the signal's
    unit (bytes; inodes or PIDs for those signals), `margin` = available − threshold (negative
    when met, None when the signal could not be read), `met` after the eviction manager's
    memory across cycles (a soft threshold only after its grace period)."""

    signal: str
    threshold: str
    available: int | None
    margin: int | None
    met: bool
    hard: bool = True

    @property
    def relative(self) -> float | None:
        """The margin as a share of the threshold (available − margin, in the signal's own
        unit), so that a byte signal, an inode signal and a PID signal compare: −0.5 is half
        the threshold past it, 2.0 twice the threshold to spare. None when the signal was not
        read; ±inf for a threshold of 0."""
        if self.margin is None or self.available is None:
            return None
        threshold = self.available - self.margin
        if threshold <= 0:
            return math.inf if self.margin >= 0 else -math.inf
        return self.margin / threshold

    def to_status(self) -> dict[str, Any]:
        return {
            "signal": cut(self.signal, NAME_MAX),
            "threshold": cut(self.threshold, THRESHOLD_MAX),
            "available": self.available,
            "margin": self.margin,
            "met": self.met,
            "hard": self.hard,
        }

    @classmethod
    def from_status(cls, d: Mapping[str, Any]) -> SignalMargin:
        return cls(
            str(d.get("signal", "")),
            str(d.get("threshold", "")),
            _int(d.get("available")),
            _int(d.get("margin")),
            bool(d.get("met", False)),
            bool(d.get("hard", True)),
        )


@dataclass(frozen=True, slots=True)
class EvictCandidate:
    """A pod the kubelet would evict first for a met `signal` (kubelet eviction ranking)."""

    namespace: str
    name: str
    signal: str

    def to_status(self) -> dict[str, Any]:
        return {
            "namespace": cut(self.namespace, NAME_MAX),
            "name": cut(self.name, POD_NAME_MAX),
            "signal": cut(self.signal, NAME_MAX),
        }

    @classmethod
    def from_status(cls, d: Mapping[str, Any]) -> EvictCandidate:
        return cls(str(d.get("namespace", "")), str(d.get("name", "")), str(d.get("signal", "")))


@dataclass(frozen=True, slots=True)
class LastApply:
    """The agent's last apply on this node: when (RFC 3339), which plans (`gc containers`,
    ...), how many objects removed, bytes freed as measured (filesystem before/after, never
    negative), failures, and the first error ("" for none)."""

    at: str
    plans: tuple[str, ...]
    removed: int
    bytes_freed: int
    failures: int
    error: str = ""

    def to_status(self) -> dict[str, Any]:
        return {
            "at": cut(self.at, STAMP_MAX),
            "plans": [cut(p, NAME_MAX) for p in self.plans[:PLANS_MAX]],
            "removed": self.removed,
            "bytesFreed": self.bytes_freed,
            "failures": self.failures,
            "error": cut(self.error, TEXT_MAX),
        }

    @classmethod
    def from_status(cls, d: Mapping[str, Any]) -> LastApply:
        return cls(
            str(d.get("at", "")),
            tuple(str(p) for p in d.get("plans") or ()),
            _int(d.get("removed")) or 0,
            _int(d.get("bytesFreed")) or 0,
            _int(d.get("failures")) or 0,
            str(d.get("error") or ""),
        )


#: The longest `NodeReport.kubelet_config` written (a config file's path is cut there).
MAX_SOURCE = 256


@dataclass(frozen=True, slots=True)
class NodeReport:
    """One node's report: the status of its `NodeGCReport`.

    `observed_at` RFC 3339 (the cycle's observation); `mode` report or apply; `categories`
    the `df` categories; `reclaimable` their sum (bytes); `signals` every threshold's margin;
    `conditions` the pressure conditions held (DiskPressure, ...); `evict_first` at most `TOP`
    pods; `residue` finding counts by type; `last_apply`; `error` why the last cycle failed
    ("" when it did not); `paused` why the agent takes no apply slot now ("" when it may);
    `pod_source` where the cycle's pods came from (`kubelet`, `api`, `file`, `none`);
    `kubelet_config` where the kubelet configuration came from (`kubelet /configz`, a file,
    `defaults`).
    """

    node: str
    observed_at: str
    mode: str = "report"
    version: str = ""
    categories: tuple[Category, ...] = ()
    reclaimable: int = 0
    signals: tuple[SignalMargin, ...] = ()
    conditions: tuple[str, ...] = ()
    evict_first: tuple[EvictCandidate, ...] = ()
    residue: Mapping[str, int] = field(default_factory=dict)
    last_apply: LastApply | None = None
    error: str = ""
    paused: str = ""
    pod_source: str = ""
    kubelet_config: str = ""

    def nearest(self) -> SignalMargin | None:
        """The signal nearest to (or furthest past) its threshold, by margin relative to the
        threshold's own scale (`SignalMargin.relative`: bytes, inodes and PIDs compared as
        shares of their thresholds), met ones first."""
        read = [s for s in self.signals if s.relative is not None]
        if not read:
            return None
        return min(read, key=lambda s: (not s.met, s.relative or 0.0))

    def to_status(self) -> dict[str, Any]:
        """The CR's `status`: camelCase JSON, every list and string within the CRD's bounds
        (cut when longer: `cut`, the `*_MAX` bounds)."""
        nearest = self.nearest()
        return {
            "observedAt": cut(self.observed_at, STAMP_MAX),
            "mode": self.mode,
            "version": cut(self.version, STAMP_MAX),
            "categories": [c.to_status() for c in self.categories[:CATEGORIES_MAX]],
            "reclaimableBytes": self.reclaimable,
            "signals": [s.to_status() for s in self.signals[:SIGNALS_MAX]],
            "nearestSignal": cut(nearest.signal, NAME_MAX) if nearest else "",
            "conditions": [cut(c, NAME_MAX) for c in self.conditions[:CONDITIONS_MAX]],
            # the same, one string: a printer column prints a list as JSON
            "pressure": ",".join(cut(c, NAME_MAX) for c in self.conditions[:CONDITIONS_MAX]),
            "evictFirst": [p.to_status() for p in self.evict_first[:TOP]],
            "residue": {cut(k, NAME_MAX): v for k, v in list(self.residue.items())[:RESIDUE_MAX]},
            "lastApply": self.last_apply.to_status() if self.last_apply else None,
            "error": cut(self.error, TEXT_MAX),
            "paused": cut(self.paused, TEXT_MAX),
            "podSource": cut(self.pod_source, MAX_SOURCE),
            "kubeletConfig": cut(self.kubelet_config, MAX_SOURCE),
        }

    @classmethod
    def from_status(cls, node: str, d: Mapping[str, Any]) -> NodeReport:
        """A report back from a CR's `status` (missing keys take their defaults)."""
        last = d.get("lastApply")
        return cls(
            node=node,
            observed_at=str(d.get("observedAt", "")),
            mode=str(d.get("mode", "report")),
            version=str(d.get("version", "")),
            categories=tuple(Category.from_status(c) for c in d.get("categories") or ()),
            reclaimable=_int(d.get("reclaimableBytes")) or 0,
            signals=tuple(SignalMargin.from_status(s) for s in d.get("signals") or ()),
            conditions=tuple(str(c) for c in d.get("conditions") or ()),
            evict_first=tuple(EvictCandidate.from_status(p) for p in d.get("evictFirst") or ()),
            residue={str(k): _int(v) or 0 for k, v in (d.get("residue") or {}).items()},
            last_apply=LastApply.from_status(last) if isinstance(last, Mapping) else None,
            error=str(d.get("error") or ""),
            paused=str(d.get("paused") or ""),
            pod_source=str(d.get("podSource") or ""),
            kubelet_config=str(d.get("kubeletConfig") or ""),
        )

    def same_as(self, other: NodeReport | None) -> bool:
        """True when `other` says what this report says, but for `observed_at` and byte, inode
        and PID figures that agree in their two leading digits (`leading`): the agent then
        skips the write (up to its heartbeat). Free space moves by a few bytes every second on
        a live node; a write for each such move would be a write every cycle on every node.
        A threshold met or cleared, a condition, a pod, a count or an apply always counts."""
        return other is not None and _material(other) == _material(self)


def leading(n: int | None, digits: int = 2) -> int | None:
    """`n` rounded to its `digits` leading decimal digits (`1234567` → `1200000`, `-0.96 GiB`
    stays negative, 0 stays 0); None stays None."""
    if n is None or n == 0:
        return n
    scale = int(10 ** max(len(str(abs(n))) - digits, 0))
    return round(n / scale) * scale


def _material(r: NodeReport) -> NodeReport:
    r = NodeReport.from_status(r.node, r.to_status())  # as written: cut to the CRD's bounds
    return replace(
        r,
        observed_at="",
        categories=tuple(
            replace(c, bytes=leading(c.bytes), reclaimable=leading(c.reclaimable))
            for c in r.categories
        ),
        reclaimable=leading(r.reclaimable) or 0,
        signals=tuple(
            replace(x, available=leading(x.available), margin=leading(x.margin)) for x in r.signals
        ),
    )


def _int(v: Any) -> int | None:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return None

"""`kubegc reclaim`'s rules, pure: the order objects are acted on, the order they are given
up in, and how far a plan goes to meet a space target (`--until`, `--bytes`).

Acting order (`ACT_ORDER`) is the kubelet's: for every disk signal the eviction manager
reclaims node-level resources first — container GC (dead containers, then sandboxes, then
the log directories of deleted pods: kuberuntime `containerGC.GarbageCollect`), then unused
images (`imageGC.DeleteUnusedImages`) — in that order (kubelet eviction:
`buildSignalToNodeReclaimFuncs`: `nodeReclaimFuncs{containerGC.DeleteAllUnusedContainers,
imageGC.DeleteUnusedImages}`, see `policy.eviction.thresholds.reclaim_for`). Residue is not
the kubelet's; it is host files nobody owns, cleaned with the logs, before the images. Under
pressure the kubelet's `DeleteAllUnusedContainers` also removes the newest dead container of
a live pod's container; kubegc keeps that record (it is what makes the kubelet not run an
init container again) unless told `--match-kubelet`.

Loss order (`LOSS_RANK`, used only to cut a plan at a target) takes the objects whose loss
costs least first:

1. pod log directories of deleted pods and dangling legacy log links — their pod is gone
   from the API, so `kubectl logs` cannot reach them any more;
2. residue that is safe to clean (orphaned pod directories, leaked namespaces, CNI
   reservations, empty pod cgroups) — nobody owns it;
3. dead containers — their logs and exit records go (`kubectl logs --previous`);
4. dead sandboxes — cheap to lose but they hold no bytes of their own;
5. unused images, least recently used first as the kubelet's image GC orders them
   (`imageGC.freeSpace` sorts by lastUsed) — a later pod start must pull them again.

An object is taken with what it needs: a sandbox with the planned dead containers in it, a
pod log directory with the planned dead containers of its pod (the executors
re-check both, and would skip them otherwise). The kubelet has no such target (it frees to a
threshold with whole GC passes); this order is kubegc's, chosen to keep what a later
investigation or pod start may need.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kubegc_cli.core.errors import BadInput
from kubegc_cli.policy.eviction.thresholds import (
    IMAGEFS_AVAILABLE,
    NODEFS_AVAILABLE,
    Threshold,
    parse_threshold_value,
)

#: Action kinds in the order a reclaim run acts on them (the kubelet's).
ACT_ORDER: tuple[str, ...] = (
    "container",
    "sandbox",
    "pod-log-dir",
    "log-symlink",
    "finding",
    "image",
)
#: Rank of each kind when a plan is cut at a target: lower is given up first.
LOSS_RANK: dict[str, int] = {
    "pod-log-dir": 0,
    "log-symlink": 0,
    "finding": 1,
    "container": 2,
    "sandbox": 3,
    "image": 4,
}
#: The signals `--until` takes: the disk signals whose filesystem kubegc frees.
TARGET_SIGNALS = (NODEFS_AVAILABLE, IMAGEFS_AVAILABLE)


@dataclass(frozen=True, slots=True)
class Target:
    """A space target. `text` as given (`nodefs.available>15%`, or the `--bytes` value);
    `signal` the eviction signal (None for `--bytes`: bytes on any filesystem);
    `threshold` the signal's value as the kubelet's parser reads it; `amount` the bytes of
    `--bytes`."""

    text: str
    flag: str
    signal: str | None = None
    threshold: Threshold | None = None
    amount: int = 0

    def needed(self, capacity: int, available: int) -> int:
        """Bytes to free on the signal's filesystem (`capacity`, `available` in bytes) so
        that its available bytes reach the threshold (the kubelet's `GetThresholdQuantity`:
        a percentage of capacity, or the quantity); `--bytes`: its amount. Never < 0."""
        if self.threshold is None:
            return self.amount
        return max(0, self.threshold.threshold_quantity(capacity) - available)


def parse_until(text: str) -> Target:
    """`--until SIGNAL>QUANTITY`: `nodefs.available>15%`, `imagefs.available>20Gi`. The value
    is read by the kubelet's threshold grammar (`parse_threshold_value`: a percentage or a
    positive quantity). Raises `BadInput` naming the text: no `>`, a signal other than
    nodefs.available / imagefs.available, a bad value, or 0% / 100% (no target)."""
    flag = "--until"
    signal, sep, value = text.partition(">")
    signal, value = signal.strip(), value.strip()
    if not sep:
        raise BadInput(f"invalid value for {flag}: {text!r} is not SIGNAL>QUANTITY "
                       "(e.g. nodefs.available>15%, imagefs.available>20Gi)")  # fmt: skip
    if signal not in TARGET_SIGNALS:
        raise BadInput(f"invalid value for {flag}: {text!r}: signal {signal!r} is not one of "
                       f"{', '.join(TARGET_SIGNALS)}")  # fmt: skip
    threshold = parse_threshold_value(signal, value, where=f"invalid value for {flag}")
    if threshold is None:
        raise BadInput(f"invalid value for {flag}: {text!r}: {value} is no target (0% is always "
                       "met, 100% never)")  # fmt: skip
    return Target(text, flag, signal, threshold)


def prerequisites(a: Any, planned: Sequence[Any]) -> list[Any]:
    """The planned actions `a` needs carried out first: a sandbox's dead containers, the dead
    containers of a pod log directory's pod (their log files live in it)."""
    if a.kind == "sandbox":
        return [c for c in planned if c.kind == "container" and c.container.pod_sandbox_id == a.id]
    if a.kind == "pod-log-dir" and a.pod_uid:
        return [c for c in planned if c.kind == "container" and c.container.pod_uid == a.pod_uid]
    return []


def loss_order(actions: Iterable[Any]) -> list[Any]:
    """`actions` in the order they are given up (`LOSS_RANK`; images least recently used
    first, never used before used; otherwise the planners' order)."""

    def key(ia: tuple[int, Any]) -> tuple[int, int, int]:
        i, a = ia
        used = a.last_used if a.kind == "image" else 0
        return (LOSS_RANK.get(a.kind, len(LOSS_RANK)), used, i)

    return [a for _, a in sorted(enumerate(actions), key=key)]


@dataclass(frozen=True, slots=True)
class Cut:
    """What `cut_at` takes: `taken` (action ids), `expected` bytes they free on the target's
    filesystem, `plannable` bytes the whole plan would free there, `needed` bytes."""

    taken: frozenset[str]
    expected: int
    plannable: int
    needed: int

    @property
    def met(self) -> bool:
        """The plan frees at least what is needed (by expected bytes)."""
        return self.expected >= self.needed


def cut_at(actions: Sequence[Any], needed: int, counts: Callable[[Any], int]) -> Cut:
    """Take planned `actions` in loss order (with their `prerequisites`) until the bytes they
    free on the target's filesystem — `counts(a)`, 0 for an action freeing nothing there —
    reach `needed`. Actions freeing nothing there are taken only as prerequisites. When the
    whole plan cannot reach `needed`, every action is taken (the target says how far it goes,
    not what to keep). Returns the `Cut`; `needed` 0 takes nothing."""
    plannable = sum(counts(a) for a in actions)
    taken: dict[str, Any] = {}
    got = 0
    for a in loss_order(actions):
        if got >= needed:
            break
        if a.id in taken or counts(a) <= 0:
            continue
        for p in [*prerequisites(a, actions), a]:
            if p.id not in taken:
                taken[p.id] = p
                got += counts(p)
    if got < needed:
        return Cut(frozenset(a.id for a in actions), plannable, plannable, needed)
    return Cut(frozenset(taken), got, plannable, needed)

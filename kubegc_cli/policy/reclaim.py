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

Loss order (`loss_groups`, used only to cut a plan at a target) takes the objects whose loss
costs least first, a deleted pod's objects as one:

1. what deleted pods left — each such pod's dead containers, its sandbox and its log
   directory together (selected by `POD_RULES`; their pod is gone from the API, so
   `kubectl logs` cannot reach them any more), counted as the sum of their bytes (a pod log
   directory's own bytes are 0 when all its files are its containers' logs, counted on the
   containers) — and dangling legacy log links. The kubelet's container GC also takes these
   first: `evictContainers` removes every dead container of a pod that should be removed
   before it applies MaxPerPodContainer and MaxContainers to the others;
2. residue that is safe to clean (orphaned pod directories, leaked namespaces, CNI
   reservations, empty pod cgroups) — nobody owns it;
3. dead containers of pods still alive — their logs and exit records go
   (`kubectl logs --previous`);
4. dead sandboxes of pods still alive — they hold no bytes of their own;
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
from kubegc_cli.core.plan import POD_RULES
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
#: Rank of each kind when a plan is cut at a target: lower is given up first (what a deleted
#: pod left: `GONE_POD_RANK`, whatever its kind).
LOSS_RANK: dict[str, int] = {
    "pod-log-dir": 0,
    "log-symlink": 0,
    "finding": 1,
    "container": 2,
    "sandbox": 3,
    "image": 4,
}
GONE_POD_RANK = 0
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


def gone_pod_of(a: Any) -> str | None:
    """The UID of the deleted (or, with --include-terminated-pods, terminated) pod whose
    object `a` is — a container or sandbox selected by a `POD_RULES` rule, a pod log
    directory — or None (an object of a live pod, or no pod's)."""
    if a.kind == "pod-log-dir":
        return str(a.pod_uid) or None
    if a.kind == "container" and a.rule in POD_RULES:
        return str(a.container.pod_uid) or None
    if a.kind == "sandbox" and a.rule in POD_RULES:
        return str(a.sandbox.uid) or None
    return None


def loss_groups(actions: Iterable[Any]) -> list[list[Any]]:
    """`actions` grouped and in the order they are given up: each deleted pod's objects as
    one group (rank `GONE_POD_RANK`, in acting order inside: containers, sandbox, log
    directory), every other action a group of its own (`LOSS_RANK`; images least recently
    used first, never used before used). Ties keep the planners' order (of a group's first
    action)."""
    order = {k: i for i, k in enumerate(ACT_ORDER)}
    groups: dict[Any, list[tuple[int, Any]]] = {}
    for i, a in enumerate(actions):
        uid = gone_pod_of(a)
        groups.setdefault(("pod", uid) if uid else ("one", i), []).append((i, a))

    def key(members: list[tuple[int, Any]]) -> tuple[int, int, int]:
        i, a = members[0]
        if gone_pod_of(a):
            return (GONE_POD_RANK, 0, i)
        used = a.last_used if a.kind == "image" else 0
        return (LOSS_RANK.get(a.kind, len(LOSS_RANK)), used, i)

    return [
        [a for _, a in sorted(g, key=lambda ia: (order.get(ia[1].kind, len(order)), ia[0]))]
        for g in sorted(groups.values(), key=key)
    ]


def loss_order(actions: Iterable[Any]) -> list[Any]:
    """`actions` in the order they are given up (`loss_groups`, flattened)."""
    return [a for g in loss_groups(actions) for a in g]


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
    """Take planned `actions` a group at a time in loss order (`loss_groups`: a deleted pod's
    objects together), each with its `prerequisites`, until the bytes they free on the
    target's filesystem — `counts(a)`, 0 for an action freeing nothing there — reach `needed`.
    A group freeing nothing there (by the sum of its actions and their prerequisites not yet
    taken) is taken only as prerequisites. When the whole plan cannot reach `needed`, every
    action is taken (the target says how far it goes, not what to keep). Returns the `Cut`;
    `needed` 0 takes nothing."""
    plannable = sum(counts(a) for a in actions)
    taken: dict[str, Any] = {}
    got = 0
    for group in loss_groups(actions):
        if got >= needed:
            break
        adding: dict[str, Any] = {}
        for a in group:
            for p in [*prerequisites(a, actions), a]:
                if p.id not in taken and p.id not in adding:
                    adding[p.id] = p
        gain = sum(counts(p) for p in adding.values())
        if gain <= 0:
            continue
        taken.update(adding)
        got += gain
    if got < needed:
        return Cut(frozenset(a.id for a in actions), plannable, plannable, needed)
    return Cut(frozenset(taken), got, plannable, needed)

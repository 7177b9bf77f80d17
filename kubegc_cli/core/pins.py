"""Image pins as data: `kubegc images pin|unpin` plans and their results.

A pin is containerd's label `io.cri-containerd.pinned=pinned` on an image's records; the
runtime then reports the image `pinned` through CRI, and the kubelet's image GC (and
kubegc's) never removes it. kubegc marks each record it pins with a label of its own too,
`io.kubegc.pinned=<RFC 3339 time of the pin>` (`OWN_PIN_LABEL`): `images unpin` undoes only
pins whose records carry it, never one the runtime or a person made.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kubegc_cli.core.model import API_VERSION, Image

PIN = "pin"
UNPIN = "unpin"


@dataclass(frozen=True, slots=True)
class StoredImage:
    """One of containerd's image records (it keeps one per name: tag, digest, ID): `name`,
    its `labels`, `target` (the digest of the manifest or index it points at) and `created`
    (when containerd made the record, ns since the epoch: a record removed and made again
    under the same name has a new one; an update of its labels keeps it)."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    target: str = ""
    created: int = 0


#: containerd's pin: its CRI reports an image `pinned` while a record of it carries this
#: label with this value (containerd `internal/cri/labels`).
PINNED_LABEL = "io.cri-containerd.pinned"
PINNED_VALUE = "pinned"

#: The label kubegc sets beside containerd's pin label on each image record it pins (its
#: value: when, RFC 3339 UTC); `images unpin` changes only records that carry it.
OWN_PIN_LABEL = "io.kubegc.pinned"


class PinResult(StrEnum):
    """What became of a `PinAction`: planned, done (`pinned` / `unpinned`), kept (nothing to
    do), skipped (changed since the plan), failed; `still-pinned`: an unpin removed kubegc's
    pin, but the runtime still reports the image pinned (another pin holds it)."""

    PLANNED = "planned"
    PINNED = "pinned"
    UNPINNED = "unpinned"
    STILL_PINNED = "still-pinned"
    KEPT = "kept"
    SKIPPED = "skipped"
    FAILED = "failed"


PLANNED = PinResult.PLANNED
KEPT = PinResult.KEPT
SKIPPED = PinResult.SKIPPED
FAILED = PinResult.FAILED
STILL_PINNED = PinResult.STILL_PINNED
DONE = {PIN: PinResult.PINNED, UNPIN: PinResult.UNPINNED}


@dataclass(slots=True)
class PinAction:
    """Pin or unpin one image (`op`: PIN or UNPIN), or why it is left as it is (`result`
    KEPT, `reason`). `names` are the runtime's records of the image that were labelled (set
    once acted on); `error` why it was skipped or failed, or what else is to know of the
    result (who still pins an image `still-pinned`); `pinned_after` whether the runtime
    reports the image pinned once acted on (CRI `ImageStatus`; None: not asked, or no
    answer)."""

    image: Image
    op: str
    reason: str
    result: PinResult = PLANNED
    error: str = ""
    names: tuple[str, ...] = ()
    pinned_after: bool | None = None

    kind = "image-pin"
    bytes_freed = 0  # (an audit row's bytes: a pin frees none)
    planned_bytes = 0  # (the audit row's expected bytes: none either)

    @property
    def id(self) -> str:
        return self.image.id

    @property
    def rule(self) -> str:
        """The audit row's rule: the operation (`pin`, `unpin`)."""
        return self.op

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "id": self.image.id,
            "repo_tags": list(self.image.repo_tags),
            "repo_digests": list(self.image.repo_digests),
            "pinned": self.image.pinned,
            "op": self.op,
            "reason": self.reason,
            "result": self.result.value,
            "error": self.error,
            "names": list(self.names),
            "pinned_after": self.pinned_after,
        }


@dataclass(slots=True)
class PinPlan:
    """What `images pin|unpin` does: `op`, the `patterns` given, `actions` (images to change)
    and `kept` (matched, left as they are, with the reason), `notes`; `dry_run` until acted
    on; `source` the runtime endpoint."""

    op: str
    patterns: tuple[str, ...]
    actions: list[PinAction] = field(default_factory=list)
    kept: list[PinAction] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dry_run: bool = True
    source: str = ""

    kind = "ImagePinPlan"

    def counts(self) -> dict[str, int]:
        """How many actions ended each way (planned, pinned/unpinned, for unpin still-pinned,
        skipped, failed)."""
        ends = (DONE[self.op], STILL_PINNED) if self.op == UNPIN else (DONE[self.op],)
        out = {r.value: 0 for r in (PLANNED, *ends, SKIPPED, FAILED)}
        for a in self.actions:
            out[a.result.value] = out.get(a.result.value, 0) + 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "apiVersion": API_VERSION,
            "op": self.op,
            "patterns": list(self.patterns),
            "dry_run": self.dry_run,
            "source": self.source,
            "actions": [a.to_dict() for a in self.actions],
            "kept": [a.to_dict() for a in self.kept],
            "notes": list(self.notes),
            "summary": {**self.counts(), "kept": len(self.kept)},
        }

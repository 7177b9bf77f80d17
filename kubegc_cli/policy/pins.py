"""Which images `kubegc images pin|unpin` changes, as a pure planner.

An image is selected by the `--keep` grammar (`policy.images.matches_keep`: a glob over its
tags and repo digests). Pinning an image already pinned, or unpinning one that is not, is
nothing to do. Unpinning never touches an image the runtime keeps for itself (its sandbox
image, pinned by containerd 2.x from its config): the kubelet no longer protects the sandbox
image on its own and relies on that pin.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.model import Image
from kubegc_cli.core.pins import KEPT, PIN, UNPIN, PinAction, PinPlan
from kubegc_cli.policy.images import matches_keep


def check_patterns(patterns: Iterable[str]) -> tuple[str, ...]:
    """The patterns as given; `BadInput` when there are none or one is empty."""
    given = tuple(patterns)
    if not given:
        raise BadInput("name at least one image pattern (as for --keep: 'registry.k8s.io/*')")
    for pattern in given:
        if not pattern.strip():
            raise BadInput(f"invalid image pattern {pattern!r}: it is empty")
    return given


def plan_pins(
    images: Iterable[Image],
    patterns: Iterable[str],
    op: str,
    *,
    protected: Mapping[str, str] | None = None,
) -> PinPlan:
    """The plan of `images pin` (`op` PIN) or `images unpin` (UNPIN) over the runtime's
    `images`: each image matching one of `patterns` is an action, or kept with the reason
    (already pinned, not pinned, the runtime's own image: `protected`, image ID → why).
    Images are taken in ID order, once each. Raises `BadInput` for bad patterns or `op`."""
    if op not in (PIN, UNPIN):
        raise BadInput(f"unknown pin operation {op!r}")
    given = check_patterns(patterns)
    plan = PinPlan(op, given)
    by_id = {i.id: i for i in images}
    for iid in sorted(by_id):
        img = by_id[iid]
        if not matches_keep(img, given):
            continue
        if op == PIN and img.pinned:
            plan.kept.append(PinAction(img, op, "already pinned", KEPT))
        elif op == UNPIN and not img.pinned:
            plan.kept.append(PinAction(img, op, "not pinned", KEPT))
        elif op == UNPIN and protected and iid in protected:
            why = f"{protected[iid]}: the runtime's pin stays"
            plan.kept.append(PinAction(img, op, why, KEPT))
        else:
            reason = "matches " + ", ".join(p for p in given if matches_keep(img, (p,)))
            plan.actions.append(PinAction(img, op, reason))
    if not plan.actions and not plan.kept:
        plan.notes.append("no image matches " + " ".join(given))
    return plan

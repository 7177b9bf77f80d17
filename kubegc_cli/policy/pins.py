"""Which images `kubegc images pin|unpin` changes, as a pure planner.

An image is selected by the `--keep` grammar (`policy.images.matches_keep`: a glob over its
tags and repo digests). Pinning an image already pinned, or unpinning one that is not, is
nothing to do. Unpinning undoes only kubegc's own pins: an image is unpinned only when one
of its containerd records carries kubegc's label (`core.pins.OWN_PIN_LABEL`, set by `images
pin`) with a value kubegc writes (an RFC 3339 UTC time as `core.units.ns_to_rfc3339` makes
it: `own_pin_time`); every other pin (the runtime's own, as containerd 2.x pins its sandbox
image, one set with `ctr images label`, one by a kubegc that did not label its pins yet, one
whose `io.kubegc.pinned` someone else set to a value kubegc never writes) stays, by principle
rather than by knowing which images a runtime pins. The images the runtime keeps for
itself (its sandbox image, its pinned images: `protected`) are never unpinned, even when a
record of one carries kubegc's label: containerd pins them itself and expects them pinned.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.model import Image, RuntimeInfo
from kubegc_cli.core.pins import (
    KEPT,
    OWN_PIN_LABEL,
    PIN,
    PINNED_LABEL,
    PINNED_VALUE,
    UNPIN,
    PinAction,
    PinPlan,
    StoredImage,
)
from kubegc_cli.core.units import ns_to_rfc3339, rfc3339_to_ns
from kubegc_cli.policy.images import matches_keep

#: The first containerd whose CRI reports `io.cri-containerd.pinned` as CRI `pinned`.
FIRST_PINNING_CONTAINERD = (1, 7)

#: Why `images unpin` keeps an image the runtime keeps for itself (after what it is).
RUNTIME_KEEPS = "which the runtime keeps for itself and pins: kubegc never unpins it"

#: Why `images unpin` keeps a pin kubegc did not make.
NOT_OURS = (
    "pinned by the runtime or someone else, not by kubegc: change it by hand with "
    "`ctr -n k8s.io images label <name> io.cri-containerd.pinned=`"
)


def reads_pins(info: RuntimeInfo) -> bool:
    """Whether the runtime `info` (its CRI Version) reports containerd's pin label as CRI
    `pinned`: containerd 1.7 or later (CRI-O, cri-dockerd and containerd 1.6 do not)."""
    found = re.match(r"v?(\d+)\.(\d+)", info.version)
    return (
        info.name == "containerd"
        and found is not None
        and (int(found[1]), int(found[2])) >= FIRST_PINNING_CONTAINERD
    )


def own_pin_reasons(images: Iterable[Image], records: Mapping[str, StoredImage]) -> dict[str, str]:
    """Image ID → why it is pinned, for each pinned image of `images` a record of which
    (`image_records`: its names, and other records pointing at the same manifest; `records`
    are containerd's, by name) carries kubegc's own pin (`own_pin_time`): `pinned by kubegc
    (images pin, <RFC 3339 time of its earliest pin>)`, and `, and by the runtime or someone
    else` when another record of it carries containerd's pin without kubegc's label. An image
    pinned with no kubegc pin on any record is not in the result."""
    out: dict[str, str] = {}
    for img in images:
        if not img.pinned:
            continue
        names = image_records(img, records)
        times = sorted(t for n in names if (t := own_pin_time(records[n].labels)))
        if not times:
            continue
        others = [n for n in names if _pins(records[n]) and not own_pin_time(records[n].labels)]
        also = ", and by the runtime or someone else" if others else ""
        out[img.id] = f"pinned by kubegc (images pin, {times[0]}){also}"
    return out


def check_patterns(patterns: Iterable[str]) -> tuple[str, ...]:
    """The patterns as given; `BadInput` when there are none or one is empty."""
    given = tuple(patterns)
    if not given:
        raise BadInput("name at least one image pattern (as for --keep: 'registry.k8s.io/*')")
    for pattern in given:
        if not pattern.strip():
            raise BadInput(f"invalid image pattern {pattern!r}: it is empty")
    return given


def own_pin_time(labels: Mapping[str, str]) -> str | None:
    """The time of kubegc's pin on a record whose labels are `labels`: the value of
    `OWN_PIN_LABEL` when it is an RFC 3339 UTC time exactly as `images pin` writes it
    (`ns_to_rfc3339`: `2026-01-02T15:04:05Z`, or with nanoseconds); None when the label is
    absent or holds anything else (then kubegc did not write it, so the pin is not kubegc's)."""
    value = labels.get(OWN_PIN_LABEL)
    if value is None:
        return None
    try:
        ns = rfc3339_to_ns(value)
    except BadInput:
        return None
    return value if ns_to_rfc3339(ns) == value else None


def record_names(image: Image) -> tuple[str, ...]:
    """The names containerd may hold a record of `image` under: its tags, its repo digests,
    its ID (containerd's CRI keeps one record per name), each once, in that order."""
    return tuple(dict.fromkeys([*image.repo_tags, *image.repo_digests, image.id]))


def own_pin_names(image: Image, records: Mapping[str, Mapping[str, str]]) -> tuple[str, ...]:
    """The names of `image`'s containerd records (`records`: name → labels, as containerd
    lists them) that carry kubegc's pin label `OWN_PIN_LABEL` with a value kubegc writes
    (`own_pin_time`): the records `images pin` labelled and `images unpin` may change."""
    return tuple(n for n in record_names(image) if own_pin_time(records.get(n, {})))


def image_records(image: Image, records: Mapping[str, StoredImage]) -> tuple[str, ...]:
    """The names of `records` (containerd's, by name) that are `image`'s: those of its names
    (`record_names`) containerd holds, then every other record pointing at the same target
    as one of them (a tag made since the image was listed), sorted."""
    own = [n for n in record_names(image) if n in records]
    targets = {records[n].target for n in own if records[n].target}
    more = sorted(n for n, r in records.items() if r.target in targets and n not in own)
    return (*own, *more)


def pinning_records(image: Image, records: Mapping[str, StoredImage]) -> tuple[str, ...]:
    """The names of `image`'s records (`image_records`) that carry containerd's pin."""
    return tuple(n for n in image_records(image, records) if _pins(records[n]))


def _pins(record: StoredImage) -> bool:
    """Whether `record` carries containerd's pin label."""
    return record.labels.get(PINNED_LABEL) == PINNED_VALUE


def still_pinned_by(image: Image, records: Mapping[str, StoredImage]) -> str:
    """Who still pins `image` when the runtime reports it pinned once an unpin removed
    kubegc's pin, as far as containerd's `records` (listed after the unpin) tell: the
    records of it that still carry containerd's pin label, each named (and whether kubegc's
    label is on it too: a record the unpin left alone), else the runtime itself."""
    pinners = pinning_records(image, records)
    if not pinners:
        return (f"the runtime still reports it pinned, though no record of it carries "
                f"{PINNED_LABEL}: its own pin (or its view is not current yet)")  # fmt: skip
    theirs = [n for n in pinners if own_pin_time(records[n].labels) is None]
    left = [n for n in pinners if n not in theirs]
    said = []
    if theirs:
        said.append(f"{', '.join(theirs)} ({PINNED_LABEL} not set by kubegc: the runtime's or "
                    "someone else's pin)")  # fmt: skip
    if left:
        said.append(f"{', '.join(left)} (with kubegc's {OWN_PIN_LABEL}, left alone)")
    return "pinned by its record(s) " + "; ".join(said)


def own_pin_changed(planned: StoredImage, now: StoredImage) -> str:
    """Why the record `now` (as containerd holds it at the moment of an unpin's write) is not
    the record `planned` (as listed for the plan) carrying kubegc's pin any more, so that the
    unpin must leave it alone: made again since (another `created`), pointing at another
    image (`target`), or kubegc's label gone or changed; "" when it is still the same."""
    if now.created != planned.created:
        return f"its record {now.name} was removed and made again since the plan"
    if now.target != planned.target:
        return f"its record {now.name} points at another image since the plan"
    if own_pin_time(now.labels) is None:
        return f"its record {now.name} no longer carries kubegc's {OWN_PIN_LABEL}"
    if now.labels.get(OWN_PIN_LABEL) != planned.labels.get(OWN_PIN_LABEL):
        return f"its record {now.name} carries another {OWN_PIN_LABEL} since the plan"
    return ""


def planted_own_labels(image: Image, records: Mapping[str, Mapping[str, str]]) -> str:
    """Why `image`'s pin is not kubegc's though a record of it carries `OWN_PIN_LABEL`: the
    first such record whose value is not one kubegc writes, named with the value (quoted,
    cut at 64 characters); "" when there is none."""
    for name in record_names(image):
        labels = records.get(name, {})
        if OWN_PIN_LABEL in labels and own_pin_time(labels) is None:
            value = labels[OWN_PIN_LABEL][:64]
            return (f"pinned; its record {name} carries {OWN_PIN_LABEL}={value!r}, "
                    "which is not an RFC 3339 time as kubegc writes it: not kubegc's pin, "
                    "kept (change it by hand with `ctr -n k8s.io images label <name> "
                    "io.cri-containerd.pinned=`)")  # fmt: skip
    return ""


def plan_pins(
    images: Iterable[Image],
    patterns: Iterable[str],
    op: str,
    *,
    records: Mapping[str, Mapping[str, str]] | None = None,
    protected: Mapping[str, str] | None = None,
) -> PinPlan:
    """The plan of `images pin` (`op` PIN) or `images unpin` (UNPIN) over the runtime's
    `images`: each image matching one of `patterns` is an action, or kept with the reason
    (already pinned; not pinned; for unpin, pinned but by the runtime or someone else: no
    record of it in `records`, containerd's image records by name → labels, carries
    kubegc's label `OWN_PIN_LABEL` with a value kubegc writes — one with another value says
    so, `planted_own_labels`; none given: no pin is kubegc's; or, whoever pinned it, an
    image the runtime keeps for itself: `protected`, image ID → what it is and where it was
    named, as `SandboxImages.protected_ids` gives them). Images are taken in ID order, once
    each. Raises `BadInput` for bad patterns or `op`."""
    if op not in (PIN, UNPIN):
        raise BadInput(f"unknown pin operation {op!r}")
    given = check_patterns(patterns)
    protected, records = protected or {}, records or {}
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
        elif op == UNPIN and img.id in protected:
            why = f"{protected[img.id]}, {RUNTIME_KEEPS}"
            plan.kept.append(PinAction(img, op, why, KEPT))
        elif op == UNPIN and not own_pin_names(img, records):
            why = planted_own_labels(img, records) or NOT_OURS
            plan.kept.append(PinAction(img, op, why, KEPT))
        else:
            reason = "matches " + ", ".join(p for p in given if matches_keep(img, (p,)))
            plan.actions.append(PinAction(img, op, reason))
    if not plan.actions and not plan.kept:
        plan.notes.append("no image matches " + " ".join(given))
    return plan

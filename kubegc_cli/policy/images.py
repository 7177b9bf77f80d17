"""The kubelet's image garbage collection, as a pure planner.

Source of the rules: kubelet `image_gc_manager.go` (`detectImages`, `imagesInEvictionOrder`,
`GarbageCollect`, `freeOldImages`, `freeSpace`, `DeleteUnusedImages`). In short:

- An image is *in use* while any container the runtime has (exited ones too) uses it (CRI
  `image_id`, else `image_ref`). Images in use, pinned by the runtime, or protected by kubegc
  (the sandbox image, `--keep` patterns) are never candidates.
- kubegc's own rule, not the kubelet's: an image that cannot be pulled again
  (`unpullable_reason`) is no candidate unless `allow_unpullable` (`--allow-unpullable`).
- Records: `first_detected` is set the first time an image is seen (kubegc remembers it across
  runs, the kubelet only in memory); `last_used` is "now" whenever the image is in use, and
  stays at the zero time for an image never seen in use.
- Eviction order: least recently used first, then first detected first.
- MaxAge (if > 0, and only once the collector has been running longer than MaxAge): images
  unused for strictly more than MaxAge go; MinAge is not checked for these.
- Threshold GC: `usage = 100 - available*100 // capacity` (integer arithmetic, so usage rounds
  up); at `usage >= high`, free `capacity*(100-low)//100 - available` bytes, walking the order,
  skipping images used in this run and images first detected less than MinAge ago, stopping once
  the freed bytes reach the target (so it may overshoot). Freeing less than the target is a
  failure the caller reports.
- Threshold GC is off when high is 100% and MaxAge is 0: the kubelet does not start image GC
  at all then.
- `prune_unused` (the kubelet's DeleteUnusedImages): every candidate at least MinAge old, no
  thresholds.
- Usage is computed whenever the image filesystem's figures are given, in every mode; capacity 0
  is the kubelet's "invalid capacity 0 on image filesystem" (`GCFailed`).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubegc_cli.core.errors import BadInput, GCFailed
from kubegc_cli.core.model import Container, ContainerState, Image, ImageRecord, reference_forms
from kubegc_cli.core.pulls import NOT_KEPT, PullRecord, RepullRisk
from kubegc_cli.core.units import (
    NS_PER_SECOND,
    format_bytes,
    format_go_duration,
    ns_to_rfc3339,
    parse_duration,
)

RULE_MAX_AGE = "max-age"
RULE_SPACE = "space"
RULE_PRUNE = "prune-unused"
KEEP_IN_USE = "in-use"
KEEP_PINNED = "pinned"
KEEP_PROTECTED = "protected"
KEEP_MIN_AGE = "min-age"
KEEP_NOT_NEEDED = "not-needed"
KEEP_UNPULLABLE = "unpullable"

#: How each setting is named in messages unless the caller says where it came from.
SETTING_FLAGS = {
    "high_threshold": "--image-gc-high-threshold",
    "low_threshold": "--image-gc-low-threshold",
    "min_age": "--minimum-image-ttl-duration",
    "max_age": "--image-maximum-gc-age",
}


@dataclass(frozen=True, slots=True)
class ImageGCPolicy:
    """The kubelet's ImageGCPolicy. Percentages 0–100; ages in seconds (0 = MaxAge off)."""

    high_threshold: int = 85
    low_threshold: int = 80
    min_age: float = 120.0
    max_age: float = 0.0
    prune_unused: bool = False
    keep: tuple[str, ...] = ()
    allow_unpullable: bool = False

    @property
    def threshold_gc_disabled(self) -> bool:
        """High 100% with MaxAge 0: the kubelet does not start image GC at all."""
        return self.high_threshold == 100 and self.max_age == 0

    def validate(self, names: Mapping[str, str] | None = None) -> None:
        """The kubelet's checks (KubeletConfiguration validation), and no empty `--keep`.

        `names` says how to name a setting in the message, by field name (`high_threshold`,
        `low_threshold`, `min_age`, `max_age`), e.g. `imageGCHighThresholdPercent in
        /var/lib/kubelet/config.yaml` for a value from the kubelet config file; by default the
        flag. Raises `BadInput` naming the setting and the value.
        """
        name = {**SETTING_FLAGS, **(names or {})}
        for key, value in (
            ("high_threshold", self.high_threshold),
            ("low_threshold", self.low_threshold),
        ):
            if not 0 <= value <= 100:
                raise BadInput(f"invalid value for {name[key]}: {value} must be between 0 and 100")
        if self.low_threshold >= self.high_threshold:
            raise BadInput(
                f"{name['low_threshold']} ({self.low_threshold}) must be less than "
                f"{name['high_threshold']} ({self.high_threshold})"
            )
        if self.max_age > 0 and self.max_age <= self.min_age:
            raise BadInput(
                f"{name['max_age']} ({format_go_duration(self.max_age)}) must be greater "
                f"than {name['min_age']} ({format_go_duration(self.min_age)})"
            )
        for pattern in self.keep:
            if not pattern.strip():
                raise BadInput(f"invalid value for --keep: {pattern!r} is an empty pattern")

    def to_dict(self) -> dict[str, Any]:
        return {
            "image_gc_high_threshold": self.high_threshold,
            "image_gc_low_threshold": self.low_threshold,
            "minimum_image_ttl_duration": format_go_duration(self.min_age),
            "image_maximum_gc_age": format_go_duration(self.max_age),
            "prune_unused": self.prune_unused,
            "keep": list(self.keep),
            "allow_unpullable": self.allow_unpullable,
        }


@dataclass(slots=True)
class ImageDecision:
    """One image and what the plan does with it: `rule` (a removal rule or a keep reason)."""

    image: Image
    record: ImageRecord
    rule: str
    reason: str
    remove: bool
    used_by: tuple[Container, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "image",
            "id": self.image.id,
            "repo_tags": list(self.image.repo_tags),
            "size": self.image.size,
            "first_detected": ns_to_rfc3339(self.record.first_detected),
            "last_used": ns_to_rfc3339(self.record.last_used) if self.record.last_used else None,
            "rule": self.rule,
            "reason": self.reason,
        }


@dataclass(slots=True)
class ImagePlan:
    """The image GC plan. `usage_percent` (percent of the image filesystem used) is None when
    no image filesystem figures were given; `bytes_to_free` is None unless the high threshold
    was reached; `shortfall` (bytes) > 0 when the eligible images cannot reach the target (the
    kubelet's FreeDiskSpaceFailed)."""

    remove: list[ImageDecision] = field(default_factory=list)
    kept: list[ImageDecision] = field(default_factory=list)
    records: dict[str, ImageRecord] = field(default_factory=dict)
    usage_percent: int | None = None
    bytes_to_free: int | None = None
    shortfall: int = 0
    notes: list[str] = field(default_factory=list)


def images_in_use(containers: Iterable[Container]) -> set[str]:
    """Image IDs used by any container the runtime has (exited ones too): `image_id`, else
    `image_ref` (the kubelet's rule since v1.30)."""
    return {c.image_id or c.image_ref for c in containers if c.image_id or c.image_ref}


def image_users(containers: Iterable[Container]) -> dict[str, list[Container]]:
    """Image ID → the containers that use it (`images_in_use`'s rule), in the order listed."""
    users: dict[str, list[Container]] = {}
    for c in containers:
        if iid := c.image_id or c.image_ref:
            users.setdefault(iid, []).append(c)
    return users


#: How many containers an in-use reason names before "and N more".
USERS_NAMED = 3


def container_words(c: Container) -> str:
    """`default/web-1 nginx (EXITED)`: a container by its pod and name, with its state; by its
    short ID for one the kubelet did not make (no pod labels)."""
    if c.pod_name:
        return f"{c.pod_namespace}/{c.pod_name} {c.container_name} ({c.state.value})"
    return f"container {c.id[:13]} ({c.state.value})"


def used_by_text(users: Sequence[Container]) -> str:
    """Why an image is in use, naming who holds it: `used by default/web-1 nginx (EXITED)`,
    or `used by 5 containers: a, b, c and 2 more (-o json lists all)` (`USERS_NAMED`)."""
    if len(users) == 1:
        return f"used by {container_words(users[0])}"
    named = ", ".join(container_words(c) for c in users[:USERS_NAMED])
    more = len(users) - USERS_NAMED
    rest = f" and {more} more (-o json lists all)" if more > 0 else ""
    return f"used by {len(users)} containers: {named}{rest}"


def in_use_note(kept: Sequence[ImageDecision]) -> str:
    """The note on images kept in use ("" for none): how many, by how many containers and
    how many of those are dead, and what frees them — no container using them, which for a
    dead one is `gc containers` (the kubelet's container GC) removing it."""
    held = [d for d in kept if d.rule == KEEP_IN_USE]
    if not held:
        return ""
    users = {c.id: c for d in held for c in d.used_by}
    dead = sum(1 for c in users.values() if c.state is not ContainerState.RUNNING)
    frees = (
        f"{dead} of them not running: an image is kept while any container, dead ones too, "
        "uses it; once `kubegc gc containers` (or the kubelet) removes those, a later run may "
        "free the images only they hold"
        if dead
        else "all running: they go once their pods do"
    )
    return (
        f"{len(held)} image(s) kept in use by {len(users)} container(s), {frees} "
        "(-v lists each image with its containers and pods)"
    )


#: The names `ctr images import --digests` gives an imported image (`import-<date>@<digest>`,
#: containerd's cmd/ctr `import`), as CRI lists them (normalized under docker.io/library).
_IMPORT_NAME = re.compile(r"(?:docker\.io/library/)?import-\d{4}-\d{2}-\d{2}@")


def unpullable_reason(image: Image) -> str | None:
    """Why `image` cannot be pulled again, or None when it can (as far as the runtime says).

    What it relies on: containerd's CRI lists an image's repo digests from its digest
    references (`name@sha256:...`), which a pull through CRI records and `ctr images import`
    does not (the tarball's names are tags); `ctr images import --digests` adds only names
    `import-<date>@sha256:...`, which no registry serves. So: a name under `localhost/` (built
    or loaded on the node: Bottlerocket's, podman's); no repo digest at all (imported from a
    tarball, or pulled around CRI); only `import-<date>` digests (imported from a tarball).
    An image pulled with `ctr` rather than through CRI also has no digest, and is kept too:
    if unsure, kept."""
    names = (*image.repo_tags, *image.repo_digests)
    if any(n.startswith("localhost/") for n in names):
        return "cannot be pulled again: a localhost/ name"
    if not image.repo_digests:
        return "cannot be pulled again: no repo digest (imported from a tarball?)"
    if all(_IMPORT_NAME.match(d) for d in image.repo_digests):
        return "cannot be pulled again: imported from a tarball (ctr import-<date> digests only)"
    return None


def matches_keep(image: Image, patterns: Iterable[str]) -> bool:
    """True when a tag or repo digest of `image` matches one of the glob `patterns` (`--keep`:
    `fnmatch`, case-sensitive; `*` also crosses `/`)."""
    names = (*image.repo_tags, *image.repo_digests)
    return any(fnmatch.fnmatchcase(n, pat) for pat in patterns for n in names)


def registry_of(name: str) -> str:
    """The registry an image name points at, by the reference grammar containerd and the
    kubelet share (distribution/reference `ParseNormalizedNamed`): the first path component
    when it holds a `.` or a `:` or is `localhost`, else `docker.io` (a name with no host,
    `busybox` or `library/busybox`, is Docker Hub's). "" for an empty name."""
    if not name:
        return ""
    head, slash, _ = name.partition("/")
    if slash and ("." in head or ":" in head or head == "localhost"):
        return head
    return "docker.io"


def repull_risk(image: Image, record: PullRecord | None = None) -> RepullRisk:
    """What pulling `image` again would take: whether the runtime lists a repo digest a
    registry serves (not an `import-<date>@` name `ctr images import --digests` adds), the
    registry of the image's own name — its first tag, else its first such digest ("" with
    neither: an `import-<date>@` name points at no registry) — and the kubelet's pull record
    (`record`; None: the kubelet keeps none, `NOT_KEPT`)."""
    served = [d for d in image.repo_digests if not _IMPORT_NAME.match(d)]
    names = (*image.repo_tags, *served)
    return RepullRisk(
        digest=bool(served),
        registry=registry_of(names[0]) if names else "",
        record=record if record is not None else PullRecord(NOT_KEPT),
    )


def detect_images(
    images: Iterable[Image],
    containers: Iterable[Container],
    records: Mapping[str, ImageRecord],
    now: int,
    *,
    in_use: set[str] | None = None,
) -> dict[str, ImageRecord]:
    """The kubelet's `detectImages`: a record for each image of `images` — `first_detected`
    kept from `records`, else `now`; `last_used` `now` when a container uses it
    (`images_in_use(containers)`, or `in_use` when given), else kept (0 = never). Records of
    images no longer listed are dropped. Times in ns since the epoch."""
    used = images_in_use(containers) if in_use is None else in_use
    out: dict[str, ImageRecord] = {}
    for img in images:
        old = records.get(img.id)
        first = old.first_detected if old else now
        last = now if img.id in used else (old.last_used if old else 0)
        out[img.id] = ImageRecord(first, last)
    return out


def usage(capacity: int, available: int, filesystem: str = "") -> tuple[int, int]:
    """(usage percent, available clamped to capacity), in the kubelet's integer arithmetic;
    `capacity` and `available` in bytes.

    Raises `GCFailed` (exit 1) for capacity 0: the kubelet's "invalid capacity 0 on image
    filesystem", naming `filesystem` (its mountpoint) when given.
    """
    if available > capacity:
        available = capacity
    if capacity == 0:
        where = f" {filesystem}" if filesystem else ""
        raise GCFailed(f"invalid capacity 0 on image filesystem{where}")
    return 100 - (available * 100) // capacity, available


def plan_images(
    images: Iterable[Image],
    containers: Iterable[Container],
    records: Mapping[str, ImageRecord],
    policy: ImageGCPolicy,
    now: int,
    *,
    began: int,
    capacity: int | None = None,
    available: int | None = None,
    protected: Iterable[str] | Mapping[str, str] = (),
    filesystem: str = "",
    pinned_by: Mapping[str, str] | None = None,
) -> ImagePlan:
    """Plan the kubelet's image GC. Times are nanoseconds since the epoch.

    `records` are the remembered first-detected/last-used times by image ID; `began` is when
    collection started to be tracked (the kubelet's start; for kubegc the state store's first
    run), gating MaxAge. `capacity`/`available` are the image filesystem's bytes (statfs blocks
    and bavail), `filesystem` its mountpoint (named in errors); without the figures only MaxAge
    and `prune_unused` apply. `protected` are image IDs never to remove (the sandbox image):
    a mapping gives each one's reason (`SandboxImages.protected_ids`: which image, named
    where), an iterable of IDs keeps each as "the sandbox image". An image that cannot be
    pulled again (`unpullable_reason`) is kept unless `policy.allow_unpullable`. A pinned
    image is kept "pinned by the runtime", or with its reason in `pinned_by` (image ID →
    reason: kubegc's own pins, `policy.pins.own_pin_reasons`).
    Returns an `ImagePlan` with the updated `records`. Raises `GCFailed` for capacity 0, in
    every mode.
    """
    users = image_users(containers)
    in_use = set(users)
    protected_ids: dict[str, str] = (
        dict(protected)
        if isinstance(protected, Mapping)
        else dict.fromkeys(protected, "the sandbox image")
    )
    plan = ImagePlan()
    measured: tuple[int, int] | None = None
    if capacity is not None and available is not None:
        measured = usage(capacity, available, filesystem)
        plan.usage_percent = measured[0]
    # Detect: the last listing of an ID wins for size and pinned (the kubelet's behaviour).
    by_id: dict[str, Image] = {}
    for img in images:
        by_id[img.id] = img
    plan.records = detect_images(by_id.values(), (), records, now, in_use=in_use)

    candidates: list[ImageDecision] = []
    for iid, img in by_id.items():
        rec = plan.records[iid]
        if iid in in_use:
            holders = tuple(users[iid])
            reason = used_by_text(holders)
            plan.kept.append(ImageDecision(img, rec, KEEP_IN_USE, reason, False, holders))
        elif img.pinned:
            pin = (pinned_by or {}).get(iid, "pinned by the runtime")
            plan.kept.append(ImageDecision(img, rec, KEEP_PINNED, pin, False))
        elif iid in protected_ids:
            reason = protected_ids[iid]
            plan.kept.append(ImageDecision(img, rec, KEEP_PROTECTED, reason, False))
        elif matches_keep(img, policy.keep):
            plan.kept.append(ImageDecision(img, rec, KEEP_PROTECTED, "matches --keep", False))
        elif not policy.allow_unpullable and (why := unpullable_reason(img)):
            plan.kept.append(ImageDecision(img, rec, KEEP_UNPULLABLE, why, False))
        else:
            candidates.append(ImageDecision(img, rec, KEEP_NOT_NEEDED, "not needed", False))
    candidates.sort(key=lambda d: (d.record.last_used, d.record.first_detected, d.image.id))

    min_age_ns = int(policy.min_age * NS_PER_SECOND)
    max_age_ns = int(policy.max_age * NS_PER_SECOND)
    removed: set[str] = set()
    if max_age_ns > 0 and now - began > max_age_ns:
        for d in candidates:
            if now - d.record.last_used > max_age_ns:
                d.rule, d.remove = RULE_MAX_AGE, True
                d.reason = f"unused for more than MaxAge {format_go_duration(policy.max_age)}"
                removed.add(d.image.id)

    def eligible(d: ImageDecision) -> bool:
        if d.image.id in removed or d.record.last_used >= now:
            return False
        if now - d.record.first_detected < min_age_ns:
            d.rule = KEEP_MIN_AGE
            d.reason = f"first detected less than MinAge {format_go_duration(policy.min_age)} ago"
            return False
        return True

    if policy.prune_unused:
        for d in candidates:
            if eligible(d):
                d.rule, d.reason, d.remove = RULE_PRUNE, "unused (--prune-unused)", True
    elif policy.threshold_gc_disabled:
        plan.notes.append("image GC disabled: high threshold 100% and MaxAge 0, as the kubelet")
    elif capacity is not None and measured is not None:
        pct, avail = measured
        if pct >= policy.high_threshold:
            target = capacity * (100 - policy.low_threshold) // 100 - avail
            plan.bytes_to_free = target
            freed = 0  # like the kubelet, only what this walk frees counts toward the target
            for d in candidates:
                if not eligible(d):
                    continue
                d.rule, d.remove = RULE_SPACE, True
                d.reason = (
                    f"image filesystem {pct}% used >= high {policy.high_threshold}%; "
                    f"freeing to low {policy.low_threshold}%"
                )
                freed += d.image.size
                if freed >= target:
                    break
            if freed < target:
                plan.shortfall = target - freed
                plan.notes.append(
                    f"wanted to free {format_bytes(target)}, but the eligible images free only "
                    f"{format_bytes(freed)}"
                )
        else:
            plan.notes.append(
                f"image filesystem {pct}% used, below the high threshold "
                f"{policy.high_threshold}%: nothing to free for space"
            )
    young = [d for d in candidates if d.rule == KEEP_MIN_AGE and not d.remove]
    if young and not any(d.remove for d in candidates):
        wait = min(min_age_ns - (now - d.record.first_detected) for d in young)
        plan.notes.append(
            f"MinAge {format_go_duration(policy.min_age)} keeps {len(young)} unused image(s): "
            "kubegc counts an image's age from its own first sighting, as the kubelet from "
            f"its start; the first qualifies in {format_go_duration(max(wait, 0) / NS_PER_SECOND)}"
            " (--minimum-image-ttl-duration 0s does not wait)"
        )
    for d in candidates:
        (plan.remove if d.remove else plan.kept).append(d)
    if note := in_use_note(plan.kept):
        plan.notes.append(note)
    return plan


def sandbox_image_mismatch(
    kubelet: tuple[str, str] | None,
    runtime: Sequence[tuple[str, str]],
    images: Iterable[Image],
) -> str:
    """The warning when the kubelet's `--pod-infra-container-image` is not the runtime's
    sandbox image ("" when they agree, or either is unknown).

    `kubelet` is (reference, where it is given); `runtime` the sandbox images the runtimes name
    themselves (`SandboxImages.said`: (reference, where)); `images` what the runtime lists.
    They agree when a runtime's reference names the kubelet's (`reference_forms`), or both
    name one image the runtime lists (a tag and a digest of it).

    Why it matters (kubelet `image_gc_manager.go`): a kubelet before 1.29 counts the image of
    its `--pod-infra-container-image` as in use and keeps it from its image GC — not the
    runtime's sandbox image when that is another; from 1.29 the flag does nothing (removed in
    1.35) and the kubelet keeps only the images the runtime reports `pinned` (honoured since
    1.29, and 1.25.13, 1.26.8, 1.27.5, 1.28.1). So the runtime's sandbox image is safe from the
    kubelet's GC only while the runtime pins it; the warning says whether it does now."""
    if kubelet is None or not runtime:
        return ""
    ref, where = kubelet
    listed = list(images)

    def ids(r: str) -> set[str]:
        forms = reference_forms(r) | {r}
        return {i.id for i in listed if forms & {i.id, *i.repo_tags, *i.repo_digests}}

    kubelet_forms, kubelet_ids = reference_forms(ref) | {ref}, ids(ref)
    for theirs, _ in runtime:
        if kubelet_forms & (reference_forms(theirs) | {theirs}) or kubelet_ids & ids(theirs):
            return ""
    theirs, source = runtime[0]
    mine = ids(theirs)
    pinned = [i for i in listed if i.id in mine and i.pinned]
    if pinned:
        state = (
            f"the runtime pins {theirs} now, which keeps it from a kubelet's image GC since 1.29 "
            "(1.25.13, 1.26.8, 1.27.5, 1.28.1); an earlier kubelet may remove it"
        )
    elif mine:
        state = (
            f"the runtime does not pin {theirs}, so the kubelet's image GC may remove it, and "
            "new pods then wait for it to be pulled again (or fail where it cannot be)"
        )
    else:
        state = f"{theirs} is not on the node now: the next pod's sandbox pulls it"
    return (
        f"the kubelet's --pod-infra-container-image {ref} ({where}) is not the runtime's "
        f"sandbox image {theirs} ({source}): a kubelet before 1.29 keeps only {ref} from its "
        f"image GC, and from 1.29 the flag does nothing; {state}. Give the kubelet "
        f"--pod-infra-container-image {theirs}, or drop the flag (kubelet 1.35 refuses it) on "
        "a runtime that pins its sandbox image"
    )


#: The image GC settings: (kubegc option name, `ImageGCPolicy` field, KubeletConfiguration key).
IMAGE_GC_SETTINGS = (
    ("image_gc_high_threshold", "high_threshold", "imageGCHighThresholdPercent"),
    ("image_gc_low_threshold", "low_threshold", "imageGCLowThresholdPercent"),
    ("minimum_image_ttl_duration", "min_age", "imageMinimumGCAge"),
    ("image_maximum_gc_age", "max_age", "imageMaximumGCAge"),
)


@dataclass(frozen=True, slots=True)
class ImageGCSettings:
    """The resolved image GC settings: `values` by `ImageGCPolicy` field (percentages, ages
    in seconds), `names` by field (how a message names the setting: its flag, or the config
    key and file it came from, for `ImageGCPolicy.validate`), `origins` by kubegc option name
    (the flag, the kubelet config file, or `kubelet default`)."""

    values: dict[str, Any]
    names: dict[str, str]
    origins: dict[str, str]

    def provenance(self) -> list[str]:
        """One line per setting: `name = value (from origin)`, durations as Go writes them."""
        lines = []
        for option, fld, _ in IMAGE_GC_SETTINGS:
            value = self.values[fld]
            shown = value if "threshold" in option else format_go_duration(value)
            lines.append(f"{option} = {shown} (from {self.origins[option]})")
        return lines


def resolve_image_gc_settings(
    given: Mapping[str, Any],
    config: Mapping[str, Any],
    config_source: str,
    sources: Mapping[str, str] | None = None,
) -> ImageGCSettings:
    """Each image GC setting from `given` (kubegc option name → value of a flag given on the
    command line; durations as text), else from `config` (the kubelet config file's values,
    `KubeletConfig.image_gc`, read from `config_source`), else the kubelet's default (the
    `ImageGCPolicy` defaults: 85%, 80%, 2m, 0s). `sources` names, per option, the file that
    set it when that is not `config_source` (a drop-in: `KubeletConfig.sources`). Validation
    is left to `ImageGCPolicy.validate(settings.names)`. Raises `BadInput` for a flag's
    duration that does not parse."""

    defaults = ImageGCPolicy()
    values: dict[str, Any] = {}
    names: dict[str, str] = {}
    origins: dict[str, str] = {}
    for option, fld, key in IMAGE_GC_SETTINGS:
        flag = "--" + option.replace("_", "-")
        names[fld] = flag
        if option in given:
            raw, origins[option] = given[option], flag
        elif option in config:
            src = (sources or {}).get(option, config_source)
            raw, origins[option] = config[option], src
            names[fld] = f"{key} in {src}"
        else:
            raw, origins[option] = getattr(defaults, fld), "kubelet default"
        values[fld] = parse_duration(raw, flag=flag) if isinstance(raw, str) else raw
    return ImageGCSettings(values, names, origins)

"""`kubegc images pin|unpin`: write a `--keep` list into the runtime as pins, so that the
kubelet's own image GC keeps those images too.

The plan comes first (which images, which are left as they are and why); `--dry-run` stops
there, `--yes` acts, a terminal is asked. Acting takes the node lock, lists the images again
and plans again under it (an image pinned, unpinned or gone since the plan is skipped, one
newly matching is left for the next run), then labels every containerd record of each image
(`node.containerd.client`): pin sets containerd's pin label and kubegc's own
(`core.pins.OWN_PIN_LABEL`, the time of the pin); unpin plans from containerd's records
(listed once) and removes both labels from the records that carry kubegc's, keeping every
pin kubegc did not make — each record read again right before its write, and left alone
when it is no longer the record planned (`policy.pins.own_pin_changed`: made again, pointing
at another image, or without kubegc's label). unpin never plans an image the runtime keeps
for itself (`node.sandboximages.runtime_sandbox_images`: its sandbox and pinned images).
Only containerd 1.7 and later report pins through CRI: on any other runtime, or an older
containerd, nothing is changed and the run says so (exit 2).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from kubegc_cli.commands.edges import Ui, edges
from kubegc_cli.commands.flow import ActOptions, open_client
from kubegc_cli.core.errors import BadInput, RuntimeUnavailable
from kubegc_cli.core.model import RuntimeInfo
from kubegc_cli.core.pins import (
    DONE,
    FAILED,
    OWN_PIN_LABEL,
    PIN,
    PINNED_LABEL,
    PINNED_VALUE,
    SKIPPED,
    STILL_PINNED,
    UNPIN,
    PinAction,
    PinPlan,
    StoredImage,
)
from kubegc_cli.core.settings import Settings
from kubegc_cli.core.units import ns_to_rfc3339
from kubegc_cli.node.containerd.client import GONE, ContainerdImages
from kubegc_cli.node.sandboximages import runtime_sandbox_images
from kubegc_cli.node.state import AuditLog, check_state_dir, node_lock
from kubegc_cli.policy.pins import (
    check_patterns,
    own_pin_changed,
    own_pin_names,
    pinning_records,
    plan_pins,
    reads_pins,
    record_names,
    still_pinned_by,
)

if TYPE_CHECKING:
    from kubegc_cli.node.cri.client import CriClient

#: How long, in all, the runtime's CRI view is waited for to show what the records now say
#: (containerd's CRI follows its image events), once acted; and how often it is asked.
SETTLE_SECONDS = 2.0
SETTLE_POLL_SECONDS = 0.05


def pins_supported(info: RuntimeInfo, endpoint: str) -> None:
    """Nothing when the runtime `info` (its CRI Version) reads pins from containerd's label;
    `BadInput` (exit 2: nothing changed) naming the runtime otherwise: a runtime other than
    containerd (CRI-O, cri-dockerd have no such label), or a containerd older than 1.7."""
    if info.name != "containerd":
        raise BadInput(
            f"images pin is not supported on {info.name or 'this runtime'} {info.version} at "
            f"{endpoint}: only containerd reads pins from an image label; nothing was changed"
        )
    if not reads_pins(info):
        raise BadInput(
            f"images pin is not supported on containerd {info.version} at {endpoint}: its CRI "
            "reports pins (io.cri-containerd.pinned) from containerd 1.7 on, so the kubelet "
            "would not see them; nothing was changed"
        )


def pin_images(
    s: Settings,
    patterns: tuple[str, ...],
    op: str,
    act: ActOptions,
    ui: Ui,
    *,
    show: Callable[[PinPlan], None] | None = None,
) -> PinPlan:
    """`kubegc images pin` (`op` PIN) or `unpin` (UNPIN) of the images matching `patterns`
    (globs over tags and repo digests, as `--keep`). `show` renders the plan before a person
    is asked. Returns the plan with each action's result (`pinned`/`unpinned`, `skipped`,
    `failed`; for unpin `still-pinned`: kubegc's pin undone, the runtime still reporting the
    image pinned, and who pins it) and, once acted, whether the runtime reports each image
    pinned (`pinned_after`, CRI `ImageStatus`). Raises `BadInput` for bad patterns or a
    runtime that does not read pins (see `pins_supported`), `RuntimeUnavailable` when the
    runtime cannot be reached, `Busy` when another run holds the node lock."""
    check_patterns(patterns)
    if s.snapshot is not None:
        raise BadInput(f"images {op} works on the runtime, not a snapshot (drop --snapshot)")
    if act.dry_run and act.yes:
        raise BadInput("--dry-run and --yes contradict each other; give one")
    client = open_client(s, ui)
    try:
        pins_supported(client.check(), client.endpoint.display)
        plan, _ = _plan(s, client, patterns, op, ui)
        if act.dry_run or not plan.actions:
            plan.dry_run = act.dry_run  # (nothing to change is no dry run unless asked for)
            return plan
        if not act.yes:
            if not ui.interactive():
                ui.warn(f"not a terminal and no --yes: dry run only, nothing {DONE[op]} "
                        "(add --yes to act)")  # fmt: skip
                return plan
            if show is not None:
                show(plan)
            if not ui.confirm(f"{op.capitalize()} {len(plan.actions)} image(s)?"):
                ui.warn(f"declined; nothing {DONE[op]}")
                return plan
        check_state_dir(s.state_dir)
        with node_lock(s.state_dir, s.lock_timeout, host_root=s.host_root, warn=ui.warn):
            audit = AuditLog(s.state_dir, f"images {op}", edges().clock(), ui.warn, info=ui.info)
            try:
                _act(s, client, plan, op, ui, audit)
            finally:
                # (a row reads kind, id, rule, reason, result.value, error and bytes_freed,
                # which a PinAction has, though its results are not a removal's); a pin frees
                # no byte and measures no filesystem: its totals are 0 expected, none measured
                audit.finish(cast("list[Any]", plan.actions), totals=(0, None, []))
        return plan
    finally:
        client.close()


def _plan(
    s: Settings, client: CriClient, patterns: tuple[str, ...], op: str, ui: Ui
) -> tuple[PinPlan, dict[str, StoredImage]]:
    """The plan from the runtime's images now, and (for unpin; {} for pin) containerd's image
    records by name, listed once. An unpin keeps the images the runtime keeps for itself; it
    raises `RuntimeUnavailable` (nothing changed) when the runtime names its sandbox image
    in a form kubegc cannot read, or a config file of the runtime cannot be read, as that
    image is then unknown."""
    images = client.list_images()
    records: dict[str, StoredImage] = {}
    protected: dict[str, str] = {}
    if op == UNPIN:
        with ContainerdImages(client.endpoint, timeout=s.timeout) as ctd:
            records = ctd.list_records()
        kept = runtime_sandbox_images(client, s.host_root, s.runtime_config, ui.warn)
        if why := kept.status_error or (kept.warnings[0] if kept.warnings else ""):
            # (a config file that cannot be read may name a sandbox image kubegc cannot see)
            raise RuntimeUnavailable(
                f"{why}: the sandbox image the runtime keeps is unknown, so images unpin "
                "undoes no pin; nothing was changed"
            )
        protected = kept.protected_ids(images)
    plan = plan_pins(images, patterns, op, records=_labels(records), protected=protected)
    plan.source = client.endpoint.display
    return plan, records


def _act(s: Settings, client: CriClient, plan: PinPlan, op: str, ui: Ui, audit: AuditLog) -> None:
    """Under the node lock: plan again, then label each image still to change (pin: every
    record, containerd's label and kubegc's; unpin: both off the records with kubegc's, each
    only while it is still the record planned, `own_pin_changed`). Each image's audit row is
    written `in-flight` before its first write (`AuditLog.begin`): a run killed mid-image
    leaves a row saying so; the caller's `finish` writes the outcomes."""
    plan.dry_run = False
    again, records = _plan(s, client, plan.patterns, op, ui)
    fresh = {a.id: a for a in again.actions}
    by_name = _labels(records)  # (once: every action looks its records up in it)
    if op == PIN:
        labels = {PINNED_LABEL: PINNED_VALUE, OWN_PIN_LABEL: ns_to_rfc3339(edges().clock())}
    else:
        labels = {PINNED_LABEL: "", OWN_PIN_LABEL: ""}
    with ContainerdImages(client.endpoint, timeout=s.timeout) as ctd:
        for a in plan.actions:
            now = fresh.get(a.id)
            if now is None:
                a.result, a.error = SKIPPED, "changed since the plan (gone, or its pin changed)"
                continue
            if op == PIN:
                names, own = record_names(now.image), {}
            else:
                own = {n: records[n] for n in own_pin_names(now.image, by_name)}
                names = tuple(own)
            done: list[str] = []
            changed: list[str] = []
            audit.begin(cast("Any", a))  # (a PinAction has what a row reads)
            try:
                for n in names:  # (an unpin writes only while the record is the one planned)
                    check = partial(own_pin_changed, own[n]) if own else None
                    why = ctd.set_labels(n, labels, check=check)
                    if not why:
                        done.append(n)
                    elif why != GONE:
                        changed.append(why)
            except RuntimeUnavailable as exc:
                a.result, a.error = FAILED, str(exc)
                continue
            left = f"changed since the plan: {'; '.join(changed)}" if changed else ""
            if not done:
                a.result, a.error = SKIPPED, left or GONE
                continue
            a.result, a.names, a.error = DONE[op], tuple(done), left
            ui.info(f"{DONE[op]} {a.id}: {', '.join(done)}")
            if left:
                ui.warn(f"{a.id}: {left}; left alone")
        _settle(client, ctd, [a for a in plan.actions if a.result == DONE[op]], op, ui)


def _settle(
    client: CriClient, ctd: ContainerdImages, acted: list[PinAction], op: str, ui: Ui
) -> None:
    """Once labelled, ask the runtime (CRI `ImageStatus`) whether each image of `acted` is
    pinned now, and record its answer (`pinned_after`): the records are listed once more,
    and each image is asked until the runtime's answer agrees with them (pin: pinned; unpin:
    pinned while a record of it still carries containerd's pin) or `SETTLE_SECONDS` have
    passed in all. An unpinned image the runtime still reports pinned becomes `still-pinned`,
    saying who pins it (`still_pinned_by`); a pinned one it does not, says so. A runtime that
    does not answer leaves `pinned_after` None, with a warning."""
    if not acted:
        return
    records: dict[str, StoredImage] = {}
    if op == UNPIN:  # (a pin wants the image pinned, whatever its records say)
        try:
            records = ctd.list_records()
        except RuntimeUnavailable as exc:
            ui.warn(f"cannot list the image records again: {exc}")
    deadline = time.monotonic() + SETTLE_SECONDS
    for a in acted:
        want = op == PIN or bool(pinning_records(a.image, records))
        try:
            while True:
                now = client.image_status(a.id)
                got = None if now is None else now.pinned
                if got is None or got == want or time.monotonic() >= deadline:
                    break
                time.sleep(SETTLE_POLL_SECONDS)
        except RuntimeUnavailable as exc:
            ui.warn(f"{a.id}: cannot ask the runtime whether it is pinned now: {exc}")
            continue
        a.pinned_after = got
        said = ""
        if op == UNPIN and got:
            a.result, said = STILL_PINNED, still_pinned_by(a.image, records)
        elif op == PIN and got is False:
            said = "the runtime does not report it pinned (yet)"
        elif got is None:
            said = "the runtime has no such image any more"
        if said:
            a.error = "; ".join(filter(None, [a.error, said]))
            ui.warn(f"{a.id}: {'still pinned: ' if got else ''}{said}")


def _labels(records: dict[str, StoredImage]) -> dict[str, Mapping[str, str]]:
    """containerd's records by name → labels (what the planner reads)."""
    return {name: r.labels for name, r in records.items()}


def exit_failed(plan: PinPlan) -> bool:
    """True when an action failed (the run exits 1)."""
    return any(a.result == FAILED for a in plan.actions)

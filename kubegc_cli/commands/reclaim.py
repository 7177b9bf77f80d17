"""`kubegc reclaim`: everything kubegc may safely remove on this node, as one plan, one
confirmation, one node lock — then the disk before and after, measured.

The plan is made by the single commands' own planners, on one observation each:
`commands.gc.plan_all` (dead containers, sandboxes, pod log directories: `gc all`),
`commands.gc.plan_images_on` (unused images as `gc images --prune-unused` plans them, with the
state store's image records and protections), `commands.residue.scan_for_clean` (the residue
`residue clean` cleans, of the kinds in `RESIDUE_KINDS`: pod log directories are `gc all`'s
here). It is carried out by their executors, in the kubelet's order (`policy.reclaim`), each
object re-checked right before it is removed, with one audit row per object.

Bytes are counted as by every command (`core.plan`): each row's are what removing it is
expected to free (`planned_bytes`: a container's writable layer and logs, a directory's
allocated blocks, an image's size as CRI reports it — an estimate: removing an image also
frees its unpacked layers, and not the layers images that stay share). The disk figures are
measured: statvfs (`node.host.fs.fs_stats`) of each filesystem the plan touches, when
planned (for `--until`), and right before and after acting (`commands.flow.carry_out`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubegc_cli.commands.edges import Ui
from kubegc_cli.commands.flow import (
    ActOptions,
    Mode,
    carry_out,
    decide_mode,
    fs_entries,
    load_pod_inventory,
    may_act,
    open_client,
)
from kubegc_cli.commands.gc import (
    check_image_inputs,
    forget_removed_images,
    plan_all,
    plan_images_on,
    pod_logs_root_of,
)
from kubegc_cli.commands.residue import (
    DEFAULT_ROOT_DIR,
    ResidueOptions,
    ResidueScan,
    clean_stage,
    host_dir,
    scan_for_clean,
)
from kubegc_cli.core.errors import BadInput, RuntimeUnavailable
from kubegc_cli.core.model import ContainerState
from kubegc_cli.core.plan import Plan, Result, expected_bytes
from kubegc_cli.core.residue import (
    CNI_IP,
    EARLIER_INSTANCE_LOG,
    LOG_ROTATION_TYPES,
    NETNS,
    POD_CGROUP,
    POD_DIR,
    ROTATED_PAST_COUNT,
    ROTATION_LEFTOVER,
)
from kubegc_cli.core.settings import Settings
from kubegc_cli.core.units import format_bytes
from kubegc_cli.node.host.fs import FsStats, fs_stats
from kubegc_cli.node.host.kubelet import kubelet_config_once
from kubegc_cli.policy.containers import ContainerGCPolicy
from kubegc_cli.policy.images import KEEP_IN_USE, ImageGCPolicy
from kubegc_cli.policy.reclaim import ACT_ORDER, Target, cut_at
from kubegc_cli.policy.scope import Scope

if TYPE_CHECKING:
    from kubegc_cli.node.cri.client import CriClient

#: The residue kinds a reclaim run cleans (the others are `gc all`'s objects, never safe, or
#: free nothing: a live log's rotation, a stale link).
RESIDUE_KINDS = (
    POD_DIR, NETNS, CNI_IP, POD_CGROUP, ROTATED_PAST_COUNT, ROTATION_LEFTOVER, EARLIER_INSTANCE_LOG,
)  # fmt: skip
PLAN_KIND = "ReclaimPlan"
#: Which filesystem each action kind frees bytes on: its role (see `Plan.filesystems`); a
#: container frees its log there and its writable layer on imagefs (`apply_target`).
ROLE_OF_KIND = {
    "container": "logs",
    "sandbox": "logs",
    "pod-log-dir": "logs",
    "log-symlink": "logs",
    "finding": "nodefs",
    "image": "imagefs",
}
ROLE_OF_SIGNAL = {"nodefs.available": "nodefs", "imagefs.available": "imagefs"}


def role_of(a: Any) -> str:
    """The role of the filesystem action `a` frees bytes on (`ROLE_OF_KIND`; a container
    log rotation finding's files are on the pod log root's)."""
    if a.kind == "finding" and a.type in LOG_ROTATION_TYPES:
        return "logs"
    return ROLE_OF_KIND.get(a.kind, "nodefs")


#: Kind group names in the table's totals, in acting order.
GROUPS = (
    ("container", ("container",)),
    ("sandbox", ("sandbox",)),
    ("pod-log", ("pod-log-dir", "log-symlink")),
    ("residue", ("finding",)),
    ("image", ("image",)),
)


@dataclass(frozen=True, slots=True)
class ReclaimOptions:
    """What `kubegc reclaim` plans with: the kubelet's container GC policy, the image GC
    policy (`prune_unused` forced on), the sandbox image to protect besides the runtime's,
    host directories (None: as the single commands default them), the residue kinds to clean
    (of `RESIDUE_KINDS`; empty: all of them) and the space `target` (None: everything)."""

    containers: ContainerGCPolicy = field(default_factory=ContainerGCPolicy)
    images: ImageGCPolicy = field(default_factory=lambda: ImageGCPolicy(prune_unused=True))
    pod_infra_image: str | None = None
    root_dir: str | None = None
    pod_logs_dir: str | None = None
    cni_dir: str | None = None
    residue_kinds: frozenset[str] = frozenset()
    target: Target | None = None


@dataclass(slots=True)
class ReclaimPlan(Plan[Any]):
    """The plan of `kubegc reclaim`: actions of every kind, in acting order.

    `filesystems` (`Plan`'s) are measured when planned, and again right before and after
    acting. `target`: the `--until`/`--bytes` target and its figures (None without one)."""

    target: dict[str, Any] | None = None

    def by_kind(self) -> list[dict[str, Any]]:
        """Per kind group (`GROUPS`): `kind`, `count` (actions not held back), `bytes`
        (the bytes expected of those that go: `core.plan.expected_bytes`), `held_back`,
        `removed`, `freed` (bytes removed)."""
        out = []
        for name, kinds in GROUPS:
            rows = [a for a in self.actions if a.kind in kinds]
            going = [a for a in rows if a.result is not Result.HELD_BACK]
            out.append(
                {
                    "kind": name,
                    "count": len(going),
                    "bytes": expected_bytes(rows),
                    "held_back": len(rows) - len(going),
                    "removed": sum(1 for a in rows if a.result is Result.REMOVED),
                    "freed": sum(a.bytes_freed for a in rows),
                }
            )
        return out

    def to_dict(self, *, rows_as_json: bool = False) -> dict[str, Any]:
        doc = Plan.to_dict(self, rows_as_json=rows_as_json)
        doc["by_kind"] = self.by_kind()
        doc["target"] = self.target
        return doc


def reclaim(s: Settings, opts: ReclaimOptions, act: ActOptions, ui: Ui) -> ReclaimPlan:
    """`kubegc reclaim`: plan everything kubegc may safely remove, show it, ask once, act in
    the kubelet's order, measure the disk after.

    The question holds no node lock: after a person's yes the run takes it, plans every kind
    again from a new observation and acts only on what is still selected of what was asked
    about (`commands.flow.may_act`, `recheck_after_question`).

    Raises `BadInput` (bad options, `--snapshot`, a pod source that cannot be used) and
    `RuntimeUnavailable` (the runtime, a log root or a filesystem cannot be read) before
    anything is removed; `StateUnavailable` as `gc images`. Returns the plan with results.
    """
    if s.snapshot is not None:
        raise BadInput("reclaim reads the node's directories and runtime; --snapshot holds none")
    with kubelet_config_once():  # every kind plans on one reading of the kubelet's config
        return _reclaim(s, opts, act, ui)


def _reclaim(s: Settings, opts: ReclaimOptions, act: ActOptions, ui: Ui) -> ReclaimPlan:
    """`reclaim` once `--snapshot` is ruled out (see `reclaim`)."""
    check_image_inputs(s, opts.images, None)
    root_dir = host_dir(opts.root_dir or DEFAULT_ROOT_DIR, "--root-dir")
    pods = load_pod_inventory(s, ui, needs_source=opts.containers.include_terminated_pods)
    mode = decide_mode(s, act, ui)
    logs_root = pod_logs_root_of(s, opts.pod_logs_dir)
    client = open_client(s, ui)
    scan: ResidueScan | None = None
    try:
        gc = plan_all(s, opts.containers, Scope(), logs_root, client, pods, act, ui)
        images = plan_images_on(
            s, opts.images, client, ui, may_remove=mode in (Mode.ACT, Mode.ASK),
            pod_infra_image=opts.pod_infra_image, concurrency=act.concurrency, root_dir=root_dir,
        )  # fmt: skip
        residue = ResidueOptions(
            kinds=opts.residue_kinds or frozenset(RESIDUE_KINDS), root_dir=root_dir,
            pod_logs_dir=opts.pod_logs_dir, cni_dir=opts.cni_dir,
        )  # fmt: skip
        scan = scan_for_clean(s, ui, residue)
        paths = {"nodefs": root_dir, "logs": logs_root, "imagefs": images.imagefs}
        before = {role: fs_stats(s.host_root, path) for role, path in paths.items()}
        layers = images.containerfs  # (from the images' ImageFsInfo: not asked again)
        if layers:  # where writable layers live: the same filesystems, dry run or not
            try:
                before["containerfs"] = fs_stats(s.host_root, layers)
                paths["containerfs"] = layers
            except RuntimeUnavailable as exc:  # (not one the plan needs: only measured)
                ui.info(f"the container filesystem not measured: {exc}")
        plan = _assemble([gc.plan, images.plan, scan.plan], before, s)
        if opts.target is not None:
            apply_target(plan, opts.target, before, lambda: running_layers_of(client))
        noted = len(images.plan.notes)

        def again() -> Plan[Any]:  # after a person's yes, under the node lock
            fresh = plan_all(s, opts.containers, Scope(), logs_root, client, pods, act, ui).plan
            unused = plan_images_on(
                s, opts.images, client, ui, may_remove=True, pod_infra_image=opts.pod_infra_image,
                concurrency=act.concurrency, root_dir=root_dir,
            ).plan  # fmt: skip
            rescan = scan_for_clean(s, ui, residue)
            if rescan.client is not None:
                rescan.client.close()
            return _assemble([fresh, unused, rescan.plan], before, s)

        acting = may_act(mode, plan, ui, "object", act, again=again)
        images.save(acting or mode is Mode.ACT)  # --yes, or a person said yes: the run acts
        plan.notes.extend(images.plan.notes[noted:])
        if acting:
            stages = [*gc.stages(), clean_stage(s, scan, act, ui), *images.stages()]
            carry_out(s, plan, stages, "reclaim", ui, measure=paths)
            forget_removed_images(s, plan, ui)
            target_after(plan)
        return plan
    finally:
        client.close()
        if scan is not None and scan.client is not None:
            scan.client.close()


def _assemble(plans: list[Plan[Any]], before: dict[str, FsStats], s: Settings) -> ReclaimPlan:
    """One plan of `plans`' actions in acting order (`ACT_ORDER`, each kind in its planner's
    order), their kept objects and notes, and the filesystems touched, as measured `before`."""
    order = {k: i for i, k in enumerate(ACT_ORDER)}
    actions = [a for p in plans for a in p.actions]
    actions.sort(key=lambda a: order.get(a.kind, len(order)))  # (stable: planners' order kept)
    notes: list[str] = []
    for p in plans:
        notes += [n for n in p.notes if n not in notes]
    plan = ReclaimPlan(
        kind=PLAN_KIND,
        policy={p.kind: p.policy for p in plans},
        now=plans[0].now,
        actions=actions,
        kept=[k for p in plans for k in p.kept],
        notes=notes,
        out_of_scope=sum(p.out_of_scope for p in plans),
        source=plans[0].source,
    )
    plan.filesystems = fs_entries(before)
    return plan


def target_after(plan: ReclaimPlan) -> None:
    """The target's figures after acting, from the filesystems measured (`carry_out`):
    `available_after` and `met_after` of its signal's filesystem (None when not measured)."""
    if plan.target is not None and plan.target.get("signal"):
        role = ROLE_OF_SIGNAL[plan.target["signal"]]
        entry = next((e for e in plan.filesystems if role in e["roles"]), None)
        after = entry["available_after"] if entry is not None else None
        plan.target["available_after"] = after
        plan.target["met_after"] = (
            None if after is None else after >= plan.target["wanted_available"]
        )


def apply_target(
    plan: ReclaimPlan,
    target: Target,
    before: dict[str, FsStats],
    running_layers: Callable[[], int | None] = lambda: None,
) -> None:
    """Cut `plan` at `target` (`policy.reclaim.cut_at`): the planned actions not taken are
    held back, naming the target; `plan.target` gets the figures, and when the plan cannot
    meet it, `plan.shortfall` the bytes short and a note says what is in the way
    (`running_layers()`: the writable layers of the running containers, bytes, None when
    unknown; asked only then)."""
    role = ROLE_OF_SIGNAL.get(target.signal or "")
    fs = before[role] if role else None
    devices = {r: st.device for r, st in before.items()}

    def counts(a: Any) -> int:
        size: int = a.planned_bytes
        if fs is None:
            return size
        if a.kind == "container":  # its log on the log root, its writable layer on imagefs
            logs = (a.container.log_bytes or 0) if devices["logs"] == fs.device else 0
            return logs + ((a.layer_bytes or 0) if devices["imagefs"] == fs.device else 0)
        return size if devices[role_of(a)] == fs.device else 0

    needed = target.needed(fs.capacity, fs.available) if fs else target.amount
    planned = [a for a in plan.actions if a.result is Result.PLANNED]
    cut = cut_at(planned, needed, counts)
    why = f"held back: {target.text} is met without it"
    for a in planned:
        if a.id not in cut.taken:
            a.result, a.error = Result.HELD_BACK, why
    plan.target = {
        "text": target.text,
        "signal": target.signal,
        "needed": needed,
        "expected": cut.expected,
        "plannable": cut.plannable,
        "met": cut.met,
    }
    if fs is not None:
        plan.target.update(
            path=fs.path,
            capacity=fs.capacity,
            available=fs.available,
            wanted_available=fs.available + needed,
            available_after=None,
            met_after=None,
        )
    if needed == 0:
        plan.notes.append(f"{target.text} is already met: nothing needs to go")
    elif cut.met:
        plan.notes.append(
            f"{target.text}: {format_bytes(needed)} needed, {format_bytes(cut.expected)} "
            f"expected from {len(cut.taken)} object(s), cheapest to lose first"
        )
    else:
        plan.shortfall = needed - cut.expected
        here = fs is None or devices["imagefs"] == fs.device  # (writable layers: on imagefs)
        in_the_way = _in_the_way(plan, counts, running_layers() if here else NOT_HERE)
        plan.target["in_the_way"] = in_the_way
        shown = ", ".join(f"{what} ({format_bytes(n)})" if n is not None else what
                          for what, n in in_the_way.items())  # fmt: skip
        plan.notes.append(
            f"{target.text} cannot be met: {format_bytes(cut.plannable)} plannable, "
            f"{format_bytes(needed)} needed; the rest is {shown}"
        )


#: `_in_the_way`'s `layers` when the writable layers are not on the target's filesystem.
NOT_HERE = -1


def _in_the_way(plan: ReclaimPlan, counts: Any, layers: int | None) -> dict[str, int | None]:
    """What no reclaim frees on the target's filesystem, by what (bytes; None when unknown):
    the images kept in use, the other images kept (pinned, the sandbox image, --keep, MinAge),
    the running containers' writable layers (`layers`; `NOT_HERE`: not on that filesystem),
    and pod data and other files (`kubegc df` breaks them down)."""
    kept_images = [k for k in plan.kept if k.kind == "image" and counts(k) > 0]
    in_use = sum(counts(k) for k in kept_images if k.rule == KEEP_IN_USE)
    other = sum(counts(k) for k in kept_images if k.rule != KEEP_IN_USE)
    out: dict[str, int | None] = {}
    if in_use:
        out["images in use"] = in_use
    if other:
        out["images kept (pinned, the sandbox image, --keep or younger than MinAge)"] = other
    if layers != NOT_HERE:
        out["running containers' writable layers"] = layers
    dead = sum(1 for k in plan.kept if k.kind == "container")
    if dead:
        out[f"{dead} dead container(s) the kubelet's rules keep"] = None
    out["pod data and other files ('kubegc df' shows them)"] = None
    return out


def running_layers_of(client: CriClient) -> int | None:
    """The writable layers of the containers running now (CRI `ListContainerStats`), bytes;
    None when the runtime does not say."""
    try:
        sizes = client.writable_layers()
        running = {c.id for c in client.list_containers() if c.state is ContainerState.RUNNING}
    except RuntimeUnavailable:
        return None
    known = [sizes[c][0] for c in running if c in sizes]
    if not running:
        return 0
    if not known or any(b is None for b in known):
        return None
    return sum(b or 0 for b in known)

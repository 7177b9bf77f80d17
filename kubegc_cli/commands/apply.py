"""`kubegc apply FILE`: carry out exactly the plan a dry run saved with `--plan-out FILE`
(the file: `kubegc_cli.node.planfile`), and `save_plan`, which writes it.

The file is untrusted input: whatever it says, nothing is removed that the node as it is now
does not allow. `load_saved_plan` refuses what no plan could hold (`node.planfile`);
`apply_plan` also refuses pod log directories that are not direct children of the current
podLogsDir (the kubelet config, or `--pod-logs-dir`). Then, against the runtime's fresh
inventory (`recheck_saved_plan`), every object is re-derived from the node, never taken from
the file:

- a container is the runtime's (labels, state, log path from `ContainerStatus`); gone,
  running or re-created (creation time differs) → skipped;
- a sandbox is the runtime's; gone, re-created or READY → skipped; `older-sandbox` only
  while a newer sandbox of its pod exists;
- `deleted-pod` / `terminated-pod` actions (containers, sandboxes, pod log directories) only
  when the pod source given to `apply` says so now (none given → skipped);
- the container guard is re-applied to a fresh list (`--match-kubelet` on `apply` turns it
  off; the file cannot), also to `terminated-pod` removals of a pod that still exists
  (`still_there`) unless `apply --include-terminated-pods`; such a pod's sandbox stays
  unless `apply --include-terminated-pods` (the file's `include_terminated_pods` counts for
  nothing);
- a pod log directory is `<podLogsDir>/<name>` on this host, skipped while the runtime has a
  container of its UID; a legacy link is `/var/log/containers/<name>`, skipped unless its
  container is gone or exited (as `gc logs` judges it);
- an image is the runtime's; pinned, the sandbox image (the runtime's now, or as saved),
  `--keep` or `--pod-infra-container-image` as saved, matching the config file's
  `gc.images.keep` now, used by a container (named), or one that cannot be pulled again
  (`policy.images.unpullable_reason`) without `apply --allow-unpullable` → skipped.

The executors then re-check each object right before its removal, as for the gc commands.
"""

from __future__ import annotations

import copy
import fnmatch
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kubegc_cli.commands.edges import Ui, edges
from kubegc_cli.commands.flow import (
    ActOptions,
    Mode,
    Stage,
    add_writable_layers,
    carry_out,
    decide_mode,
    load_pod_inventory,
    log_stages,
    may_act,
    names_added,
    open_client,
    runtime_fs_paths,
)
from kubegc_cli.commands.gc import forget_removed_images, pod_logs_root_of
from kubegc_cli.core.errors import BadInput, SandboxImageUnreadable
from kubegc_cli.core.model import (
    Container,
    ContainerState,
    NodeSnapshot,
    SandboxState,
    reference_forms,
)
from kubegc_cli.core.plan import GONE, POD_RULES, Plan, Result
from kubegc_cli.core.podlogs import container_id_from_link
from kubegc_cli.core.pods import NO_POD_SOURCE, PodInventory, against_runtime
from kubegc_cli.core.settings import Settings
from kubegc_cli.core.units import format_bytes, ns_to_rfc3339
from kubegc_cli.node.execute.actions import (
    ContainerRemover,
    ImageRemover,
    LogRemover,
    SandboxRemover,
)
from kubegc_cli.node.host.kubelet import CONTAINER_LOGS_DIR, kubelet_config_for
from kubegc_cli.node.host.logs import LogRoots
from kubegc_cli.node.host.mounts import MountTable
from kubegc_cli.node.host.podlogs import pod_log_dir_usage
from kubegc_cli.node.observe import observe_node
from kubegc_cli.node.planfile import LOG_KINDS, load_saved_plan, write_plan_file
from kubegc_cli.node.sandboximages import runtime_sandbox_images
from kubegc_cli.policy.containers import ContainerGCPolicy, recheck_guard
from kubegc_cli.policy.images import image_users, unpullable_reason, used_by_text
from kubegc_cli.policy.logs import link_state


def save_plan(plan: Plan[Any], path: Path, s: Settings) -> None:
    """`--plan-out FILE`: write `plan` for a later `kubegc apply` (`node.planfile`), stamped
    with the edges' clock. Raises `BadInput` naming the path when it cannot be written."""
    write_plan_file(plan, path, s, saved_at=edges().clock())


def _skip(a: Any, why: str) -> None:
    a.result, a.error = Result.SKIPPED, why


def pod_rule_refusal(rule: str, uid: str, pods: PodInventory) -> str:
    """Why a removal the plan made for a deleted (`deleted-pod`) or terminated
    (`terminated-pod`) pod may not happen now ("" when it may, or for another rule): the
    pod source given now must say so; without one no pod is treated as gone."""
    if rule not in POD_RULES:
        return ""
    if not pods.known:
        return (
            f"no pod source to re-check that pod {uid or '(no UID)'} is gone (give apply "
            "--pods-file, or a kubeconfig for the API)"
        )
    if rule == "deleted-pod" and not pods.is_deleted(uid):
        return f"pod {uid or '(no UID)'} is not gone by the pod source ({pods.source}) now"
    if rule == "terminated-pod" and not pods.is_terminated(uid):
        return f"pod {uid or '(no UID)'} is neither gone nor terminated by {pods.source} now"
    return ""


def link_refusal(name: str, containers: Iterable[Container]) -> str:
    """Why the dangling legacy link `name` may not go with `containers` as the runtime has
    them now ("" when it may), as `gc logs` judges it: a name without a container ID, or a
    container that is gone or exited, may go."""

    cid = container_id_from_link(name)
    state = link_state(cid, containers) if cid else ""
    if state in ("", ContainerState.EXITED.value):
        return ""
    if state == "none":
        return f"container ID {cid} matches several containers now"
    return f"its container is {state} now"


def still_there(plan: Plan[Any], pods: PodInventory) -> frozenset[str]:
    """IDs of the plan's planned `terminated-pod` removals whose pod still exists now (the pod
    source does not say it is deleted): kubegc's guard holds their newest dead container of
    each evict unit, and their sandboxes stay, unless `apply` is given the opt-in (the file's
    `include_terminated_pods` counts for nothing)."""
    return frozenset(
        a.id
        for a in plan.actions
        if a.rule == "terminated-pod"
        and a.result is Result.PLANNED
        and a.kind in ("container", "sandbox")
        and not pods.is_deleted(a.container.pod_uid if a.kind == "container" else a.sandbox.uid)
    )


def recheck_saved_plan(
    plan: Plan[Any],
    snap: NodeSnapshot,
    pods: PodInventory,
    *,
    host_root: Path,
    pod_logs_root: str,
    protected: Iterable[str] = (),
    keep: Iterable[str] = (),
    match_kubelet: bool = False,
    include_terminated_pods: bool = False,
    allow_unpullable: bool = False,
) -> None:
    """Re-derive every planned action of a saved plan from the node as it is now and skip
    (with the reason) what the node does not allow; see the module doc.

    `snap` is the runtime's fresh inventory (containers with status, and sandboxes and images
    when the plan has such actions); `pods` the pod source given now; `pod_logs_root` the
    current podLogsDir (a host path; `load_saved_plan` and `apply_plan` have refused pod log
    directories elsewhere); `protected` image IDs, tags or digests never to remove; `keep`
    glob patterns of the config file in force now (`gc.images.keep`), which protect as the
    saved `--keep` patterns do. `match_kubelet`, `include_terminated_pods` and
    `allow_unpullable` are `apply`'s own flags: what the file says of them counts for nothing.
    Objects in the plan are replaced by the runtime's; log actions get their local paths
    re-made under `host_root` and their bytes re-measured. An object changed since the plan
    is skipped: an image with a name the plan did not show (removing it would take that name
    too), a pod log directory holding more than the plan counted (with the logs of the plan's
    containers of that pod) or written to after the plan observed the node (its tree's newest
    mtime or ctime later than the plan's time). Reads the log directories' sizes and times,
    nothing else.
    """

    todo = [a for a in plan.actions if a.result is Result.PLANNED]
    containers = {c.id: c for c in snap.containers}
    for a in (a for a in todo if a.kind == "container"):
        c = containers.get(a.id)
        if c is None:
            _skip(a, GONE)
        elif c.state is ContainerState.RUNNING:
            _skip(a, "running now; no longer garbage")
        elif c.created_at != a.container.created_at:
            _skip(a, "changed since the plan (creation time differs)")
        elif why := pod_rule_refusal(a.rule, c.pod_uid, pods):
            _skip(a, why)
        else:
            a.container, a.stop_first = c, c.state is ContainerState.UNKNOWN
    existing = frozenset() if include_terminated_pods else still_there(plan, pods)
    mine = [a for a in plan.actions if a.kind == "container"]
    guarded: Plan[Any] = Plan(kind="ContainerGCPlan", policy={}, now=plan.now, actions=mine)
    guard = ContainerGCPolicy(match_kubelet=match_kubelet)
    recheck_guard(guarded, snap.containers, guard, also=existing)

    sandboxes = {sb.id: sb for sb in snap.sandboxes}
    for a in (a for a in todo if a.kind == "sandbox"):
        sb = sandboxes.get(a.id)
        if sb is None:
            _skip(a, GONE)
        elif sb.created_at != a.sandbox.created_at:
            _skip(a, "changed since the plan (creation time differs)")
        elif sb.state is SandboxState.READY:
            _skip(a, "READY now; no longer garbage")
        elif a.rule == "older-sandbox" and not any(
            o.uid == sb.uid and o.id != sb.id and o.created_at > sb.created_at
            for o in snap.sandboxes
        ):
            _skip(a, "now the newest sandbox of its pod")
        elif why := pod_rule_refusal(a.rule, sb.uid, pods):
            _skip(a, why)
        elif (
            a.rule == "terminated-pod"
            and not include_terminated_pods
            and not pods.is_deleted(sb.uid)
        ):
            _skip(a, f"pod {sb.uid} still exists (terminated, not deleted); apply "
                     "--include-terminated-pods removes its sandbox")  # fmt: skip
        else:
            a.sandbox = sb

    going = {a.id for a in plan.actions if a.kind == "container" and a.result is Result.PLANNED}
    left = [c for c in snap.containers if c.id not in going]
    live_uids = {c.pod_uid for c in left if c.pod_uid}
    # both directories resolved as the host resolves them, as `gc logs` lists them
    roots = LogRoots(host_root, pod_logs_root or "/", CONTAINER_LOGS_DIR)
    # the saved logs of the plan's containers, by pod: a pod log directory's saved bytes
    # leave them out when the plan removes those containers first (`gc all`)
    logs_of: dict[str, int] = {}
    saved_ns = plan.now  # when the plan observed the node (ns): a later write is a change
    for c in (a.container for a in plan.actions if a.kind == "container"):
        logs_of[c.pod_uid] = logs_of.get(c.pod_uid, 0) + (c.log_bytes or 0)
    for a in (a for a in todo if a.kind in LOG_KINDS):
        name = os.path.basename(a.path)
        if a.kind == "log-symlink":
            links = roots.links_pin  # (resolved and opened within --timeout)
            if links.stalled or not links.path:
                _skip(a, f"{links.stalled or CONTAINER_LOGS_DIR + ' is in a symlink loop'}; left")
                continue
            a.local_path = os.path.join(links.path, name)
            if why := link_refusal(name, left):
                _skip(a, why)
            continue
        pin = roots.pin
        if pin.stalled:
            _skip(a, f"podLogsDir {pin.stalled}; left")
            continue
        if not pin.path:
            _skip(a, f"podLogsDir {pod_logs_root} resolves to the host's / (or loops); left")
            continue
        a.local_path = os.path.join(pin.path, name)
        if why := pod_rule_refusal(a.rule, a.pod_uid, pods):
            _skip(a, why)
        elif a.pod_uid in live_uids:
            _skip(a, "the runtime has containers of it now")
        elif (usage := pod_log_dir_usage(a.local_path)) is None:
            _skip(a, GONE)
        elif (size := usage.bytes) > a.bytes + logs_of.get(a.pod_uid, 0):  # grown since the plan
            _skip(a, f"changed since the plan: {format_bytes(a.bytes)} then (its containers' "
                     f"logs aside), {format_bytes(size)} now; plan again")  # fmt: skip
        elif saved_ns and usage.changed_ns > saved_ns:  # written to after the plan was made
            at = ns_to_rfc3339(usage.changed_ns)
            _skip(a, f"changed since the plan: written to at {at}, after the plan; plan again")
        else:
            a.bytes, a.changed_ns = size, usage.changed_ns

    images = {i.id: i for i in snap.images}
    refs = set(protected)
    users = image_users(snap.containers)
    saved_keep = plan.policy.get("keep")  # the saved --keep patterns: they only protect
    patterns = saved_keep if isinstance(saved_keep, list) else []
    saved_patterns = [k for k in patterns if isinstance(k, str) and k.strip()]
    keep_now = [k for k in keep if k.strip()]
    for a in (a for a in todo if a.kind == "image"):
        img = images.get(a.id)
        names = (*img.repo_tags, *img.repo_digests) if img is not None else ()
        if img is None:
            _skip(a, GONE)
        elif img.pinned:
            _skip(
                a,
                "pinned now (the runtime's ImageStatus: by the runtime, a person or "
                "kubegc images pin)",
            )
        elif refs & {img.id, *names}:
            _skip(a, "the sandbox image")
        elif any(fnmatch.fnmatchcase(n, k) for n in names for k in saved_patterns):
            _skip(a, "matches --keep")
        elif any(fnmatch.fnmatchcase(n, k) for n in names for k in keep_now):
            _skip(a, "matches the config file's gc.images.keep")
        elif img.id in users:
            _skip(a, f"{used_by_text(users[img.id])} now")
        elif not allow_unpullable and (never := unpullable_reason(img)):
            _skip(a, f"it {never}; apply --allow-unpullable removes it")
        elif added := names_added(a.image, img):
            # removing it would take names nobody saw in the plan
            _skip(a, f"changed since the plan: now also named {', '.join(added)}")
        else:
            a.image = img


def apply_plan(
    s: Settings,
    path: Path,
    act: ActOptions,
    ui: Ui,
    *,
    pod_logs_dir: str | None = None,
    match_kubelet: bool = False,
    include_terminated_pods: bool = False,
    allow_unpullable: bool = False,
    keep: tuple[str, ...] = (),
) -> Plan[Any]:
    """`kubegc apply FILE`: carry out a saved plan (see the module doc), under the node lock,
    stage by stage in the kubelet's order (containers, sandboxes, logs, images), writing the
    audit log as `apply` with the time it acted.

    `pod_logs_dir` (a host path) overrides the kubelet config's podLogsDir for pod log
    directories; `match_kubelet` turns the container guard off; `include_terminated_pods`
    lets the newest records and the sandboxes of terminated pods that still exist go;
    `allow_unpullable` lets images that cannot be pulled again go; `keep` (the config file's
    `gc.images.keep`) protects images besides the saved `--keep`; `act`'s caps hold back what
    they do not allow (on top of what the plan held back). Raises `BadInput` for an unusable
    file (also one naming pod log directories outside podLogsDir) or `--snapshot`,
    `RuntimeUnavailable` when the runtime cannot be reached, `Busy` when another run holds
    the lock. Returns the plan with results (all as re-checked for a dry run).
    """

    if s.snapshot is not None:
        raise BadInput("apply acts on the node; --snapshot cannot be given")
    plan, saved = load_saved_plan(path, s)
    plan.notes.append(
        f"saved plan of '{saved.get('command')}' from {saved.get('saved_at', '?')} "
        f"({path}); each object is re-checked against the node now and right before its removal"
    )
    todo = [a for a in plan.actions if a.result is Result.PLANNED]
    kinds = {a.kind for a in todo}
    root = ""
    if kinds & set(LOG_KINDS):
        root = pod_logs_root_of(s, pod_logs_dir)
        for a in todo:
            if a.kind == "pod-log-dir" and os.path.dirname(a.path) != root:
                raise BadInput(
                    f"plan file {path}: {a.path} is not directly inside podLogsDir {root}; "
                    "only pod log directories there are removed (--pod-logs-dir names another "
                    "root)"
                )
    pods = NO_POD_SOURCE
    if any(a.rule in POD_RULES for a in todo):
        pods = load_pod_inventory(s, ui)
        if not pods.known:
            ui.warn(
                "no pod source: the plan's removals for deleted or terminated pods are skipped "
                "(give --pods-file, or a kubeconfig for the API)"
            )
    saved_policy = plan.policy.get("containers", plan.policy)
    saved_policy = saved_policy if isinstance(saved_policy, dict) else {}
    for flag, key, given, what in (
        ("--match-kubelet", "match_kubelet", match_kubelet, {"container"}),
        ("--include-terminated-pods", "include_terminated_pods", include_terminated_pods,
         {"container", "sandbox"}),
        ("--allow-unpullable", "allow_unpullable", allow_unpullable, {"image"}),
    ):  # fmt: skip
        if what & kinds and saved_policy.get(key) and not given:
            ui.warn(
                f"the plan was made with {flag}; apply keeps what it protects unless given "
                f"{flag} too"
            )
    mode = decide_mode(s, act, ui)
    # re-checked again, from the start, after a person's yes (only a question has one)
    asked = copy.deepcopy(plan) if mode is Mode.ASK else None
    if not kinds:
        may_act(mode, plan, ui, "object", act)
        return plan

    kcfg = kubelet_config_for(s)
    client = open_client(s, ui)
    try:
        if plan.source and client.endpoint.display != plan.source:
            ui.warn(f"the plan was made on {plan.source}; applying it on {client.endpoint.display}")
        source = pods

        def recheck(p: Plan[Any]) -> tuple[MountTable, frozenset[str]]:
            """Re-check `p` against the node observed now (see `recheck_saved_plan`): (the
            mount table read, the pods that still exist whose objects stay)."""
            mounts = MountTable.read()
            snap = observe_node(
                client, s.host_root, statuses="dead",
                sandboxes="sandbox" in kinds or source.known, images="image" in kinds,
                pod_logs_dir=kcfg.pod_logs_dir, mounts=mounts, clock=edges().clock,
            )  # fmt: skip
            pods = against_runtime(source, snap.containers, snap.sandboxes)
            protected: set[str] = set()
            if "image" in kinds:
                saved_refs = (p.policy.get("sandbox_image"),
                              p.policy.get("pod_infra_container_image"))  # fmt: skip
                protected = {str(r) for r in saved_refs if r}
                kept = runtime_sandbox_images(client, s.host_root, s.runtime_config, ui.warn)
                if kept.status_error:
                    if not protected:  # the plan names none either: the image to keep is unknown
                        raise SandboxImageUnreadable(kept.status_error)
                    ui.warn(f"{kept.status_error}; the sandbox image protected is the plan's")
                protected |= {f for r in protected for f in reference_forms(r)}
                protected |= set(kept.protected_ids(snap.images))  # as the runtimes name them
            recheck_saved_plan(
                p, snap, pods, host_root=s.host_root, pod_logs_root=root, protected=protected,
                keep=keep, match_kubelet=match_kubelet,
                include_terminated_pods=include_terminated_pods,
                allow_unpullable=allow_unpullable,
            )  # fmt: skip
            return mounts, frozenset() if include_terminated_pods else still_there(p, pods)

        mounts, existing = recheck(plan)
        add_writable_layers(plan, client, ui)

        def again() -> Plan[Any]:
            """The saved plan re-checked anew under the node lock, once a person said yes:
            what is still to go as its actions, what the re-check skips (not gone) kept with
            why."""
            nonlocal mounts, existing
            assert asked is not None  # `may_act` asks again only after a question
            fresh = copy.deepcopy(asked)
            mounts, existing = recheck(fresh)
            kept = [a for a in fresh.actions if a.result is Result.SKIPPED and a.error != GONE]
            for a in kept:
                a.reason = a.error
            going = [a for a in fresh.actions if a.result is Result.PLANNED]
            return Plan(kind=fresh.kind, policy=fresh.policy, now=fresh.now, actions=going,
                        kept=kept)  # fmt: skip

        if not may_act(mode, plan, ui, "object", act, again=again):
            return plan
        n = act.concurrency
        stages = []
        if "container" in kinds:
            guard_policy = ContainerGCPolicy(match_kubelet=match_kubelet)
            containers: Plan[Any] = Plan(
                kind="ContainerGCPlan", policy={}, now=plan.now,
                actions=[a for a in plan.actions if a.kind == "container"],
            )  # fmt: skip
            log_roots = LogRoots(s.host_root, kcfg.pod_logs_dir)
            stages.append(
                Stage(
                    ContainerRemover(client, concurrency=n, log_roots=log_roots, mounts=mounts),
                    ("container",),
                    lambda: recheck_guard(
                        containers, client.list_containers(), guard_policy, also=existing
                    ),
                )
            )
        if "sandbox" in kinds:
            stages.append(Stage(SandboxRemover(client, concurrency=n), ("sandbox",)))
        if kinds & set(LOG_KINDS):

            def links_now() -> None:
                fresh = client.list_containers()
                for a in plan.actions:
                    if a.kind != "log-symlink" or a.result is not Result.PLANNED:
                        continue
                    if why := link_refusal(os.path.basename(a.path), fresh):
                        _skip(a, why)

            remover = LogRemover(client, concurrency=n, mounts=mounts, host_root=s.host_root,
                                 roots=LogRoots(s.host_root, root))  # fmt: skip
            stages.extend(log_stages(remover, links_now))
        if "image" in kinds:
            stages.append(Stage(ImageRemover(client, concurrency=n), ("image",)))
        on = runtime_fs_paths(client, ui) if kinds & {"container", "sandbox", "image"} else {}
        if kinds & {"container", *LOG_KINDS}:
            on["logs"] = root or kcfg.pod_logs_dir
        carry_out(s, plan, stages, "apply", ui, at=edges().clock(), measure=on)
        if "image" in kinds:
            forget_removed_images(s, plan, ui)
        return plan
    finally:
        client.close()

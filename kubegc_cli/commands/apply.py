"""Saved plans: `--plan-out FILE` writes the plan a dry run made; `kubegc apply FILE` carries
out exactly that plan later.

The file is the plan's JSON document (as `-o json` prints it) plus what acting needs:

- `saved`: `command` (`gc containers`, ...), `node` (the host name it was made on),
  `kubegc` (version), `saved_at` (RFC 3339);
- on each action (and kept object), `object`: the container, sandbox or image as the runtime
  listed it (`kubegc snapshot`'s shape). Log actions need none: their `path` is the object.

An operator may review the file and delete actions from it; `apply` does the rest and nothing
else. Actions the plan held back (`--max-delete`, `--max-bytes`) stay held back.

The file is untrusted input: whatever it says, nothing is removed that the node as it is now
does not allow. `load_saved_plan` refuses (`BadInput`, exit 2) a file whose `saved.command` is
not the command of its kind, an action kind that plan kind cannot carry, an unknown rule, a
pod log directory path that is not clean or whose name's UID is not the action's `pod_uid`,
and a legacy link path that is not directly in `/var/log/containers`; `apply_plan` also
refuses pod log directories that are not direct children of the current podLogsDir (the
kubelet config, or `--pod-logs-dir`). Then, against the runtime's fresh inventory
(`recheck_saved_plan`), every object is re-derived from the node, never taken from the file:

- a container is the runtime's (labels, state, log path from `ContainerStatus`); gone,
  running or re-created (creation time differs) → skipped;
- a sandbox is the runtime's; gone, re-created or READY → skipped; `older-sandbox` only
  while a newer sandbox of its pod exists;
- `deleted-pod` / `terminated-pod` actions (containers, sandboxes, pod log directories) only
  when the pod source given to `apply` says so now (none given → skipped);
- the container guard is re-applied to a fresh list (`--match-kubelet` on `apply` turns it
  off; the file cannot);
- a pod log directory is `<podLogsDir>/<name>` on this host, skipped while the runtime has a
  container of its UID; a legacy link is `/var/log/containers/<name>`, skipped unless its
  container is gone or exited (as `gc logs` judges it);
- an image is the runtime's; pinned, the sandbox image (the runtime's now, or as saved),
  `--keep` or `--pod-infra-container-image` as saved, or used by a container → skipped.

The executors then re-check each object right before its removal, as for the gc commands.
"""

from __future__ import annotations

import fnmatch
import json
import os
import socket
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubegc_cli import __version__
from kubegc_cli.core.errors import BadInput, SandboxImageUnreadable
from kubegc_cli.core.inputs import shown
from kubegc_cli.core.model import (
    API_VERSION,
    Container,
    ContainerState,
    Image,
    NodeSnapshot,
    Sandbox,
    SandboxState,
    json_type,
    reference_forms,
    snap_text,
    snap_whole,
)
from kubegc_cli.core.plan import (
    GONE,
    POD_RULES,
    ContainerAction,
    ImageAction,
    LogAction,
    Plan,
    Result,
    SandboxAction,
)
from kubegc_cli.core.pods import NO_POD_SOURCE, PodInventory
from kubegc_cli.core.units import ns_to_rfc3339, rfc3339_to_ns
from kubegc_cli.node.outfile import replace_file

if TYPE_CHECKING:
    from kubegc_cli.commands.session import ActOptions, Settings, Ui

#: Plan kinds `apply` carries out, with the command that makes each.
COMMANDS = {
    "ContainerGCPlan": "gc containers",
    "SandboxGCPlan": "gc sandboxes",
    "LogGCPlan": "gc logs",
    "GCPlan": "gc all",
    "ImageGCPlan": "gc images",
}
LOG_KINDS = ("pod-log-dir", "log-symlink")
#: The action kinds each plan kind carries.
KINDS = {
    "ContainerGCPlan": ("container",),
    "SandboxGCPlan": ("sandbox",),
    "LogGCPlan": LOG_KINDS,
    "GCPlan": ("container", "sandbox", *LOG_KINDS),
    "ImageGCPlan": ("image",),
}
#: The rules that may select an action of each kind (`kubegc_cli.policy`).
RULES = {
    "container": frozenset({*POD_RULES, "max-per-pod-container", "max-containers-share",
                            "max-containers"}),
    "sandbox": frozenset({*POD_RULES, "older-sandbox"}),
    "pod-log-dir": frozenset({"deleted-pod"}),
    "log-symlink": frozenset({"unparsable-link", "container-gone", "container-exited"}),
    "image": frozenset({"max-age", "space", "prune-unused"}),
}  # fmt: skip


def this_node(s: Settings) -> str:
    """The node name a plan is bound to: `--node-name`, else the host name (lower-case)."""
    return (s.node_name or socket.gethostname()).lower()


def _object(a: Any) -> dict[str, Any] | None:
    if isinstance(a, ContainerAction):
        return a.container.to_dict()
    if isinstance(a, SandboxAction):
        return a.sandbox.to_dict()
    if isinstance(a, ImageAction):
        return a.image.to_dict()
    return None


def saved_document(plan: Plan[Any], s: Settings) -> dict[str, Any]:
    """The plan's document with the `saved` section and each action's `object`.
    Raises `BadInput` for a plan kind `apply` cannot carry out."""
    if plan.kind not in COMMANDS:
        raise BadInput(f"--plan-out: a {plan.kind} cannot be applied later")
    doc = plan.to_dict()
    doc["saved"] = {
        "command": COMMANDS[plan.kind],
        "node": this_node(s),
        "kubegc": __version__,
        "saved_at": ns_to_rfc3339(time.time_ns()),
    }
    for key, items in (("actions", plan.actions), ("kept", plan.kept)):
        for d, a in zip(doc[key], items, strict=True):
            obj = _object(a)
            if obj is not None:
                d["object"] = obj
    return doc


def save_plan(plan: Plan[Any], path: Path, s: Settings) -> None:
    """Write the saved plan to `path`, mode 0644, replacing it whole
    (`kubegc_cli.node.outfile.replace_file`: a link planted there is replaced, never followed).
    Raises `BadInput` naming the path when it cannot be written."""
    text = json.dumps(saved_document(plan, s), indent=2) + "\n"
    try:
        replace_file(path, text, 0o644)
    except OSError as exc:
        raise BadInput(f"cannot write plan file {path}: {exc.strerror or exc}") from None


def _log_path(kind: str, path: str, pod_uid: str) -> None:
    """Refuse a log path no plan could hold: not clean and absolute; a pod log directory whose
    name is not one path component ending in the action's pod UID; a legacy link not directly
    in /var/log/containers. Raises ValueError."""
    from kubegc_cli.node.host.kubelet import CONTAINER_LOGS_DIR
    from kubegc_cli.node.host.podlogs import NOT_A_POD, is_pod_uid, pod_uid_from_dir

    name = os.path.basename(path)
    if not path.startswith("/") or os.path.normpath(path) != path or name in ("", ".", ".."):
        raise ValueError(f"log path {path!r} is not a clean absolute path")
    if kind == "pod-log-dir":
        if not pod_uid or pod_uid_from_dir(name) != pod_uid:
            raise ValueError(
                f"pod log directory {path!r}: its name does not end in the action's pod UID "
                f"{pod_uid!r}"
            )
        if not is_pod_uid(pod_uid):
            raise ValueError(f"pod log directory {path!r}: {pod_uid!r} is {NOT_A_POD}")
    elif os.path.dirname(path) != CONTAINER_LOGS_DIR or not name.endswith(".log"):
        raise ValueError(f"log symlink {path!r} is not a *.log directly in {CONTAINER_LOGS_DIR}")


def _said(value: Any) -> str:
    """A value of the plan file for a message: a string as Python quotes it (`'x'`), any other
    value as JSON writes it (`null`, `true`, `{"a": 1}`), never as Python spells it."""
    return repr(value) if isinstance(value, str) else shown(value)


def _text_or_empty(d: dict[str, Any], key: str) -> str:
    """The string under `key` of a plan's object; "" when missing or null. `TypeError` naming
    the key and the value (as JSON) for anything else."""
    return "" if d.get(key) is None else snap_text(d, key)


def _object_of(d: dict[str, Any]) -> dict[str, Any]:
    """An action's `object` (what the runtime listed). `KeyError` when missing, `TypeError`
    when it is not an object."""
    value = d["object"]
    if not isinstance(value, dict):
        raise TypeError(f"object is {json_type(value)}, not an object")
    return value


def _action(d: dict[str, Any], s: Settings, result: Result, kinds: tuple[str, ...] = ()) -> Any:
    """One action (or kept object) of a saved plan; an action's `kind` must be one of `kinds`
    and its rule one that selects that kind. Raises KeyError (a missing field), ValueError or
    TypeError (a field of another kind or value), each worded in the plan file's terms."""
    kind, ident = d.get("kind"), d.get("id")
    if not isinstance(kind, str) or (kinds and kind not in kinds):
        raise ValueError(f"a {_said(kind)} action cannot be in this plan (only {', '.join(kinds)})")
    rule, reason = snap_text(d, "rule", required=True), _text_or_empty(d, "reason")
    if result is not Result.KEPT and kind in RULES and rule not in RULES[kind]:
        raise ValueError(f"{kind} {_said(ident)}: {rule!r} is not a rule that removes a {kind}")
    if kind in ("container", "sandbox", "image"):
        ident = snap_text(d, "id", required=True)
    if kind == "container":
        c = Container.from_dict(_object_of(d))
        if c.id != ident:
            raise ValueError(f"action {ident!r} and its object {c.id!r} differ")
        return ContainerAction(
            c, rule, reason, result, stop_first=c.state is ContainerState.UNKNOWN
        )
    if kind == "sandbox":
        sb = Sandbox.from_dict(_object_of(d))
        if sb.id != ident:
            raise ValueError(f"action {ident!r} and its object {sb.id!r} differ")
        return SandboxAction(sb, rule, reason, snap_whole(d, "container_count"), result)
    if kind in LOG_KINDS:
        from kubegc_cli.node.host.logs import on_host

        path, pod_uid = snap_text(d, "path", required=True), _text_or_empty(d, "pod_uid")
        if result is not Result.KEPT:
            _log_path(kind, path, pod_uid)
        return LogAction(
            kind, path, on_host(s.host_root, path), pod_uid, rule, reason, snap_whole(d, "bytes"),
            result,
        )  # fmt: skip
    if kind == "image":
        img = Image.from_dict(_object_of(d))
        if img.id != ident:
            raise ValueError(f"action {ident!r} and its object {img.id!r} differ")
        last = _text_or_empty(d, "last_used")
        return ImageAction(
            img,
            rfc3339_to_ns(snap_text(d, "first_detected", required=True), what="first_detected"),
            rfc3339_to_ns(last, what="last_used") if last else 0, rule, reason, result,
        )  # fmt: skip
    raise ValueError(f"unknown action kind {kind!r}")


def _items_of(doc: dict[str, Any], key: str, *, required: bool = False) -> list[Any]:
    """The list under `key` of the plan (missing: empty, unless `required`). kubegc writes
    every list as a list, never null. `KeyError` when required and missing, `TypeError` when
    it is not a list (null included)."""
    if key not in doc:
        if required:
            raise KeyError(key)
        return []
    value = doc[key]
    if not isinstance(value, list):
        raise TypeError(f"{key} is {json_type(value)}, not a list")
    return value


def _parse_actions(
    doc: dict[str, Any], s: Settings, kinds: tuple[str, ...]
) -> tuple[list[Any], list[Any]]:
    """(actions, kept objects) of a saved plan document. Raises `BadInput`, KeyError,
    ValueError or TypeError, each naming the list and the index of the object at fault."""
    results = {"planned": Result.PLANNED, "held-back": Result.HELD_BACK}
    actions: list[Any] = []
    kept: list[Any] = []
    for key in ("actions", "kept"):
        for i, d in enumerate(_items_of(doc, key, required=key == "actions")):
            where = f"{key}[{i}]"
            if not isinstance(d, dict):
                raise TypeError(f"{where} is {json_type(d)}, not an object")
            try:
                if key == "kept":
                    kept.append(_action(d, s, Result.KEPT, kinds))
                    continue
                value = d.get("result")
                result = results.get(value) if isinstance(value, str) else None
                if result is None:
                    raise ValueError(
                        f"result {_said(value)}; only planned or held-back actions can be applied"
                    )
                a = _action(d, s, result, kinds)
                if result is Result.HELD_BACK:
                    a.error = _text_or_empty(d, "error") or "held back by the plan's cap"
                actions.append(a)
            except KeyError as exc:
                raise ValueError(f"{where}: missing field {exc.args[0]!r}") from None
            except (BadInput, ValueError, TypeError) as exc:
                raise type(exc)(f"{where}: {exc}") from None
    return actions, kept


def _notes_of(doc: dict[str, Any]) -> list[str]:
    """The plan's notes: a list of strings (missing: none). `TypeError` otherwise."""
    notes = _items_of(doc, "notes")
    for i, n in enumerate(notes):
        if not isinstance(n, str):
            raise TypeError(f"notes[{i}] is {json_type(n)}, not a string")
    return notes


def load_saved_plan(path: Path, s: Settings) -> tuple[Plan[Any], dict[str, Any]]:
    """(plan, saved section) from a file `--plan-out` wrote. Planned actions come back
    `planned`, held-back ones `held-back`; nothing else is accepted (a plan that was already
    carried out is not a plan to apply). Raises `BadInput` naming the file and the problem
    (in the file's terms: the field, where it is, and its value as JSON), also when it was
    made on another node (`this_node`)."""
    from kubegc_cli.core.inputs import parse_json, read_text

    doc = parse_json(read_text(path, "plan file"), path, "plan file", path_bytes=True)
    kind = doc.get("kind") if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or not isinstance(kind, str) or kind not in COMMANDS:
        raise BadInput(
            f"plan file {path}: not a gc plan (kind {_said(kind)}; expected one of "
            f"{', '.join(COMMANDS)})"
        )
    if doc.get("apiVersion") != API_VERSION:
        raise BadInput(
            f"plan file {path}: apiVersion {_said(doc.get('apiVersion'))}, this kubegc reads "
            f"{API_VERSION}"
        )
    saved = doc.get("saved")
    if not isinstance(saved, dict):
        raise BadInput(
            f"plan file {path}: no 'saved' section; write plans to apply with --plan-out FILE"
        )
    if saved.get("command") != COMMANDS[kind]:
        raise BadInput(
            f"plan file {path}: saved command {_said(saved.get('command'))} is not the command "
            f"of a {kind} ({COMMANDS[kind]!r})"
        )
    node = saved.get("node")
    if node != this_node(s):
        raise BadInput(
            f"plan file {path} was made on node {_said(node)}; this is {this_node(s)!r} "
            "(a plan applies only to the node it was made on)"
        )
    try:
        actions, kept = _parse_actions(doc, s, KINDS[kind])
        policy = {} if doc.get("policy") is None else doc["policy"]
        if not isinstance(policy, dict):
            raise TypeError(f"policy is {json_type(policy)}, not an object")
        _protecting_fields(policy)
        plan: Plan[Any] = Plan(
            kind=kind,
            policy=policy,
            now=rfc3339_to_ns(snap_text(doc, "now", required=True), what="plan time"),
            actions=actions,
            kept=kept,
            notes=_notes_of(doc),
            source=_text_or_empty(doc, "source"),
        )
    except BadInput as exc:
        raise BadInput(f"plan file {path}: {exc}") from None
    except KeyError as exc:
        raise BadInput(f"plan file {path}: missing field {exc.args[0]!r}") from None
    except (ValueError, TypeError) as exc:
        raise BadInput(f"plan file {path}: {exc}") from None
    ids = [a.id for a in actions]
    if len(set(ids)) != len(ids):
        raise BadInput(f"plan file {path}: an object appears twice among the actions")
    return plan, saved


def _protecting_fields(policy: dict[str, Any]) -> None:
    """Refuse the policy fields of an image plan that protect images, when they are not what
    kubegc writes there: `keep` a list of strings, `sandbox_image` and
    `pod_infra_container_image` strings (each may be missing). One that `apply` could not read
    would protect nothing, silently. `TypeError` naming the field, in the file's terms."""
    keep = policy.get("keep", [])
    if not isinstance(keep, list):
        raise TypeError(f"policy.keep is {json_type(keep)}, not a list")
    for i, k in enumerate(keep):
        if not isinstance(k, str):
            raise TypeError(f"policy.keep[{i}] is {json_type(k)}, not a string")
    for key in ("sandbox_image", "pod_infra_container_image"):
        value = policy.get(key, "")
        if not isinstance(value, str):
            raise TypeError(f"policy.{key} is {json_type(value)}, not a string")


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
    from kubegc_cli.node.host.podlogs import container_id_from_link
    from kubegc_cli.policy.logs import link_state

    cid = container_id_from_link(name)
    state = link_state(cid, containers) if cid else ""
    if state in ("", ContainerState.EXITED.value):
        return ""
    if state == "none":
        return f"container ID {cid} matches several containers now"
    return f"its container is {state} now"


def recheck_saved_plan(
    plan: Plan[Any],
    snap: NodeSnapshot,
    pods: PodInventory,
    *,
    host_root: Path,
    pod_logs_root: str,
    protected: Iterable[str] = (),
    match_kubelet: bool = False,
) -> None:
    """Re-derive every planned action of a saved plan from the node as it is now and skip
    (with the reason) what the node does not allow; see the module doc.

    `snap` is the runtime's fresh inventory (containers with status, and sandboxes and images
    when the plan has such actions); `pods` the pod source given now; `pod_logs_root` the
    current podLogsDir (a host path; `load_saved_plan` and `apply_plan` have refused pod log
    directories elsewhere); `protected` image IDs, tags or digests never to remove. Objects in
    the plan are replaced by the runtime's; log actions get their local paths re-made under
    `host_root` and their bytes re-measured. Reads the log directories' sizes, nothing else.
    """
    from kubegc_cli.node.host.kubelet import CONTAINER_LOGS_DIR
    from kubegc_cli.node.host.logs import LogRoots
    from kubegc_cli.node.host.podlogs import pod_log_dir_bytes
    from kubegc_cli.policy.containers import ContainerGCPolicy, recheck_guard
    from kubegc_cli.policy.images import images_in_use

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
    mine = [a for a in plan.actions if a.kind == "container"]
    guarded: Plan[Any] = Plan(kind="ContainerGCPlan", policy={}, now=plan.now, actions=mine)
    recheck_guard(guarded, snap.containers, ContainerGCPolicy(match_kubelet=match_kubelet))

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
        else:
            a.sandbox = sb

    going = {a.id for a in plan.actions if a.kind == "container" and a.result is Result.PLANNED}
    left = [c for c in snap.containers if c.id not in going]
    live_uids = {c.pod_uid for c in left if c.pod_uid}
    # both directories resolved as the host resolves them, as `gc logs` lists them
    roots = LogRoots(host_root, pod_logs_root or "/", CONTAINER_LOGS_DIR)
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
        elif (size := pod_log_dir_bytes(a.local_path)) is None:
            _skip(a, GONE)
        else:
            a.bytes = size

    images = {i.id: i for i in snap.images}
    refs = set(protected)
    in_use = images_in_use(snap.containers)
    saved_keep = plan.policy.get("keep")  # the saved --keep patterns: they only protect
    patterns = saved_keep if isinstance(saved_keep, list) else []
    keep = [k for k in patterns if isinstance(k, str) and k.strip()]
    for a in (a for a in todo if a.kind == "image"):
        img = images.get(a.id)
        names = (*img.repo_tags, *img.repo_digests) if img is not None else ()
        if img is None:
            _skip(a, GONE)
        elif img.pinned:
            _skip(a, "pinned by the runtime")
        elif refs & {img.id, *names}:
            _skip(a, "the sandbox image")
        elif any(fnmatch.fnmatchcase(n, k) for n in names for k in keep):
            _skip(a, "matches --keep")
        elif img.id in in_use:
            _skip(a, "used by a container now")
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
) -> Plan[Any]:
    """`kubegc apply FILE`: carry out a saved plan (see the module doc), under the node lock,
    stage by stage in the kubelet's order (containers, sandboxes, logs, images), writing the
    audit log as `apply` with the time it acted.

    `pod_logs_dir` (a host path) overrides the kubelet config's podLogsDir for pod log
    directories; `match_kubelet` turns the container guard off; `act`'s caps hold back what
    they do not allow (on top of what the plan held back). Raises `BadInput` for an unusable
    file (also one naming pod log directories outside podLogsDir) or `--snapshot`,
    `RuntimeUnavailable` when the runtime cannot be reached, `Busy` when another run holds
    the lock. Returns the plan with results (all as re-checked for a dry run).
    """
    from kubegc_cli.commands.gc import forget_removed_images, pod_logs_root_of
    from kubegc_cli.commands.session import (
        Stage,
        carry_out,
        decide_mode,
        load_pod_inventory,
        log_stages,
        may_act,
        open_client,
    )

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
    if (
        "container" in kinds
        and isinstance(saved_policy, dict)
        and saved_policy.get("match_kubelet")
        and not match_kubelet
    ):
        ui.warn(
            "the plan was made with --match-kubelet; apply keeps kubegc's guard unless "
            "given --match-kubelet too"
        )
    mode = decide_mode(s, act, ui)
    if not kinds:
        may_act(mode, plan, ui, "object", act)
        return plan

    from kubegc_cli.core.pods import against_runtime
    from kubegc_cli.node.cri.client import sandbox_image_from_info
    from kubegc_cli.node.execute.actions import (
        ContainerRemover,
        ImageRemover,
        LogRemover,
        SandboxRemover,
    )
    from kubegc_cli.node.host.kubelet import load_kubelet_config
    from kubegc_cli.node.host.logs import LogRoots
    from kubegc_cli.node.host.mounts import MountTable
    from kubegc_cli.node.observe import observe_node
    from kubegc_cli.policy.containers import ContainerGCPolicy, recheck_guard

    kcfg = load_kubelet_config(s.kubelet_config, s.host_root)
    client = open_client(s, ui)
    try:
        if plan.source and client.endpoint.display != plan.source:
            ui.warn(f"the plan was made on {plan.source}; applying it on {client.endpoint.display}")
        mounts = MountTable.read()
        snap = observe_node(
            client, s.host_root, statuses="dead", sandboxes="sandbox" in kinds or pods.known,
            images="image" in kinds, pod_logs_dir=kcfg.pod_logs_dir, mounts=mounts,
        )  # fmt: skip
        pods = against_runtime(pods, snap.containers, snap.sandboxes)
        protected: set[str] = set()
        if "image" in kinds:
            saved_refs = (plan.policy.get("sandbox_image"),
                          plan.policy.get("pod_infra_container_image"))  # fmt: skip
            protected = {str(r) for r in saved_refs if r}
            try:
                pause = sandbox_image_from_info(client.status_info())
            except SandboxImageUnreadable as exc:
                if not protected:  # the plan names none either: the image to keep is unknown
                    raise
                ui.warn(f"{exc.why}; the sandbox image protected is the plan's")
                pause = None
            protected |= {pause} if pause else set()
            protected |= {f for r in protected for f in reference_forms(r)}
        recheck_saved_plan(
            plan, snap, pods, host_root=s.host_root, pod_logs_root=root, protected=protected,
            match_kubelet=match_kubelet,
        )  # fmt: skip
        if not may_act(mode, plan, ui, "object", act):
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
                    lambda: recheck_guard(containers, client.list_containers(), guard_policy),
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
        carry_out(s, plan, stages, "apply", ui, at=time.time_ns())
        if "image" in kinds:
            forget_removed_images(s, plan, ui)
        return plan
    finally:
        client.close()

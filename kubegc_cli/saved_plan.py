"""Saved plans: `--plan-out FILE` writes the plan a dry run made; `kubegc apply FILE` carries
out exactly that plan later.

The file is the plan's JSON document (as `-o json` prints it) plus what acting needs:

- `saved`: `command` (`gc containers`, ...), `node` (the host name it was made on),
  `kubegc` (version), `saved_at` (RFC 3339);
- on each action (and kept object), `object`: the container, sandbox or image as the runtime
  listed it (`kubegc snapshot`'s shape). Log actions need none: their `path` is the object.

An operator may review the file and delete actions from it; `apply` does the rest and nothing
else. Each object is re-checked right before its removal by the same executors as the gc
commands (a container gone, running or re-created is skipped; a sandbox READY or with
containers; a log directory whose pod has containers again or became a mount point; an image
gone or used by a container), and the container guard is re-applied to a fresh container list.
Actions the plan held back (`--max-delete`, `--max-bytes`) stay held back.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import time
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubegc_cli import __version__
from kubegc_cli.errors import BadInput
from kubegc_cli.model import API_VERSION, Container, Image, Sandbox
from kubegc_cli.plan import ContainerAction, ImageAction, LogAction, Plan, Result, SandboxAction
from kubegc_cli.units import ns_to_rfc3339, rfc3339_to_ns

if TYPE_CHECKING:
    from kubegc_cli.app import ActOptions, Settings, Ui

#: Plan kinds `apply` carries out, with the command that makes each.
COMMANDS = {
    "ContainerGCPlan": "gc containers",
    "SandboxGCPlan": "gc sandboxes",
    "LogGCPlan": "gc logs",
    "GCPlan": "gc all",
    "ImageGCPlan": "gc images",
}
LOG_KINDS = ("pod-log-dir", "log-symlink")


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
    """Write the saved plan to `path` atomically (a temporary file in the same directory,
    then rename). Raises `BadInput` naming the path when it cannot be written."""
    text = json.dumps(saved_document(plan, s), indent=2) + "\n"
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except BaseException:
            with suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as exc:
        raise BadInput(f"cannot write plan file {path}: {exc.strerror or exc}") from None


def _action(d: dict[str, Any], s: Settings, result: Result) -> Any:
    """One action (or kept object) of a saved plan. Raises KeyError/ValueError/TypeError."""
    kind = d["kind"]
    rule, reason = str(d["rule"]), str(d.get("reason", ""))
    if kind == "container":
        c = Container.from_dict(d["object"])
        if c.id != d["id"]:
            raise ValueError(f"action {d['id']!r} and its object {c.id!r} differ")
        from kubegc_cli.model import ContainerState

        return ContainerAction(
            c, rule, reason, result, stop_first=c.state is ContainerState.UNKNOWN
        )
    if kind == "sandbox":
        sb = Sandbox.from_dict(d["object"])
        if sb.id != d["id"]:
            raise ValueError(f"action {d['id']!r} and its object {sb.id!r} differ")
        return SandboxAction(sb, rule, reason, int(d.get("container_count", 0)), result)
    if kind in LOG_KINDS:
        from kubegc_cli.host.logs import on_host

        path = str(d["path"])
        if not path.startswith("/"):
            raise ValueError(f"log path {path!r} is not absolute")
        return LogAction(
            kind, path, on_host(s.host_root, path), str(d.get("pod_uid", "")), rule, reason,
            int(d.get("bytes", 0)), result,
        )  # fmt: skip
    if kind == "image":
        img = Image.from_dict(d["object"])
        if img.id != d["id"]:
            raise ValueError(f"action {d['id']!r} and its object {img.id!r} differ")
        last = d.get("last_used")
        return ImageAction(
            img, rfc3339_to_ns(str(d["first_detected"]), what="first_detected"),
            rfc3339_to_ns(str(last), what="last_used") if last else 0, rule, reason, result,
        )  # fmt: skip
    raise ValueError(f"unknown action kind {kind!r}")


def load_saved_plan(path: Path, s: Settings) -> tuple[Plan[Any], dict[str, Any]]:
    """(plan, saved section) from a file `--plan-out` wrote. Planned actions come back
    `planned`, held-back ones `held-back`; nothing else is accepted (a plan that was already
    carried out is not a plan to apply). Raises `BadInput` naming the file and the problem,
    also when it was made on another node (`this_node`)."""
    from kubegc_cli.inputs import parse_json, read_text

    doc = parse_json(read_text(path, "plan file"), path, "plan file")
    kind = doc.get("kind") if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or kind not in COMMANDS:
        raise BadInput(
            f"plan file {path}: not a gc plan (kind {kind!r}; expected one of "
            f"{', '.join(COMMANDS)})"
        )
    if doc.get("apiVersion") != API_VERSION:
        raise BadInput(
            f"plan file {path}: apiVersion {doc.get('apiVersion')!r}, this kubegc reads "
            f"{API_VERSION}"
        )
    saved = doc.get("saved")
    if not isinstance(saved, dict):
        raise BadInput(
            f"plan file {path}: no 'saved' section; write plans to apply with --plan-out FILE"
        )
    node = str(saved.get("node", ""))
    if node != this_node(s):
        raise BadInput(
            f"plan file {path} was made on node {node!r}; this is {this_node(s)!r} "
            "(a plan applies only to the node it was made on)"
        )
    results = {"planned": Result.PLANNED, "held-back": Result.HELD_BACK}
    try:
        actions = []
        for i, d in enumerate(doc["actions"]):
            result = results.get(d.get("result"))
            if result is None:
                raise ValueError(
                    f"action {i} has result {d.get('result')!r}; only planned or held-back "
                    "actions can be applied"
                )
            a = _action(d, s, result)
            if result is Result.HELD_BACK:
                a.error = str(d.get("error", "")) or "held back by the plan's cap"
            actions.append(a)
        kept = [_action(d, s, Result.KEPT) for d in doc.get("kept") or []]
        plan: Plan[Any] = Plan(
            kind=doc["kind"],
            policy=dict(doc.get("policy") or {}),
            now=rfc3339_to_ns(str(doc["now"]), what="plan time"),
            actions=actions,
            kept=kept,
            notes=[str(n) for n in doc.get("notes") or []],
            source=str(doc.get("source", "")),
        )
    except BadInput as exc:
        raise BadInput(f"plan file {path}: {exc}") from None
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        what = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
        raise BadInput(f"plan file {path}: {what}") from None
    ids = [a.id for a in actions]
    if len(set(ids)) != len(ids):
        raise BadInput(f"plan file {path}: an object appears twice among the actions")
    return plan, saved


def apply_plan(s: Settings, path: Path, act: ActOptions, ui: Ui) -> Plan[Any]:
    """`kubegc apply FILE`: carry out a saved plan (see the module doc), under the node lock,
    stage by stage in the kubelet's order (containers, sandboxes, logs, images), writing the
    audit log as `apply`.

    Raises `BadInput` for an unusable file or `--snapshot`, `RuntimeUnavailable` when the
    runtime cannot be reached, `Busy` when another run holds the lock. Returns the plan with
    results (all as saved for a dry run).
    """
    from kubegc_cli.app import Stage, _carry_out, _may_act, decide_mode, open_client

    if s.snapshot is not None:
        raise BadInput("apply acts on the node; --snapshot cannot be given")
    plan, saved = load_saved_plan(path, s)
    plan.notes.append(
        f"saved plan of '{saved.get('command')}' from {saved.get('saved_at', '?')} "
        f"({path}); each object is re-checked right before its removal"
    )
    mode = decide_mode(s, act, ui)
    kinds = {a.kind for a in plan.actions if a.result is Result.PLANNED}
    if not kinds:
        _may_act(mode, plan, ui, "object")
        return plan

    from kubegc_cli.execute import ContainerRemover, ImageRemover, LogRemover, SandboxRemover
    from kubegc_cli.host.kubelet import load_kubelet_config
    from kubegc_cli.host.logs import LogRoots
    from kubegc_cli.host.mounts import MountTable
    from kubegc_cli.policy.containers import ContainerGCPolicy, recheck_guard
    from kubegc_cli.policy.images import images_in_use

    client = open_client(s, ui)
    try:
        if plan.source and client.endpoint.display != plan.source:
            ui.warn(f"the plan was made on {plan.source}; applying it on {client.endpoint.display}")
        if not _may_act(mode, plan, ui, "object"):
            return plan
        n = act.concurrency
        mounts = MountTable.read()
        stages = []
        if "container" in kinds:
            kcfg = load_kubelet_config(s.kubelet_config, s.host_root)
            policy = plan.policy.get("containers", plan.policy)
            guard_policy = ContainerGCPolicy(match_kubelet=bool(policy.get("match_kubelet")))
            containers: Plan[Any] = Plan(
                kind="ContainerGCPlan", policy=policy, now=plan.now,
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
            stages.append(Stage(LogRemover(client, concurrency=n, mounts=mounts), LOG_KINDS))
        if "image" in kinds:
            remover = ImageRemover(client, concurrency=n)

            def in_use() -> None:
                remover.in_use = frozenset(images_in_use(client.list_containers()))

            stages.append(Stage(remover, ("image",), in_use))
        _carry_out(s, plan, stages, "apply", ui)
        return plan
    finally:
        client.close()

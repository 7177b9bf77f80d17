"""Plan files: `--plan-out FILE` writes the plan a dry run made; `kubegc apply FILE` reads it
back (`kubegc_cli.commands.apply` carries it out).

The file is the plan's document (as `-o json` prints it) plus what acting needs, written as
JSON, or as YAML when its name ends in `.yaml` or `.yml` (`plan_file_format`):

- `saved`: `command` (`gc containers`, ...), `node` (the host name it was made on),
  `kubegc` (version), `saved_at` (RFC 3339);
- on each action (and kept object), `object`: the container, sandbox or image as the runtime
  listed it (`kubegc snapshot`'s shape). Log actions need none: their `path` is the object.

An operator may review the file and delete actions from it; `apply` does the rest and nothing
else. Actions the plan held back (`--max-delete`, `--max-bytes`) stay held back.

The file is untrusted input: `load_saved_plan` refuses (`BadInput`, exit 2) a file that is
not JSON or YAML kubegc reads (`core.inputs`: nested more than `MAX_NESTING` levels, a key
given twice, ...), one whose
`saved.command` is not the command of its kind, an action kind that plan kind cannot carry, an
unknown rule, a pod log directory path that is not clean or whose name's UID is not the
action's `pod_uid`, and a legacy link path that is not directly in `/var/log/containers`.
It reads at most `MAX_PLAN_YAML_BYTES` of a YAML plan and `MAX_PLAN_JSON_BYTES` of a JSON one
(a pipe in chunks, stopping one byte past the bound): what PyYAML reads in seconds, and what
holds the largest plan kubegc writes; `write_plan_file` refuses a YAML plan larger.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from kubegc_cli import __version__
from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.inputs import (
    Malformed,
    check_text,
    parse_json,
    parse_yaml,
    read_text,
    shown,
    too_large,
)
from kubegc_cli.core.model import (
    API_VERSION,
    Container,
    ContainerState,
    Image,
    Sandbox,
    json_type,
    snap_text,
    snap_whole,
)
from kubegc_cli.core.plan import (
    POD_RULES,
    ContainerAction,
    ImageAction,
    LogAction,
    Plan,
    Result,
    SandboxAction,
)
from kubegc_cli.core.podlogs import NOT_A_POD, is_pod_uid, pod_uid_from_dir
from kubegc_cli.core.settings import Settings
from kubegc_cli.core.units import ns_to_rfc3339, rfc3339_to_ns
from kubegc_cli.node.host.kubelet import CONTAINER_LOGS_DIR
from kubegc_cli.node.host.logs import on_host
from kubegc_cli.node.outfile import replace_file, yaml_text

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


def saved_document(plan: Plan[Any], s: Settings, saved_at: int | None = None) -> dict[str, Any]:
    """The plan's document with the `saved` section (`saved_at`: ns since the epoch, default
    the clock) and each action's `object`. Raises `BadInput` for a plan kind `apply` cannot
    carry out."""
    if plan.kind not in COMMANDS:
        raise BadInput(f"--plan-out: a {plan.kind} cannot be applied later")
    doc = plan.to_dict()
    doc["saved"] = {
        "command": COMMANDS[plan.kind],
        "node": this_node(s),
        "kubegc": __version__,
        "saved_at": ns_to_rfc3339(time.time_ns() if saved_at is None else saved_at),
    }
    for key, items in (("actions", plan.actions), ("kept", plan.kept)):
        for d, a in zip(doc[key], items, strict=True):
            obj = _object(a)
            if obj is not None:
                d["object"] = obj
    return doc


#: File names a plan is written to (and read from) as YAML; any other name is JSON.
YAML_SUFFIXES = (".yaml", ".yml")

#: The most bytes of a JSON plan file read: twice a `gc containers` plan of 100,000 dead
#: containers with kubelet labels and annotations as kubegc writes it (236 MiB, read in 9 s).
MAX_PLAN_JSON_BYTES = 512 << 20
#: The most bytes (characters, once decoded) of a YAML plan file read: PyYAML reads about
#: 0.35 MiB/s (a 7.8 MiB plan of 4,000 containers took 23 s), so 4 MiB is read in about 12 s;
#: a larger plan is saved as JSON.
MAX_PLAN_YAML_BYTES = 4 << 20


def plan_file_format(path: Path | str) -> str:
    """How a plan file named `path` is written: "yaml" when its name ends in `.yaml` or `.yml`
    (any case), else "json"."""
    return "yaml" if str(path).lower().endswith(YAML_SUFFIXES) else "json"


def write_plan_file(plan: Plan[Any], path: Path, s: Settings, saved_at: int | None = None) -> None:
    """Write the saved plan (`saved_document`) to `path`, as YAML or JSON by its name
    (`plan_file_format`), mode 0644, replacing it whole (`kubegc_cli.node.outfile.replace_file`:
    a path that is a link or not a regular file is refused). Raises `BadInput` naming the path when
    it cannot be written."""
    doc = saved_document(plan, s, saved_at)
    as_yaml = plan_file_format(path) == "yaml"
    text = yaml_text(doc) if as_yaml else json.dumps(doc, indent=2) + "\n"
    if as_yaml and len(text.encode()) > MAX_PLAN_YAML_BYTES:
        raise BadInput(
            f"cannot write plan file {path}: {len(text.encode()) >> 20} MiB as YAML, more than "
            f"apply reads ({MAX_PLAN_YAML_BYTES >> 20} MiB); save it under a .json name"
        )
    try:
        replace_file(path, text, 0o644)
    except OSError as exc:
        raise BadInput(f"cannot write plan file {path}: {exc.strerror or exc}") from None


def _log_path(kind: str, path: str, pod_uid: str) -> None:
    """Refuse a log path no plan could hold: not clean and absolute; a pod log directory whose
    name is not one path component ending in the action's pod UID; a legacy link not directly
    in /var/log/containers. Raises ValueError."""
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
    made on another node (`this_node`), and "larger than N MiB" past the bound of its format
    (`MAX_PLAN_YAML_BYTES` for a `.yaml`/`.yml` name or YAML text, else
    `MAX_PLAN_JSON_BYTES`), without reading more than the bound."""
    as_yaml = plan_file_format(path) == "yaml"
    limit = MAX_PLAN_YAML_BYTES if as_yaml else MAX_PLAN_JSON_BYTES
    doc = _decoded(read_text(path, "plan file", limit), path)
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


def _decoded(text: str, path: Path) -> Any:
    """The plan file's document: YAML for a `.yaml`/`.yml` name, JSON for a `.json` one; any
    other name (a pipe, `/dev/fd/63`) is JSON when its text starts with `{`, else YAML. Both
    are read as kubegc reads its own files (`core.inputs`: a key twice, more than
    `MAX_NESTING` levels, a NUL or a lone surrogate that stands for no byte are refused).
    Raises `BadInput` naming the file."""
    name = str(path).lower()
    as_yaml = plan_file_format(path) == "yaml" or (
        not name.endswith(".json") and not text.lstrip().startswith("{")
    )
    if not as_yaml:
        return parse_json(text, path, "plan file", path_bytes=True)
    if len(text) > MAX_PLAN_YAML_BYTES:  # read from a name that did not say which
        raise too_large("plan file", path, MAX_PLAN_YAML_BYTES)
    doc = parse_yaml(text, path, "plan file", unique_keys=True)
    _json_values_only(doc, path)
    if "\\u" in text or "\\U" in text:  # a string YAML escapes: maybe a path's byte
        try:
            check_text(doc, f"plan file {path}", path_bytes=True)
        except Malformed as exc:
            raise BadInput(str(exc)) from None
    return doc


_JSON_SCALARS = (str, int, float, bool, type(None))


def _json_values_only(doc: Any, path: Path) -> None:
    """Refuse a YAML plan holding a value JSON has no word for — a timestamp, a date, binary,
    a set (what YAML makes of `now: 2024-01-01T00:00:00Z` left unquoted): kubegc writes only
    strings, numbers, booleans and null. `BadInput` naming the file, the value and what to
    do. Walks without recursion (the nesting is already bounded)."""
    pending = [doc]
    while pending:
        v = pending.pop()
        if isinstance(v, dict):
            pending.extend(v.keys())
            pending.extend(v.values())
        elif isinstance(v, list):
            pending.extend(v)
        elif not isinstance(v, _JSON_SCALARS):
            raise BadInput(
                f"plan file {path}: {str(v)[:60]!r} is a YAML {type(v).__name__}, not a string; "
                "quote it (kubegc writes only strings, numbers, booleans and null)"
            )


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

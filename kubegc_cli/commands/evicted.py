"""`kubegc evict prune`: the Evicted pod shells left in the API after node-pressure eviction.

When the kubelet evicts a pod it sets `status.phase` Failed and `status.reason` Evicted; the
pod object stays in the API (a ReplicaSet just creates a replacement) until the controller
manager's PodGC reaches `--terminated-pod-gc-threshold` (12500 by default), so on a node that
was under pressure `kubectl get pods` fills up with Evicted shells. This module lists them
and deletes them, following the flow of every kubegc command (observe → plan → show → act →
report):

- Observe: pods listed with the official `kubernetes` client, in pages (`limit`/`continue`),
  with `fieldSelector=status.phase=Failed` plus `spec.nodeName=<node>` (unless all nodes),
  namespaced when a namespace is given, with `labelSelector` when `-l` is given (validated
  here first, and matched here again). A list that cannot be read to the end raises
  `ApiUnavailable` (exit 3): nothing is deleted from a partial list.
- Plan: only pods whose `status.phase` is Failed and `status.reason` is Evicted (checked
  again here, so a server that ignores the field selector changes nothing); with an age limit,
  pods evicted more recently (or at an unknown time) are kept, each with its reason.
- Act: each pod is deleted with its planned `uid` and `resourceVersion` as preconditions, so
  the API server itself refuses a pod that changed since the plan (409 Conflict → skipped).
  That precondition is the re-check: it is atomic with the deletion, which a separate read
  before deleting would not be.

Deleting in the API is cluster-side; kubegc still runs it under its run lock in `--state-dir`
and writes the audit rows there, like every other acting command.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.plan import GONE, Plan, Result
from kubegc_cli.core.selector import Selector
from kubegc_cli.core.units import (
    NS_PER_SECOND,
    format_duration,
    format_go_duration,
    ns_to_rfc3339,
    rfc3339_to_ns,
)
from kubegc_cli.node.execute.actions import Executor
from kubegc_cli.node.pods.api import (
    PAGE_SIZE,
    ApiSource,
    ApiUnavailable,
    continue_token,
    find_credentials,
    open_api,
    reply,
    why_refused,
)

if TYPE_CHECKING:
    from kubegc_cli.commands.session import ActOptions, Settings, Ui

PLAN_KIND = "EvictedPodPlan"
COMMAND = "evict prune"

# Rules: why a pod is deleted, or why an evicted pod is kept.
RULE_EVICTED = "evicted"
RULE_TOO_RECENT = "too-recent"
RULE_TIME_UNKNOWN = "eviction-time-unknown"
RULE_BEING_DELETED = "being-deleted"
RULE_NO_IDENTITY = "no-identity"


@dataclass(slots=True)
class PodAction:
    """Delete one Evicted pod from the API (or, in `Plan.kept`, why it stays).

    `evicted_at` is nanoseconds since the epoch (0 = unknown): the pod's DisruptionTarget
    condition's lastTransitionTime, else its Ready condition's, else `status.startTime`.
    `message` is the pod's `status.message` (what the kubelet said when evicting it).
    `owner_kind`/`owner_name` are the controller owner reference ("" for a bare pod).
    Pods hold no node bytes, so `planned_bytes` and `bytes_freed` are 0.
    """

    namespace: str
    name: str
    uid: str
    resource_version: str
    node: str
    owner_kind: str
    owner_name: str
    evicted_at: int
    message: str
    rule: str
    reason: str
    result: Result = Result.PLANNED
    error: str = ""
    bytes_freed: int = 0
    log_note: str = ""

    kind = "pod"

    @property
    def id(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def planned_bytes(self) -> int:
        return 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "id": self.id,
            "namespace": self.namespace,
            "name": self.name,
            "uid": self.uid,
            "resource_version": self.resource_version,
            "node": self.node,
            "owner_kind": self.owner_kind,
            "owner_name": self.owner_name,
            "evicted_at": ns_to_rfc3339(self.evicted_at) if self.evicted_at else None,
            "message": self.message,
            "rule": self.rule,
            "reason": self.reason,
            "result": self.result.value,
            "error": self.error,
            "log_note": self.log_note,
        }


@dataclass(frozen=True, slots=True)
class PruneOptions:
    """What `evict prune` looks at.

    `node` is the node whose pods are pruned (`pods.api.node_name()`), ignored when
    `all_nodes`; `namespace` None means every namespace; `older_than` is in seconds: only pods
    evicted at least that long ago are deleted (0 = no age limit); `selector` (`-l`, None =
    any labels): only pods whose labels it matches.
    """

    all_nodes: bool = False
    node: str = ""
    namespace: str | None = None
    older_than: float = 0.0
    selector: Selector | None = None

    def validate(self) -> None:
        """Raises `BadInput` for a negative age or a missing node."""
        if self.older_than < 0:
            raise BadInput("--older-than must not be negative")
        if not self.all_nodes and not self.node:
            raise BadInput("evict prune needs a node name (--node-name) or --all-nodes")
        if self.namespace == "":
            raise BadInput("invalid value for --namespace: empty name")

    def to_dict(self) -> dict[str, Any]:
        return {
            "all_nodes": self.all_nodes,
            "node": None if self.all_nodes else self.node,
            "namespace": self.namespace,
            "older_than": format_go_duration(self.older_than),
            "selector": None if self.selector is None else str(self.selector),
        }

    def field_selector(self) -> str:
        """`status.phase=Failed`, plus `spec.nodeName=<node>` unless all nodes."""
        return "status.phase=Failed" + ("" if self.all_nodes else f",spec.nodeName={self.node}")

    def describe(self) -> str:
        where = "all nodes" if self.all_nodes else f"node {self.node}"
        where += f", namespace {self.namespace}" if self.namespace else ""
        return where + (f", labels {self.selector}" if self.selector is not None else "")


def list_all(call: Callable[[str | None], bytes], what: str, host: str) -> list[Any]:
    """Every item of a paged Kubernetes list: `call(continue_token)` returns one page's raw
    JSON (the caller passes `limit`); pages are read until the API gives no continue token.

    Raises `ApiUnavailable` (one line naming the API and `what`) when any page cannot be read,
    so a caller never works from a partial list. (A generic form of the pager in
    `pods.api.load_api_inventory`.)
    """
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    items: list[Any] = []
    token: str | None = None
    while True:
        try:
            data = call(token)
        except ApiException as exc:
            if not exc.status:  # the client's own transport error, no HTTP answer
                raise ApiUnavailable(f"Kubernetes API {host} unreachable: {exc.reason}") from None
            raise ApiUnavailable(
                f"Kubernetes API {host}: {what}: "
                + _refusal(exc.status, exc.reason or "", exc.body or "", "list pods")
            ) from None
        except (HTTPError, OSError, ValueError) as exc:
            raise ApiUnavailable(f"Kubernetes API {host} unreachable: {_first(exc)}") from None
        doc = reply(data, host, what)
        if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
            raise ApiUnavailable(f"Kubernetes API {host}: {what}: the answer is not a list")
        items.extend(doc["items"])
        token = continue_token(doc, host, what)
        if not token:
            return items


def _first(exc: BaseException) -> str:
    """`Type: first line of the message` of a transport error, for a one-line report."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _refusal(status: int, reason: str, body: Any, verb: str) -> str:
    """One line for an API refusal; 403 names the permission kubegc needs (`verb`)."""
    if status == 403:
        return f"403 Forbidden: kubegc needs permission to {verb}"
    text = body.decode(errors="replace") if isinstance(body, bytes) else str(body)
    return why_refused(status, reason, text).splitlines()[0]


def _time(value: Any) -> int:
    """RFC 3339 text from the API → ns since the epoch; 0 when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return 0
    try:
        return rfc3339_to_ns(value)
    except BadInput:
        return 0


def eviction_time(status: Mapping[str, Any]) -> int:
    """When the pod was evicted, ns since the epoch (0 = unknown): the DisruptionTarget
    condition's lastTransitionTime, else the Ready condition's, else `status.startTime`."""
    conditions = [c for c in status.get("conditions") or () if isinstance(c, Mapping)]
    for kind in ("DisruptionTarget", "Ready"):
        for c in conditions:
            if c.get("type") == kind and (at := _time(c.get("lastTransitionTime"))):
                return at
    return _time(status.get("startTime"))


def _owner(meta: Mapping[str, Any]) -> tuple[str, str]:
    """(kind, name) of the controller owner reference, else the first one, else ("", "")."""
    refs = [r for r in meta.get("ownerReferences") or () if isinstance(r, Mapping)]
    ref = next((r for r in refs if r.get("controller")), refs[0] if refs else None)
    return (str(ref.get("kind", "")), str(ref.get("name", ""))) if ref else ("", "")


def _part(item: Any, key: str) -> Mapping[str, Any]:
    """`item[key]` when it is an object, else an empty one (the API's answer is not trusted)."""
    value = item.get(key) if isinstance(item, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def _labels(meta: Mapping[str, Any]) -> dict[str, str]:
    """`metadata.labels` of an API answer, keeping only string keys and values."""
    labels = meta.get("labels")
    if not isinstance(labels, Mapping):
        return {}
    return {k: v for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)}


def _in_scope(item: Any, opts: PruneOptions) -> bool:
    """Phase Failed, on the node, in the namespace and with the labels asked for (checked
    here too, so a server that ignores the field or label selector changes nothing)."""
    meta = _part(item, "metadata")
    return (
        _part(item, "status").get("phase") == "Failed"
        and (opts.all_nodes or _part(item, "spec").get("nodeName") == opts.node)
        and (opts.namespace is None or meta.get("namespace") == opts.namespace)
        and (opts.selector is None or opts.selector.matches(_labels(meta)))
    )


def _is_evicted(item: Any, opts: PruneOptions) -> bool:
    """In scope and `status.reason` Evicted."""
    return _in_scope(item, opts) and _part(item, "status").get("reason") == "Evicted"


def _action(item: Mapping[str, Any], opts: PruneOptions, now: int) -> PodAction:
    """A planned deletion of one evicted pod, or a kept one with the rule that keeps it."""
    meta, spec, status = (_part(item, k) for k in ("metadata", "spec", "status"))
    at = eviction_time(status)
    kind, owner = _owner(meta)
    age = format_duration((now - at) / NS_PER_SECOND) if at else ""
    a = PodAction(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid") or ""),
        resource_version=str(meta.get("resourceVersion") or ""),
        node=str(spec.get("nodeName") or ""),
        owner_kind=kind,
        owner_name=owner,
        evicted_at=at,
        message=str(status.get("message") or ""),
        rule=RULE_EVICTED,
        reason=f"Evicted {age} ago" if at else "Evicted (time unknown)",
    )
    limit = format_go_duration(opts.older_than)
    if not a.uid or not a.resource_version:
        a.rule, a.reason = RULE_NO_IDENTITY, "the API gave no uid/resourceVersion to delete it by"
    elif meta.get("deletionTimestamp"):
        a.rule, a.reason = RULE_BEING_DELETED, "already being deleted (deletionTimestamp set)"
    elif opts.older_than and not at:
        a.rule, a.reason = RULE_TIME_UNKNOWN, f"eviction time unknown; --older-than {limit}"
    elif opts.older_than and now - at < opts.older_than * NS_PER_SECOND:
        a.rule, a.reason = RULE_TOO_RECENT, f"evicted {age} ago, less than --older-than {limit}"
    if a.rule != RULE_EVICTED:
        a.result = Result.KEPT
    return a


def _plan_from(
    items: list[Any], opts: PruneOptions, now: int
) -> tuple[list[PodAction], list[PodAction], int]:
    """(planned, kept, Failed pods that were not evicted), both lists sorted by (ns, name)."""
    evicted = [_action(i, opts, now) for i in items if _is_evicted(i, opts)]
    evicted.sort(key=lambda a: (a.namespace, a.name))
    planned = [a for a in evicted if a.result is Result.PLANNED]
    kept = [a for a in evicted if a.result is Result.KEPT]
    others = sum(1 for i in items if _in_scope(i, opts) and not _is_evicted(i, opts))
    return planned, kept, others


def _list_failed(api: Any, host: str, opts: PruneOptions, timeout: float) -> list[Any]:
    """The raw Failed pods (`fieldSelector` as `opts` says), every page. `ApiUnavailable`."""
    selector = opts.field_selector()

    def page(token: str | None) -> bytes:
        kwargs: dict[str, Any] = {
            "field_selector": selector,
            "limit": PAGE_SIZE,
            "_continue": token,
            "_preload_content": False,
            "_request_timeout": timeout,
        }
        if opts.selector is not None:
            kwargs["label_selector"] = str(opts.selector)
        if opts.namespace is not None:
            resp = api.list_namespaced_pod(opts.namespace, **kwargs)
        else:
            resp = api.list_pod_for_all_namespaces(**kwargs)
        return bytes(resp.data)

    return list_all(page, f"listing Failed pods of {opts.describe()}", host)


def list_evicted(
    src: ApiSource, opts: PruneOptions, timeout: float, *, now: int | None = None
) -> tuple[list[PodAction], list[PodAction]]:
    """The Evicted pods `opts` selects, as (planned deletions, kept), each sorted by
    (namespace, name). `timeout` is seconds per request; `now` ns since the epoch (default:
    the clock) is what `opts.older_than` is measured from; `opts.node` (not `src.node`) picks
    the node.

    Raises `ApiUnavailable` when the list cannot be read to the end, `BadInput` for unusable
    credentials or options.
    """
    opts.validate()
    api, host = open_api(src)
    try:
        items = _list_failed(api, host, opts, timeout)
    finally:
        _close(api)
    planned, kept, _ = _plan_from(items, opts, time.time_ns() if now is None else now)
    return planned, kept


def _close(api: Any) -> None:
    with contextlib.suppress(Exception):
        api.api_client.close()


@dataclass
class PodDeleter(Executor[PodAction]):
    """Deletes pods through the API (`client` is a `kubernetes.client.CoreV1Api`).

    Each pod is deleted with `V1DeleteOptions(preconditions=V1Preconditions(uid,
    resource_version))` as planned: 409 Conflict (the pod changed since the plan, or was
    re-created under its name) → skipped, not deleted; 404 → skipped, gone before removal;
    any other refusal → failed with the API's answer. A pod whose deletion waits on
    finalizers is removed with a note. An API that does not answer at all raises
    `ApiUnavailable`, which fails the action and counts toward halting the run.
    `timeout` is seconds per request; `host` names the API in messages.
    """

    client: Any
    host: str = ""
    timeout: float = 10.0

    def _act(self, a: PodAction) -> None:
        from kubernetes.client import V1DeleteOptions, V1Preconditions
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        body = V1DeleteOptions(
            preconditions=V1Preconditions(uid=a.uid, resource_version=a.resource_version)
        )
        try:
            resp = self.client.delete_namespaced_pod(
                name=a.name,
                namespace=a.namespace,
                body=body,
                _preload_content=False,
                _request_timeout=self.timeout,
            )
        except ApiException as exc:
            status = exc.status or 0
            if not status:
                raise ApiUnavailable(
                    f"Kubernetes API {self.host} unreachable: {exc.reason}"
                ) from None
            why = _refusal(status, exc.reason or "", exc.body or "", "delete pods")
            if status == 404:
                a.result, a.error = Result.SKIPPED, GONE
            elif status == 409:
                a.result, a.error = Result.SKIPPED, f"changed since the plan, not deleted ({why})"
            else:
                a.result, a.error = Result.FAILED, f"delete refused: {why}"
            return
        except (HTTPError, OSError) as exc:
            raise ApiUnavailable(f"Kubernetes API {self.host} unreachable: {_first(exc)}") from None
        a.result, a.log_note = Result.REMOVED, _pending(resp)


def _pending(resp: Any) -> str:
    """A note when the answer is the pod itself, still held by finalizers ("" otherwise; also
    when the answer is not JSON kubegc reads: the API accepted the deletion all the same)."""
    from urllib3.exceptions import HTTPError

    doc: Any = None
    with contextlib.suppress(ApiUnavailable, HTTPError, OSError):
        doc = reply(resp.data, "", "the deleted pod")
    meta = doc.get("metadata") if isinstance(doc, dict) and doc.get("kind") == "Pod" else None
    finalizers = (meta or {}).get("finalizers") or []
    if not finalizers:
        return ""
    return "deletion waits for finalizers: " + ", ".join(str(f) for f in finalizers)


def prune_evicted(s: Settings, opts: PruneOptions, act: ActOptions, ui: Ui) -> Plan[PodAction]:
    """`kubegc evict prune`: plan the deletion of Evicted pod shells, then (if allowed) delete.

    Uses `s.kubeconfig`, `s.context` and `s.env` (credentials as kubectl finds them),
    `s.timeout` (seconds per API request), `s.now` (ns; default the clock) for ages,
    `s.state_dir` (run lock and audit rows), and `act` (`dry_run`, `yes`, `concurrency`).

    Raises `BadInput` (exit 2) with `--snapshot`, for bad options, or when no credentials are
    found or they are unusable; `ApiUnavailable` (exit 3) when the pod list cannot be read to
    the end — nothing is deleted in either case; `Busy` (exit 4) when another run holds the
    lock. Returns the plan (kind `EvictedPodPlan`) with results filled in: a pod the API
    refused to delete is `failed`, which the caller turns into `PartialFailure` (exit 1).
    """
    from kubegc_cli.commands.session import Stage, carry_out, decide_mode, may_act

    if s.snapshot is not None:
        raise BadInput("evict prune reads pods from the Kubernetes API; --snapshot holds none")
    opts.validate()
    creds = find_credentials(s.kubeconfig, s.env)
    if creds is None:
        raise BadInput(
            "evict prune needs the Kubernetes API: give --kubeconfig, set KUBECONFIG, "
            "create ~/.kube/config, or run in a pod with a service account"
        )
    mode = decide_mode(s, act, ui, node_wide=False)  # it changes the API, not this node
    api, host = open_api(ApiSource(creds, s.context, opts.node))
    try:
        now = time.time_ns() if s.now is None else s.now
        ui.info(f"Kubernetes API {host} ({creds}): Failed pods of {opts.describe()}")
        items = _list_failed(api, host, opts, s.timeout)
        planned, kept, others = _plan_from(items, opts, now)
        labels = f" and labelSelector {opts.selector}" if opts.selector is not None else ""
        notes = [
            f"{len(items)} pod(s) listed with fieldSelector {opts.field_selector()}{labels}; "
            f"{len(planned) + len(kept)} evicted"
        ]
        if others:
            notes.append(f"{others} Failed pod(s) not evicted are left alone")
        notes.append(
            "each pod is deleted only if its uid and resourceVersion still match this plan"
        )
        plan: Plan[PodAction] = Plan(
            kind=PLAN_KIND,
            policy=opts.to_dict(),
            now=now,
            actions=planned,
            kept=kept,
            notes=notes,
            source=f"api:{host} {opts.describe()}",
        )
        if may_act(mode, plan, ui, "evicted pod", act):
            deleter = PodDeleter(api, concurrency=act.concurrency, host=host, timeout=s.timeout)
            carry_out(s, plan, [Stage(deleter, (PodAction.kind,))], COMMAND, ui)
        return plan
    finally:
        _close(api)

"""Each node's `NodeGCReport` (`core.fleet`: group `kubegc.io`, version `v1alpha1`, cluster
scoped), written and read through the Kubernetes API with the official client's
`CustomObjectsApi`.

- A report is named after its node and owned by the Node: `ownerReferences` names the Node
  (`apiVersion: v1`, `kind: Node`, name, uid), so kube-controller-manager's garbage collector
  deletes the report once the Node is gone. The owner is cluster scoped as the report is
  (a cluster-scoped dependent may only name a cluster-scoped owner); the collector matches
  the owner by uid, so a Node re-created under the same name is another owner: the next write
  points the reference at the new uid. Neither `controller` nor `blockOwnerDeletion` is set:
  the collector does not need them to delete a dependent, and `blockOwnerDeletion` would
  need permission to update `nodes/finalizers` (the OwnerReferencesPermissionEnforcement
  admission plugin).
- The status is written through the `status` subresource (a create or an update of the
  object itself drops it), replacing the whole status, with the resourceVersion just read;
  a 409 Conflict (another writer in between) is retried once with a fresh read.
- Lists are read in pages (`limit`/`continue`), to the end or not at all.

Requests: a write is 3 (GET the Node, GET the report, PUT its status: one write), the first
one 4 (the POST that creates it), a re-owned one 5 (a PUT of the object first); a list is one
GET per page of `REPORTS_PAGE`. The identity needs `get` on nodes; `get`, `create`, `update`
on nodegcreports.kubegc.io and `update` on nodegcreports/status to write; `list` to list.

Every failure raises `ApiUnavailable` (exit 3), one line naming the API and the refusal.
The `kubernetes` package is imported only when the API is called.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from kubegc_cli.core.fleet import GROUP, KIND, PLURAL, VERSION, NodeReport
from kubegc_cli.core.inputs import Malformed, check_text
from kubegc_cli.node.pods.api import ApiUnavailable
from kubegc_cli.node.pods.evicted import list_all, refusal, transport_error

#: Seconds each API request may take.
TIMEOUT = 30.0
#: Reports per page of a list, and the most of one page read: a report kubegc writes is at
#: most about 40 KiB (its bounds, `core.fleet`), so 100 of them are 4 MiB; a page over 16 MiB
#: holds reports kubegc did not write (annotations, finalizers: any agent's token may create
#: reports), and decoding it could take the agent past its memory limit.
REPORTS_PAGE = 100
MAX_PAGE_BYTES = 16 << 20
API_VERSION = f"{GROUP}/{VERSION}"

#: Said after a 404 for the resource itself: the API serves no such kind.
NOT_SERVED = f" (the API serves no {PLURAL}.{GROUP}: apply deploy/kubernetes/crd-nodegcreport.yaml)"

T = TypeVar("T")


class _Refused(Exception):
    """An API answer other than success, kept for the caller to decide on (404, 409)."""

    def __init__(self, status: int, line: str) -> None:
        super().__init__(line)
        self.status = status


def host_of(api_client: Any) -> str:
    """The API server's URL `api_client` (a `kubernetes.client.ApiClient`) talks to."""
    return str(getattr(getattr(api_client, "configuration", None), "host", "") or "?")


def owner_reference(node: str, uid: str) -> dict[str, str]:
    """The `ownerReferences` entry naming Node `node` with `uid`."""
    return {"apiVersion": "v1", "kind": "Node", "name": node, "uid": uid}


def _call(host: str, what: str, verb: str, fn: Callable[[], T]) -> T:
    """`fn()`, its failures as `_Refused` (an HTTP answer) or `ApiUnavailable` (none)."""
    # deferred: tests/unit/test_cli.py::test_help_and_version_do_not_import_heavy_modules
    from kubernetes.client.exceptions import ApiException

    # deferred: tests/unit/test_cli.py::test_help_and_version_do_not_import_heavy_modules
    from urllib3.exceptions import HTTPError

    try:
        return fn()
    except ApiException as exc:
        if not exc.status:
            raise ApiUnavailable(f"Kubernetes API {host} unreachable: {exc.reason}") from None
        line = refusal(exc.status, exc.reason or "", exc.body or "", verb)
        raise _Refused(exc.status, f"Kubernetes API {host}: {what}: {line}") from None
    except (HTTPError, OSError, ValueError) as exc:
        raise ApiUnavailable(f"Kubernetes API {host} unreachable: {transport_error(exc)}") from None


def _objects(api_client: Any) -> Any:
    # deferred: tests/unit/test_cli.py::test_help_and_version_do_not_import_heavy_modules
    from kubernetes.client import CustomObjectsApi

    return CustomObjectsApi(api_client)


def node_uid(api_client: Any, node: str, *, timeout: float = TIMEOUT) -> str:
    """The uid of Node `node`. Raises `ApiUnavailable` when it cannot be read (absent too)."""
    # deferred: tests/unit/test_cli.py::test_help_and_version_do_not_import_heavy_modules
    from kubernetes.client import CoreV1Api

    host = host_of(api_client)
    what = f"reading node {node}"
    try:
        read = partial(CoreV1Api(api_client).read_node, node, _request_timeout=timeout)
        found = _call(host, what, "get nodes", read)
    except _Refused as exc:
        raise ApiUnavailable(str(exc)) from None
    uid = getattr(getattr(found, "metadata", None), "uid", None)
    if not isinstance(uid, str) or not uid:
        raise ApiUnavailable(f"Kubernetes API {host}: {what}: the Node has no uid")
    return uid


def write_report(api_client: Any, report: NodeReport, *, timeout: float = TIMEOUT) -> None:
    """Write `report` as the status of the `NodeGCReport` named `report.node`.

    Reads the Node for its uid; creates the report (owned by that Node) when there is none,
    points its Node ownerReference at that uid when it names another (the Node was
    re-created under the same name), then replaces the status through the `status`
    subresource with the resourceVersion read. A 409 Conflict (or the report deleted in
    between) is retried once from a fresh read. `timeout` is seconds per request.

    Raises `ApiUnavailable` (one line: the API, what was done, the refusal) on any failure:
    the Node absent or unreadable, a refusal, a second conflict, no answer.
    """
    host = host_of(api_client)
    name = report.node
    uid = node_uid(api_client, name, timeout=timeout)
    owner = owner_reference(name, uid)
    api = _objects(api_client)
    what = f"writing the {KIND} of node {name}"
    verb = f"create and update {PLURAL}.{GROUP} and {PLURAL}/status"
    last = ""
    for _attempt in range(2):
        try:
            current = _get(api, host, name, timeout)
            if current is None:
                body = {"apiVersion": API_VERSION, "kind": KIND,
                        "metadata": {"name": name, "ownerReferences": [owner]}}  # fmt: skip
                create = partial(api.create_cluster_custom_object, GROUP, VERSION, PLURAL, body,
                                 _request_timeout=timeout)  # fmt: skip
                try:
                    current = _call(host, what, verb, create)
                except _Refused as exc:
                    if exc.status == 404:
                        raise ApiUnavailable(f"{exc}{NOT_SERVED}") from None
                    raise
            elif not _owned_by(current, owner):
                meta = current.setdefault("metadata", {})
                meta["ownerReferences"] = [
                    *(r for r in meta.get("ownerReferences") or () if not _is_node(r)),
                    owner,
                ]
                current.pop("status", None)
                fix = partial(api.replace_cluster_custom_object, GROUP, VERSION, PLURAL, name,
                              current, _request_timeout=timeout)  # fmt: skip
                current = _call(host, what, verb, fix)
            version = (current.get("metadata") or {}).get("resourceVersion")
            body = {"apiVersion": API_VERSION, "kind": KIND,
                    "metadata": {"name": name, "resourceVersion": version},
                    "status": report.to_status()}  # fmt: skip
            _call(host, what, verb, partial(api.replace_cluster_custom_object_status, GROUP,
                  VERSION, PLURAL, name, body, _request_timeout=timeout))  # fmt: skip
            return
        except _Refused as exc:
            if exc.status not in (404, 409):  # 409: changed (or created) by another writer
                raise ApiUnavailable(str(exc)) from None
            last = str(exc)
    raise ApiUnavailable(f"{last} (twice)")


def _is_node(ref: Any) -> bool:
    return isinstance(ref, dict) and ref.get("kind") == "Node" and ref.get("apiVersion") == "v1"


def _owned_by(obj: dict[str, Any], owner: dict[str, str]) -> bool:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return any(_is_node(r) and r.get("uid") == owner["uid"] for r in refs)


def _get(api: Any, host: str, name: str, timeout: float) -> dict[str, Any] | None:
    """The `NodeGCReport` `name` as a dict, None when there is none (404); else `_Refused`."""
    what = f"reading the {KIND} of node {name}"
    try:
        get = partial(api.get_cluster_custom_object, GROUP, VERSION, PLURAL, name,
                      _request_timeout=timeout)  # fmt: skip
        found = _call(host, what, f"get {PLURAL}.{GROUP}", get)
    except _Refused as exc:
        if exc.status == 404:
            return None
        raise
    if not isinstance(found, dict):
        raise ApiUnavailable(f"Kubernetes API {host}: {what}: the answer is not an object")
    return found


def read_report(api_client: Any, node: str, *, timeout: float = TIMEOUT) -> NodeReport | None:
    """The report of node `node` (`NodeReport.from_status` of its status), None when it has
    none. Raises `ApiUnavailable` when it cannot be read."""
    host = host_of(api_client)
    try:
        found = _get(_objects(api_client), host, node, timeout)
    except _Refused as exc:
        raise ApiUnavailable(str(exc)) from None
    return None if found is None else _report_of(found)


def list_reports(
    api_client: Any, *, timeout: float = TIMEOUT, page_size: int = REPORTS_PAGE
) -> list[NodeReport]:
    """Every `NodeGCReport`, read in pages of `page_size` (`limit`/`continue`) to the end, in
    the API's order (by name). A report whose status was never written counts as observed
    never (`observed_at` ""). A report kubegc cannot take as its node's — one not owned by
    the Node of its name (kubegc writes every report with that ownerReference; the garbage
    collector deletes one whose owner's uid is not a Node's), or one holding text no report
    can (a NUL) — comes back as observed never, with nothing but `error` saying why: it
    counts for no circuit breaker, and `kubegc fleet` shows it as stale, so that one
    forged report can neither blind the fleet's view nor hold the breaker. Raises
    `ApiUnavailable` when any page cannot be read, or is larger than `MAX_PAGE_BYTES`."""
    api = _objects(api_client)
    host = host_of(api_client)

    # deferred: tests/unit/test_cli.py::test_help_and_version_do_not_import_heavy_modules
    from kubernetes.client.exceptions import ApiException

    what = f"listing {PLURAL}.{GROUP}"

    def page(token: str | None) -> bytes:
        try:
            resp = api.list_cluster_custom_object(
                GROUP, VERSION, PLURAL, limit=page_size, _continue=token,
                _preload_content=False, _request_timeout=timeout,
            )  # fmt: skip
        except ApiException as exc:
            if exc.status == 404 and token is None:
                line = f"Kubernetes API {host}: {what}: 404 Not Found{NOT_SERVED}"
                raise ApiUnavailable(line) from None
            raise
        try:
            data = resp.read(MAX_PAGE_BYTES + 1)
        finally:
            resp.release_conn()
        if len(data) > MAX_PAGE_BYTES:
            raise ApiUnavailable(
                f"Kubernetes API {host}: {what}: a page of {page_size} reports is larger than "
                f"{MAX_PAGE_BYTES >> 20} MiB (reports kubegc did not write: see "
                "kubectl get nodegcreports)"
            )
        return bytes(data)

    items = list_all(page, what, host, verb=f"list {PLURAL}.{GROUP}", text_checked=False)
    return [_report_of(item) for item in items if isinstance(item, dict)]


def _report_of(obj: dict[str, Any]) -> NodeReport:
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    name = str(meta.get("name", ""))  # a name the API server validated (DNS subdomain)
    try:
        check_text(obj, f"{KIND} {name}")
    except Malformed as exc:
        return NodeReport(node=name, observed_at="", error=f"report unreadable: {exc}")
    owners = meta.get("ownerReferences")
    if not isinstance(owners, list) or not any(_names_its_node(o, name) for o in owners):
        return NodeReport(
            node=name, observed_at="", error=f"report ignored: not owned by Node {name}"
        )
    status = obj.get("status")
    try:
        return NodeReport.from_status(name, status if isinstance(status, dict) else {})
    except (AttributeError, TypeError, ValueError, KeyError) as exc:
        # a status of another shape than the CRD's schema allows (written past the API
        # server, straight into its storage): read as no report
        why = f"status.{type(exc).__name__}: {str(exc)[:80]}"
        return NodeReport(node=name, observed_at="", error=f"report unreadable: {why}")


def _names_its_node(owner: Any, name: str) -> bool:
    return (
        isinstance(owner, dict)
        and owner.get("apiVersion") == "v1"
        and owner.get("kind") == "Node"
        and owner.get("name") == name
    )

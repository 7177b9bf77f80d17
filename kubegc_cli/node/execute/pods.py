"""Deleting Evicted pods through the Kubernetes API: the one destructive call of `evict prune`.

Each pod is deleted with its planned `uid` and `resourceVersion` as preconditions, so the API
server itself refuses a pod that changed since the plan (409 Conflict → skipped): the re-check
is atomic with the deletion.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from kubegc_cli.core.plan import GONE, PodAction, Result
from kubegc_cli.node.execute.actions import Executor
from kubegc_cli.node.pods.api import ApiUnavailable, reply
from kubegc_cli.node.pods.evicted import refusal, transport_error


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
        # deferred: tests/unit/test_cli.py::test_help_and_version_do_not_import_heavy_modules
        from kubernetes.client import V1DeleteOptions, V1Preconditions

        # deferred: tests/unit/test_cli.py::test_help_and_version_do_not_import_heavy_modules
        from kubernetes.client.exceptions import ApiException

        # deferred: tests/unit/test_cli.py::test_help_and_version_do_not_import_heavy_modules
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
            why = refusal(status, exc.reason or "", exc.body or "", "delete pods")
            if status == 404:
                a.result, a.error = Result.SKIPPED, GONE
            elif status == 409:
                a.result, a.error = Result.SKIPPED, f"changed since the plan, not deleted ({why})"
            else:
                a.result, a.error = Result.FAILED, f"delete refused: {why}"
            return
        except (HTTPError, OSError) as exc:
            raise ApiUnavailable(
                f"Kubernetes API {self.host} unreachable: {transport_error(exc)}"
            ) from None
        a.result, a.log_note = Result.REMOVED, _pending(resp)


def _pending(resp: Any) -> str:
    """A note when the answer is the pod itself, still held by finalizers ("" otherwise; also
    when the answer is not JSON kubegc reads: the API accepted the deletion all the same)."""
    # deferred: tests/unit/test_cli.py::test_help_and_version_do_not_import_heavy_modules
    from urllib3.exceptions import HTTPError

    doc: Any = None
    with contextlib.suppress(ApiUnavailable, HTTPError, OSError):
        doc = reply(resp.data, "", "the deleted pod")
    meta = doc.get("metadata") if isinstance(doc, dict) and doc.get("kind") == "Pod" else None
    finalizers = (meta or {}).get("finalizers") or []
    if not finalizers:
        return ""
    return "deletion waits for finalizers: " + ", ".join(str(f) for f in finalizers)

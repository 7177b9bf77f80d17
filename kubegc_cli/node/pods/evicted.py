"""Failed pods listed from the Kubernetes API, every page or none: what `evict prune` plans on.

A list that cannot be read to the end raises `ApiUnavailable` (exit 3), so nothing is ever
planned on a partial list. The `kubernetes` package is imported only when a list is read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from kubegc_cli.node.pods.api import (
    PAGE_SIZE,
    ApiUnavailable,
    continue_token,
    reply,
    why_refused,
)


def list_all(
    call: Callable[[str | None], bytes],
    what: str,
    host: str,
    *,
    verb: str = "list pods",
    text_checked: bool = True,
) -> list[Any]:
    """Every item of a paged Kubernetes list: `call(continue_token)` returns one page's raw
    JSON (the caller passes `limit`); pages are read until the API gives no continue token.
    `verb` names the permission a 403 says kubegc needs ("list pods"). Without
    `text_checked` the items' strings are the caller's to check (`pods.api.reply`).

    Raises `ApiUnavailable` (one line naming the API and `what`) when any page cannot be read,
    so a caller never works from a partial list. (A generic form of the pager in
    `pods.api.load_api_inventory`.)
    """
    # deferred: tests/unit/test_cli.py::test_help_and_version_do_not_import_heavy_modules
    from kubernetes.client.exceptions import ApiException

    # deferred: tests/unit/test_cli.py::test_help_and_version_do_not_import_heavy_modules
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
                + refusal(exc.status, exc.reason or "", exc.body or "", verb)
            ) from None
        except (HTTPError, OSError, ValueError) as exc:
            raise ApiUnavailable(
                f"Kubernetes API {host} unreachable: {transport_error(exc)}"
            ) from None
        doc = reply(data, host, what, text_checked=text_checked)
        if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
            raise ApiUnavailable(f"Kubernetes API {host}: {what}: the answer is not a list")
        items.extend(doc["items"])
        token = continue_token(doc, host, what)
        if not token:
            return items


def transport_error(exc: BaseException) -> str:
    """`Type: first line of the message` of a transport error, for a one-line report."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def refusal(status: int, reason: str, body: Any, verb: str) -> str:
    """One line for an API refusal; 403 names the permission kubegc needs (`verb`)."""
    if status == 403:
        return f"403 Forbidden: kubegc needs permission to {verb}"
    text = body.decode(errors="replace") if isinstance(body, bytes) else str(body)
    return why_refused(status, reason, text).splitlines()[0]


def list_failed(
    api: Any,
    host: str,
    timeout: float,
    *,
    field_selector: str,
    label_selector: str | None,
    namespace: str | None,
    what: str,
) -> list[Any]:
    """The raw pods `field_selector` selects (with `label_selector`, in `namespace`: None =
    every namespace), every page, through `api` (a `kubernetes.client.CoreV1Api`); `timeout`
    is seconds per request, `what` names the list in messages. Raises `ApiUnavailable`."""
    selector = field_selector

    def page(token: str | None) -> bytes:
        kwargs: dict[str, Any] = {
            "field_selector": selector,
            "limit": PAGE_SIZE,
            "_continue": token,
            "_preload_content": False,
            "_request_timeout": timeout,
        }
        if label_selector is not None:
            kwargs["label_selector"] = label_selector
        if namespace is not None:
            resp = api.list_namespaced_pod(namespace, **kwargs)
        else:
            resp = api.list_pod_for_all_namespaces(**kwargs)
        return bytes(resp.data)

    return list_all(page, what, host)


def close_api(api: Any) -> None:
    """Close `api`'s connections (a failure to close changes nothing)."""
    with contextlib.suppress(Exception):
        api.api_client.close()

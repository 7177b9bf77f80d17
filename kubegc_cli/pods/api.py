"""The Kubernetes API as pod source: the pods bound to this node, read with the official client.

The `kubernetes` package is imported only here, and only when this source is used.

- Credentials as kubectl finds them: `--kubeconfig`, else `KUBECONFIG`, else `~/.kube/config`,
  else the in-cluster service account (`KUBERNETES_SERVICE_HOST` and its token file);
  `--context` picks a kubeconfig context.
- The node is `--node-name`, else this machine's hostname lower-cased, as the kubelet takes it.
- Pods are listed with `fieldSelector=spec.nodeName=<node>` in pages (`limit`/`continue`); a
  list that cannot be read to the end counts as unavailable, never as partial.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubegc_cli.errors import BadInput, RuntimeUnavailable
from kubegc_cli.pods import PodInventory, inventory_from_podlist

IN_CLUSTER = "in-cluster"
TOKEN_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/token"
PAGE_SIZE = 500


class ApiUnavailable(RuntimeUnavailable):
    """The API could not be read completely (unreachable, refused, timed out). Exit code 3."""


@dataclass(frozen=True, slots=True)
class ApiSource:
    """Where the API is: `kubeconfig` (a path, or `in-cluster`), `context`, and the node name."""

    kubeconfig: str
    context: str | None
    node: str


def find_credentials(explicit: str | None, env: Mapping[str, str]) -> str | None:
    """The kubeconfig path kubectl would use, `in-cluster`, or None when there is none."""
    if explicit:
        return explicit

    def is_file(path: Path) -> bool:  # a home kubegc may not look into has no kubeconfig
        try:  # and a file it may not read is skipped (--kubeconfig names one explicitly)
            found = path.expanduser()
            return found.is_file() and os.access(found, os.R_OK)
        except (OSError, RuntimeError):
            return False

    if env.get("KUBECONFIG"):  # as kubectl: when set, ~/.kube/config is not looked at
        for candidate in env["KUBECONFIG"].split(os.pathsep):
            if candidate and is_file(Path(candidate)):
                return str(Path(candidate).expanduser())
    elif is_file(Path("~/.kube/config")):
        return str(Path("~/.kube/config").expanduser())
    if env.get("KUBERNETES_SERVICE_HOST") and is_file(Path(TOKEN_FILE)):
        return IN_CLUSTER
    return None


def node_name(explicit: str | None) -> str:
    """`--node-name`, else the hostname lower-cased (the kubelet's default node name)."""
    return (explicit or socket.gethostname()).lower()


def _client(src: ApiSource) -> tuple[Any, str]:
    import yaml
    from kubernetes import client
    from kubernetes import config as kubeconfig

    config: Any = kubeconfig
    cfg = client.Configuration()
    try:
        if src.kubeconfig == IN_CLUSTER:
            config.load_incluster_config(client_configuration=cfg)
        else:
            config.load_kube_config(
                config_file=src.kubeconfig, context=src.context, client_configuration=cfg
            )
    except (TypeError, AttributeError, KeyError):  # YAML, but not shaped like a kubeconfig
        raise BadInput(
            f"cannot use kubeconfig {src.kubeconfig}: not a kubeconfig (expected clusters, "
            "users and contexts)"
        ) from None
    except (config.ConfigException, OSError, ValueError, yaml.YAMLError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BadInput(f"cannot use kubeconfig {src.kubeconfig}: {first}") from None
    if not str(cfg.host).startswith(("https://", "http://")):  # urllib3 would only warn
        raise BadInput(
            f"cannot use kubeconfig {src.kubeconfig}: server {cfg.host!r} is not an https:// URL"
        )
    cfg.retries = 0
    return client.CoreV1Api(client.ApiClient(cfg)), cfg.host


def _why(status: int, reason: str, body: str) -> str:
    if status == 401:
        return "401 Unauthorized: the credentials were not accepted"
    if status == 403:
        return "403 Forbidden: kubegc needs permission to list pods in all namespaces"
    detail = ""
    with contextlib.suppress(ValueError, AttributeError):
        detail = json.loads(body).get("message", "")
    return f"{status} {reason}" + (f": {detail}" if detail else "")


def load_api_inventory(src: ApiSource, timeout: float) -> PodInventory:
    """Every pod bound to `src.node`, read page by page. `timeout` seconds per request.

    Raises `ApiUnavailable` (one line naming the API) when any page cannot be read, and
    `BadInput` when the kubeconfig itself is unusable.
    """
    api, host = _client(src)
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    items: list[Any] = []
    token: str | None = None
    pages = 0
    while True:
        try:
            resp = api.list_pod_for_all_namespaces(
                field_selector=f"spec.nodeName={src.node}",
                limit=PAGE_SIZE,
                _continue=token,
                _preload_content=False,
                _request_timeout=timeout,
            )
            doc = json.loads(resp.data)
        except ApiException as exc:
            raise ApiUnavailable(
                f"Kubernetes API {host}: listing pods of node {src.node}: "
                + _why(exc.status or 0, exc.reason or "", exc.body or "")
            ) from None
        except (HTTPError, OSError, ValueError) as exc:
            raise ApiUnavailable(
                f"Kubernetes API {host} unreachable: {type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else ''}"
            ) from None
        if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
            raise ApiUnavailable(f"Kubernetes API {host}: the pod list is not a PodList")
        items.extend(doc["items"])
        pages += 1
        token = (doc.get("metadata") or {}).get("continue") or None
        if not token:
            break
    return inventory_from_podlist(
        {"kind": "PodList", "items": items}, source=f"api:{host} node {src.node}"
    )


def read_node(src: ApiSource, timeout: float) -> dict[str, Any]:
    """The decoded Node object `src.node` (for its `status.allocatable`).

    Raises `ApiUnavailable` when it cannot be read (missing, refused, unreachable).
    """
    api, host = _client(src)
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    try:
        resp = api.read_node(src.node, _preload_content=False, _request_timeout=timeout)
        doc = json.loads(resp.data)
    except ApiException as exc:
        raise ApiUnavailable(
            f"Kubernetes API {host}: reading node {src.node}: "
            + _why(exc.status or 0, exc.reason or "", exc.body or "")
        ) from None
    except (HTTPError, OSError, ValueError) as exc:
        raise ApiUnavailable(f"Kubernetes API {host} unreachable: {type(exc).__name__}") from None
    if not isinstance(doc, dict) or doc.get("kind") not in (None, "Node"):
        raise ApiUnavailable(f"Kubernetes API {host}: node {src.node} is not a Node")
    return doc

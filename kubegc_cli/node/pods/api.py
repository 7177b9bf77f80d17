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

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubegc_cli.core.errors import BadInput, RuntimeUnavailable
from kubegc_cli.core.inputs import Malformed, decode_json, parse_yaml, read_text
from kubegc_cli.core.pods import PodInventory, inventory_from_podlist

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


def open_api(src: ApiSource) -> tuple[Any, str]:
    """A `CoreV1Api` for `src` and the API's URL. Raises `BadInput` as `api_config` does."""
    # deferred: tests/unit/test_startup.py::test_a_plain_dry_run_loads_no_heavy_package
    from kubernetes import client

    cfg = api_config(src)
    return client.CoreV1Api(client.ApiClient(cfg)), cfg.host


def api_config(src: ApiSource) -> Any:
    """The official client's `Configuration` for `src`'s kubeconfig or in-cluster account:
    the API's URL, CA file, bearer token or client certificate. Raises `BadInput` (one line)
    for a kubeconfig that cannot be used."""
    # deferred: tests/unit/test_startup.py::test_a_plain_dry_run_loads_no_heavy_package
    from kubernetes import client
    from kubernetes import config as kubeconfig
    from kubernetes.config import kube_config

    config: Any = kubeconfig
    loader_of: Any = kube_config.KubeConfigLoader
    cfg = client.Configuration()
    not_one = (
        f"cannot use kubeconfig {src.kubeconfig}: not a kubeconfig (expected clusters, users "
        "and contexts)"
    )
    try:
        if src.kubeconfig == IN_CLUSTER:
            config.load_incluster_config(client_configuration=cfg)
        else:
            path = Path(src.kubeconfig)
            # read as every YAML file kubegc reads (one line for a bad one, never a
            # traceback); relative paths in it are relative to its directory, as for kubectl
            doc = parse_yaml(read_text(path, "kubeconfig"), path, "kubeconfig")
            if not isinstance(doc, dict):
                raise BadInput(not_one)
            loader = loader_of(
                config_dict=doc,
                active_context=src.context,
                config_base_path=os.path.dirname(os.path.abspath(path)),
            )
            loader.load_and_set(cfg)
    except (TypeError, AttributeError, KeyError):  # YAML, but not shaped like a kubeconfig
        raise BadInput(not_one) from None
    except (config.ConfigException, OSError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BadInput(f"cannot use kubeconfig {src.kubeconfig}: {first}") from None
    if not str(cfg.host).startswith(("https://", "http://")):  # urllib3 would only warn
        raise BadInput(
            f"cannot use kubeconfig {src.kubeconfig}: server {cfg.host!r} is not an https:// URL"
        )
    cfg.proxy = proxy_url(src.kubeconfig, cfg.proxy)
    cfg.retries = 0
    return cfg


#: The `proxy-url` schemes kubectl (client-go) takes.
PROXY_SCHEMES = ("http", "https", "socks5")


def proxy_url(kubeconfig: str, url: Any) -> str | None:
    """The proxy the client is to use for the cluster's `proxy-url` `url` in `kubeconfig`
    (None when there is none): as kubectl, an `http://`, `https://` or `socks5://` URL with a
    host. A `socks5://` proxy is given the API's host name to resolve, as kubectl's (Go's)
    dialer gives it (urllib3 calls that `socks5h://`); it needs the PySocks package.

    Raises `BadInput` (one line naming the kubeconfig and the proxy-url) for another scheme,
    no host, or a missing PySocks."""
    if url is None or url == "":
        return None
    # deferred: tests/unit/test_startup.py::test_a_plain_dry_run_loads_no_heavy_package
    from urllib3.exceptions import LocationParseError
    from urllib3.util import parse_url

    where = f"cannot use kubeconfig {kubeconfig}: proxy-url {url!r}"
    try:
        parsed = parse_url(url) if isinstance(url, str) else None
    except LocationParseError:
        parsed = None
    scheme = (parsed.scheme or "").lower() if parsed is not None else ""
    if parsed is None or scheme not in PROXY_SCHEMES or not parsed.host:
        raise BadInput(f"{where} is not an http://, https:// or socks5:// URL with a host")
    assert isinstance(url, str)
    if scheme != "socks5":
        return url
    import warnings

    try:
        with warnings.catch_warnings():  # (urllib3 warns before it raises: said below)
            warnings.simplefilter("ignore")
            # deferred: tests/unit/test_startup.py::test_a_plain_dry_run_loads_no_heavy_package
            import urllib3.contrib.socks  # noqa: F401  (imports PySocks)
    except ImportError:
        raise BadInput(f"{where} needs the PySocks package, which is not installed") from None
    return "socks5h" + url[len(scheme) :]


def status_message(body: str | bytes) -> str:
    """The `message` of the API's `Status` reply `body` (its explanation of a refusal); ""
    when the body is not a Status document kubegc reads (`decode_json`), or has none."""
    try:
        doc = decode_json(body, "the API's Status reply")
    except Malformed:
        return ""
    message = doc.get("message") if isinstance(doc, dict) else None
    return message if isinstance(message, str) else ""


def reply(data: bytes, host: str, what: str, *, text_checked: bool = True) -> Any:
    """The decoded JSON reply `data` of the API at `host` to the request for `what` ("the
    pod list"). Raises `ApiUnavailable` naming the API and `what` when it is not JSON kubegc
    reads (`decode_json`: not JSON, nested too deeply, ...): a reply that cannot be read is
    no answer. Without `text_checked`, strings holding a NUL are left to the caller
    (`core.inputs.check_text`)."""
    try:
        return decode_json(data, f"Kubernetes API {host}: {what}", text_checked=text_checked)
    except Malformed as exc:
        raise ApiUnavailable(str(exc)) from None


def continue_token(page: dict[str, Any], host: str, what: str) -> str | None:
    """The token for the page after `page` (a decoded list reply of the API at `host` to the
    request for `what`): None on the last page (no `metadata.continue`, or empty). Raises
    `ApiUnavailable` when `metadata` is not an object or the token not a string: whether more
    pages follow cannot be told, and a list is read to its end or not at all."""
    meta = page.get("metadata")
    token = meta.get("continue") if isinstance(meta, dict) else None
    if (meta is not None and not isinstance(meta, dict)) or not isinstance(token, str | None):
        raise ApiUnavailable(
            f"Kubernetes API {host}: {what}: the list's metadata.continue is not a string"
        )
    return token or None


def why_refused(status: int, reason: str, body: str) -> str:
    if status == 401:
        return "401 Unauthorized: the credentials were not accepted"
    if status == 403:
        return "403 Forbidden: kubegc needs permission to list pods in all namespaces"
    detail = status_message(body)
    return f"{status} {reason}" + (f": {detail}" if detail else "")


def load_api_inventory(src: ApiSource, timeout: float) -> PodInventory:
    """Every pod bound to `src.node`, read page by page. `timeout` seconds per request.

    Raises `ApiUnavailable` (one line naming the API) when any page cannot be read, and
    `BadInput` when the kubeconfig itself is unusable.
    """
    api, host = open_api(src)
    # deferred: tests/unit/test_startup.py::test_a_plain_dry_run_loads_no_heavy_package
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    items: list[Any] = []
    token: str | None = None
    pages = 0
    what = f"the pods of node {src.node}"
    while True:
        try:
            resp = api.list_pod_for_all_namespaces(
                field_selector=f"spec.nodeName={src.node}",
                limit=PAGE_SIZE,
                _continue=token,
                _preload_content=False,
                _request_timeout=timeout,
            )
            data = resp.data
        except ApiException as exc:
            raise ApiUnavailable(
                f"Kubernetes API {host}: listing pods of node {src.node}: "
                + why_refused(exc.status or 0, exc.reason or "", exc.body or "")
            ) from None
        except (HTTPError, OSError, ValueError) as exc:
            raise ApiUnavailable(
                f"Kubernetes API {host} unreachable: {type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else ''}"
            ) from None
        doc = reply(data, host, what)
        if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
            raise ApiUnavailable(f"Kubernetes API {host}: the pod list is not a PodList")
        items.extend(doc["items"])
        pages += 1
        token = continue_token(doc, host, what)
        if not token:
            break
    return inventory_from_podlist(
        {"kind": "PodList", "items": items}, source=f"api:{host} node {src.node}"
    )


def read_node(src: ApiSource, timeout: float) -> dict[str, Any]:
    """The decoded Node object `src.node` (for its `status.allocatable`).

    Raises `ApiUnavailable` when it cannot be read (missing, refused, unreachable).
    """
    api, host = open_api(src)
    # deferred: tests/unit/test_startup.py::test_a_plain_dry_run_loads_no_heavy_package
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    try:
        resp = api.read_node(src.node, _preload_content=False, _request_timeout=timeout)
        data = resp.data
    except ApiException as exc:
        raise ApiUnavailable(
            f"Kubernetes API {host}: reading node {src.node}: "
            + why_refused(exc.status or 0, exc.reason or "", exc.body or "")
        ) from None
    except (HTTPError, OSError, ValueError) as exc:
        raise ApiUnavailable(f"Kubernetes API {host} unreachable: {type(exc).__name__}") from None
    doc = reply(data, host, f"node {src.node}")
    if not isinstance(doc, dict) or doc.get("kind") not in (None, "Node"):
        raise ApiUnavailable(f"Kubernetes API {host}: node {src.node} is not a Node")
    return doc


def get_node_proxy(src: ApiSource, path: str, limit: int, timeout: float) -> tuple[bytes, str]:
    """GET `path` of the node's kubelet through the API server's node proxy:
    `GET /api/v1/nodes/<node>/proxy/<path>` (needs `get` on `nodes/proxy`). Returns the reply's
    first `limit + 1` bytes (the caller tells an oversized reply by its length) and the text
    naming what was asked.

    Raises `ApiUnavailable` when it cannot be read: refused (a 403 names the permission), or no
    kubelet answering behind the proxy."""
    api, host = open_api(src)
    # deferred: tests/unit/test_startup.py::test_a_plain_dry_run_loads_no_heavy_package
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    what = f"Kubernetes API {host}: node {src.node} /{path} (nodes/proxy)"
    try:
        resp = api.connect_get_node_proxy_with_path(
            src.node, path, _preload_content=False, _request_timeout=timeout
        )
        data = resp.read(limit + 1)
    except ApiException as exc:
        if exc.status == 403:
            why = "403 Forbidden: reading it needs get on nodes/proxy"
        else:
            why = why_refused(exc.status or 0, exc.reason or "", exc.body or "")
        raise ApiUnavailable(f"{what}: {why}") from None
    except (HTTPError, OSError, ValueError) as exc:
        raise ApiUnavailable(f"Kubernetes API {host} unreachable: {type(exc).__name__}") from None
    return bytes(data), what

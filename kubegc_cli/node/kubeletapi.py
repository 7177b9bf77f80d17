"""The node's own kubelet over its HTTPS port (10250): `/pods` and `/configz`.

- `/pods` is the PodList of the pods bound to this node as the kubelet holds them: a pod
  source that costs the API server nothing (`--pod-source kubelet`).
- `/configz` is the kubelet's effective configuration (`{"kubeletconfig": {...}}`): its
  config file, flags and defaults merged, as it runs.

The kubelet is `--kubelet-url` (for example `https://$(NODE_IP):10250`); it is asked only
when that is given. kubegc authenticates as it does to the API server (the kubeconfig's or the
in-cluster account's bearer token or client certificate); the kubelet checks the token with
the API server (TokenReview) and asks it whether the caller may `get` `nodes/pods` or
`nodes/configz` (SubjectAccessReview; fine-grained kubelet authorization, GA in 1.36, where
the kubelet also accepts `nodes/proxy`). Its serving certificate is checked against
`--kubelet-ca`, else the CA kubegc trusts for the API server (the kubeconfig's, or the
in-cluster `ca.crt`): right where kubelets serve certificates signed by the cluster's CA
(`serverTLSBootstrap`), and a self-signed kubelet certificate needs `--kubelet-ca`.

A reply is read to at most `MAX_PODS_BYTES` / `MAX_CONFIGZ_BYTES`; every failure is one line
(`ApiUnavailable`: unreachable, refused, not JSON; `BadInput`: a bad URL or CA file).
"""

from __future__ import annotations

import dataclasses
import http.client
import ssl
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.inputs import Malformed, decode_json
from kubegc_cli.core.pods import PodInventory, inventory_from_podlist
from kubegc_cli.core.settings import Settings
from kubegc_cli.node.host.kubelet import KubeletConfig, load_kubelet_config, parse_kubelet_config
from kubegc_cli.node.pods.api import (
    ApiSource,
    ApiUnavailable,
    api_config,
    find_credentials,
    node_name,
)

DEFAULT_PORT = 10250
MAX_PODS_BYTES = 256 << 20
MAX_CONFIGZ_BYTES = 4 << 20
CONFIGZ_SOURCE = "kubelet /configz"
# how long one process reuses a /configz reply (an agent cycle asks for the config often)
CONFIGZ_TTL = 30.0


@dataclass(frozen=True, slots=True)
class KubeletSource:
    """The kubelet at `url` (`https://host:port`), its serving CA `ca` (None: the API's), and
    the credentials `api` names (kubeconfig or in-cluster; its `node` is this node)."""

    url: str
    ca: str | None
    api: ApiSource


def check_url(url: str) -> str:
    """`--kubelet-url` without a trailing slash. Raises `BadInput` unless it is an https:// URL
    with a host and no path beyond `/`."""
    try:
        parts: urllib.parse.SplitResult | None = urllib.parse.urlsplit(url)
        assert parts is not None
        parts.port  # noqa: B018  (raises ValueError for a port that is not a number)
    except ValueError:
        parts = None
    if (
        parts is None
        or parts.scheme != "https"
        or not parts.hostname
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or not url.isprintable()
    ):
        raise BadInput(f"--kubelet-url {url!r} must be https://HOST[:PORT] (the kubelet's port)")
    return url.rstrip("/")


def _connect(src: KubeletSource, timeout: float) -> tuple[http.client.HTTPSConnection, str]:
    """An HTTPS connection to the kubelet and the Authorization header value ("" for none)."""
    cfg = api_config(src.api)
    ca = src.ca or cfg.ssl_ca_cert
    try:
        ctx = ssl.create_default_context(cafile=ca) if ca else ssl.create_default_context()
        if cfg.cert_file and cfg.key_file:
            ctx.load_cert_chain(cfg.cert_file, cfg.key_file)
    except (OSError, ssl.SSLError) as exc:
        what = f"--kubelet-ca {src.ca}" if src.ca else f"the API's CA {ca}"
        raise BadInput(f"cannot use {what}: {exc.strerror or exc}") from None
    parts = urllib.parse.urlsplit(src.url)
    conn = http.client.HTTPSConnection(
        parts.hostname or "", parts.port or DEFAULT_PORT, timeout=timeout, context=ctx
    )
    auth = ""  # the header the official client would send (its token, refreshed if it must be)
    for setting in (cfg.auth_settings() or {}).values():
        if setting.get("in") == "header" and str(setting.get("key")).lower() == "authorization":
            auth = str(setting.get("value") or "")
    return conn, auth


def get_json(src: KubeletSource, path: str, limit: int, timeout: float) -> Any:
    """GET `path` from the kubelet; the decoded JSON reply. Raises `ApiUnavailable` (one line
    naming the kubelet and the path) for a refusal, a failure to connect or read within
    `timeout` seconds, a reply over `limit` bytes, or one that is not JSON."""
    where = f"kubelet {src.url}{path}"
    conn, auth = _connect(src, timeout)
    headers = {"Accept": "application/json"}
    if auth:
        headers["Authorization"] = auth
    try:
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        data = resp.read(limit + 1)
    except (OSError, http.client.HTTPException) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else ""
        raise ApiUnavailable(
            f"{where} unreachable: {type(exc).__name__}" + (f": {detail}" if detail else "")
        ) from None
    finally:
        conn.close()
    if resp.status != 200:
        text = data[:300].decode("utf-8", "replace").strip().splitlines()
        detail = text[0] if text else ""
        raise ApiUnavailable(
            f"{where}: {resp.status} {resp.reason}" + (f": {detail}" if detail else "")
        )
    if len(data) > limit:
        raise ApiUnavailable(f"{where}: the reply is larger than {limit >> 20} MiB")
    try:
        return decode_json(data, where)
    except Malformed as exc:
        raise ApiUnavailable(str(exc)) from None


def load_kubelet_inventory(src: KubeletSource, timeout: float) -> PodInventory:
    """The pods bound to this node, from the kubelet's `/pods`. Raises `ApiUnavailable` as
    `get_json` does, and when the reply is not a PodList."""
    doc = get_json(src, "/pods", MAX_PODS_BYTES, timeout)
    source = f"kubelet:{src.url} node {src.api.node}"
    try:
        return inventory_from_podlist(doc, source=source)
    except BadInput as exc:
        raise ApiUnavailable(str(exc)) from None


# kubelet → (when asked, its kubeletconfig or why it could not be read)
_configz: dict[KubeletSource, tuple[float, dict[str, Any] | str]] = {}


def read_configz(src: KubeletSource, timeout: float) -> dict[str, Any]:
    """The kubelet's effective KubeletConfiguration (`/configz`'s `kubeletconfig`), decoded;
    the answer (or the failure) is reused for `CONFIGZ_TTL` seconds, so that the several
    readers of one run or agent cycle ask once. Raises `ApiUnavailable` as `get_json` does,
    and when the reply has no such object."""
    now = time.monotonic()
    hit = _configz.get(src)
    if hit is None or now - hit[0] >= CONFIGZ_TTL:
        try:
            doc = get_json(src, "/configz", MAX_CONFIGZ_BYTES, timeout)
        except ApiUnavailable as exc:
            hit = (now, str(exc))
        else:
            config = doc.get("kubeletconfig") if isinstance(doc, dict) else None
            hit = (now, config if isinstance(config, dict) else
                   f"kubelet {src.url}/configz: no kubeletconfig object in the reply")  # fmt: skip
        _configz[src] = hit
    if isinstance(hit[1], str):
        raise ApiUnavailable(hit[1])
    return hit[1]


def load_configz(src: KubeletSource, timeout: float) -> KubeletConfig:
    """`read_configz` as a `KubeletConfig` named `kubelet /configz`. Raises `ApiUnavailable` as
    `read_configz` does, `BadInput` for a bad field."""
    return parse_kubelet_config(read_configz(src, timeout), source=CONFIGZ_SOURCE)


def kubelet_source(s: Settings) -> KubeletSource | None:
    """The kubelet `s` names (`--kubelet-url`, `--kubelet-ca`, the credentials found as for
    the API, the node), or None without `--kubelet-url`. Raises `BadInput` when there are no
    credentials to present to it."""
    if not s.kubelet_url:
        return None
    creds = find_credentials(s.kubeconfig, s.env)
    if creds is None:
        raise BadInput(
            f"--kubelet-url {s.kubelet_url}: no credentials to present (--kubeconfig, "
            "KUBECONFIG, ~/.kube/config or the in-cluster service account)"
        )
    return KubeletSource(
        s.kubelet_url, s.kubelet_ca, ApiSource(creds, s.context, node_name(s.node_name))
    )


def effective_kubelet_config(s: Settings) -> KubeletConfig:
    """The kubelet configuration a run uses: `--kubelet-config` when given; else the
    kubelet's `/configz` when `--kubelet-url` is given and it answers; else the config file
    under `--host-root` (`host.kubelet.load_kubelet_config`), whose `fallback` then says why
    `/configz` was not used (refused, unreachable, not a reply kubegc reads). Raises `BadInput`
    for what the user must fix: no credentials, an unusable `--kubelet-ca`, a bad field (as
    in a file)."""
    if s.kubelet_config is not None or not s.kubelet_url:
        return load_kubelet_config(s.kubelet_config, s.host_root)
    src = kubelet_source(s)
    assert src is not None
    try:
        return load_configz(src, s.timeout)
    except ApiUnavailable as exc:
        why = str(exc)
    found = load_kubelet_config(None, s.host_root)
    return dataclasses.replace(found, fallback=why)

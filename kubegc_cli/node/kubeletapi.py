"""The node's own kubelet over its HTTPS port (10250): `/pods` and `/configz`.

- `/pods` is the PodList of the pods bound to this node as the kubelet holds them: a pod
  source that costs the API server nothing (`--pod-source kubelet`).
- `/configz` is the kubelet's effective configuration (`{"kubeletconfig": {...}}`): its
  config file, drop-ins, flags and defaults merged, as it runs. It is reached directly
  (`--kubelet-url`) or through the API server's node proxy (`--kubelet-configz`,
  `node.pods.api.get_node_proxy`); either reply is read, bounded, checked and reused here
  (`read_configz`), and `kubelet_configz` says which a run uses and, refused, why.
  `node.host.kubelet.kubelet_config_for` takes it over the files when it answers.

The kubelet is `--kubelet-url` (for example `https://$(NODE_IP):10250`); it is asked only
when that is given. kubegc authenticates as it does to the API server (the kubeconfig's or the
in-cluster account's bearer token or client certificate); the kubelet checks the token with
the API server (TokenReview) and asks it whether the caller may `get` `nodes/pods` or
`nodes/configz` (SubjectAccessReview; fine-grained kubelet authorization, GA in 1.36, where
the kubelet also accepts `nodes/proxy`).

Its serving certificate is always verified, never skipped: against the `--kubelet-ca` files,
else the CA kubegc trusts for the API server (the kubeconfig's, or the in-cluster `ca.crt`),
and for the name `--kubelet-server-name`, else the URL's host. A kubelet that serves a
certificate of the cluster's CA (`serverTLSBootstrap`) is verified by the API's CA; one that
made its own (the kubelet's default without `tlsCertFile`: `<cert-dir>/kubelet.crt`, the
certificate for the node's hostname followed by the CA that signed it,
`certutil.GenerateSelfSignedCertKey`) by that file as `--kubelet-ca` and the hostname as
`--kubelet-server-name`, since its certificate names no IP address. `--kubelet-ca` given more
than once trusts every one of the files that exists (a DaemonSet names both, and each node
has one); none existing is an error.

A reply is read to at most `MAX_PODS_BYTES` / `MAX_CONFIGZ_BYTES`; every failure is one line
(`ApiUnavailable`: unreachable, refused, not JSON; `BadInput`: a bad URL or CA file).
"""

from __future__ import annotations

import http.client
import ipaddress
import os
import re
import ssl
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.inputs import Malformed, decode_json
from kubegc_cli.core.pods import PodInventory, inventory_from_podlist
from kubegc_cli.core.settings import Settings
from kubegc_cli.node.host.regular import read_regular
from kubegc_cli.node.pods.api import (
    ApiSource,
    ApiUnavailable,
    api_config,
    find_credentials,
    get_node_proxy,
    node_name,
)

DEFAULT_PORT = 10250
#: The most of `/pods` read: a decoded reply takes about 6 times its size in memory (up to
#: about 28 times for JSON made to be expensive: nested empty lists), and the agent's
#: DaemonSet allows 512 MiB. 110 pods (the kubelet's default maxPods) at 140 KiB each fit; a
#: real pod's JSON is a few KiB.
MAX_PODS_BYTES = 16 << 20
#: How many `timeout`s a whole kubelet reply may take.
READ_TIMES = 3
MAX_CONFIGZ_BYTES = 4 << 20
CONFIGZ_SOURCE = "kubelet /configz"
# how long one process reuses a /configz reply (an agent cycle asks for the config often)
CONFIGZ_TTL = 30.0


@dataclass(frozen=True, slots=True)
class KubeletSource:
    """The kubelet at `url` (`https://host:port`), the CA files `ca` trusted for its serving
    certificate (empty: the API's CA), the name `server_name` that certificate must be valid
    for (None: the URL's host), and the credentials `api` names (kubeconfig or in-cluster;
    its `node` is this node)."""

    url: str
    ca: tuple[str, ...]
    api: ApiSource
    server_name: str | None = None


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
        or not host_name_ok(parts.hostname)
        or parts.username is not None
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or not url.isprintable()
    ):
        shown = re.sub(r"//[^/?#]*@", "//…@", url)  # never a user's password, even if malformed
        raise BadInput(
            f"--kubelet-url {shown!r} must be https://HOST[:PORT] (the kubelet's port; no "
            "user or password in it)"
        )
    return url.rstrip("/")


def host_name_ok(name: str) -> bool:
    """True for an IP address or a DNS name kubegc can connect to and check a certificate
    for: labels of letters, digits and `-`, each 1 to 63 long, not starting or ending with
    `-`, 253 characters at most."""
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    labels = name.removesuffix(".").split(".")
    return len(name) <= 253 and all(_LABEL.fullmatch(label) for label in labels)


_LABEL = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?")


def check_server_name(name: str) -> str:
    """`--kubelet-server-name` as given. Raises `BadInput` unless it is a DNS name or an IP
    address (letters, digits, `.`, `-`, `:`; at most 253 characters)."""
    if not host_name_ok(name):
        raise BadInput(
            f"--kubelet-server-name {name!r} must be a DNS name or an IP address "
            "(the name the kubelet's serving certificate carries)"
        )
    return name


class KubeletConnection(http.client.HTTPSConnection):
    """An HTTPS connection to `host`:`port` that verifies the server's certificate for
    `server_name` (SNI and hostname check) rather than for `host`: a kubelet reached at the
    node's IP address whose certificate names only the node's hostname."""

    def __init__(
        self, host: str, port: int, *, timeout: float, context: ssl.SSLContext, server_name: str
    ) -> None:
        super().__init__(host, port, timeout=timeout, context=context)
        self.tls = context
        self.server_name = server_name

    def connect(self) -> None:
        """Connect over TCP, then TLS for `server_name`. Raises `OSError` (an
        `ssl.SSLCertVerificationError` for a certificate not valid for it)."""
        http.client.HTTPConnection.connect(self)
        self.sock = self.tls.wrap_socket(self.sock, server_hostname=self.server_name)


def trust(ca_files: tuple[str, ...], api_ca: str | None) -> ssl.SSLContext:
    """A client TLS context trusting each of `ca_files` that exists (`--kubelet-ca`), or, none
    given, the API's CA file `api_ca` (None: the system's CAs). Raises `BadInput` naming the
    file when none of `ca_files` exists, or one that exists cannot be read as PEM
    certificates."""
    if not ca_files:
        try:
            return ssl.create_default_context(cafile=api_ca) if api_ca else (
                ssl.create_default_context())  # fmt: skip
        except (OSError, ssl.SSLError) as exc:
            raise BadInput(f"cannot use the API's CA {api_ca}: {exc.strerror or exc}") from None
    present = [f for f in ca_files if os.path.exists(f)] if len(ca_files) > 1 else list(ca_files)
    if not present:
        raise BadInput(f"cannot use --kubelet-ca: none of {', '.join(ca_files)} exists")
    ctx: ssl.SSLContext | None = None
    for f in present:
        pem = _ca_text(f)
        try:  # a context without the system's CAs: only the files given are trusted
            if ctx is None:
                ctx = ssl.create_default_context(cadata=pem)
            else:
                ctx.load_verify_locations(cadata=pem)
        except (ValueError, ssl.SSLError) as exc:
            raise BadInput(f"cannot use --kubelet-ca {f}: {exc}") from None
    assert ctx is not None
    return ctx


#: The most of a CA file read: a bundle of a few hundred certificates.
MAX_CA_BYTES = 1 << 20


def _ca_text(path: str) -> str:
    """The PEM text of the CA file at `path`, opened once without blocking and checked as
    that open file (a FIFO or a device swapped in between a look and the open would be read
    forever). Raises `BadInput` naming the file: missing, unreadable, not a regular file,
    over `MAX_CA_BYTES`, not text."""
    try:  # (`NotRegularFile` says "not a regular file")
        data = read_regular(path, MAX_CA_BYTES)
    except OSError as exc:
        raise BadInput(f"cannot use --kubelet-ca {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_CA_BYTES:
        raise BadInput(f"cannot use --kubelet-ca {path}: larger than 1 MiB")
    try:
        return data.decode("ascii")
    except UnicodeDecodeError:
        raise BadInput(f"cannot use --kubelet-ca {path}: not PEM text") from None


def _connect(src: KubeletSource, timeout: float) -> tuple[http.client.HTTPSConnection, str]:
    """An HTTPS connection to the kubelet and the Authorization header value ("" for none)."""
    cfg = api_config(src.api)
    ctx = trust(src.ca, cfg.ssl_ca_cert)
    if cfg.cert_file and cfg.key_file:
        try:
            ctx.load_cert_chain(cfg.cert_file, cfg.key_file)
        except (OSError, ssl.SSLError) as exc:
            raise BadInput(f"cannot use the client certificate {cfg.cert_file}: "
                           f"{exc.strerror or exc}") from None  # fmt: skip
    parts = urllib.parse.urlsplit(src.url)
    host = parts.hostname or ""
    conn = KubeletConnection(host, parts.port or DEFAULT_PORT, timeout=timeout, context=ctx,
                             server_name=src.server_name or host)  # fmt: skip
    auth = ""  # the header the official client would send (its token, refreshed if it must be)
    for setting in (cfg.auth_settings() or {}).values():
        if setting.get("in") == "header" and str(setting.get("key")).lower() == "authorization":
            auth = str(setting.get("value") or "")
    return conn, auth


def get_bytes(src: KubeletSource, path: str, limit: int, timeout: float) -> tuple[bytes, str]:
    """GET `path` from the kubelet: the reply's first `limit + 1` bytes and the text naming
    what was asked. Raises `ApiUnavailable` (one line naming the kubelet and the path) for a
    refusal or a failure to connect or read: each step within `timeout` seconds, and the
    whole reply within `READ_TIMES` × `timeout` (a reply dripping a byte at a time would
    otherwise hold the run for as long as the kubelet likes)."""
    where = f"kubelet {src.url}{path}"
    conn, auth = _connect(src, timeout)
    headers = {"Accept": "application/json"}
    if auth:
        headers["Authorization"] = auth
    deadline = time.monotonic() + READ_TIMES * timeout
    try:
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        chunks: list[bytes] = []
        got = 0
        while got <= limit:
            chunk = resp.read1(min(1 << 20, limit + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
            if time.monotonic() > deadline:
                raise TimeoutError(f"the reply took longer than {READ_TIMES * timeout:g}s")
        data = b"".join(chunks)
    except (OSError, http.client.HTTPException, UnicodeError) as exc:
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
    return data, where


def decoded(data: bytes, where: str, limit: int) -> Any:
    """The JSON reply `data` to the request `where` names, decoded. Raises `ApiUnavailable` for
    a reply over `limit` bytes or one that is not JSON."""
    if len(data) > limit:
        raise ApiUnavailable(f"{where}: the reply is larger than {limit >> 20} MiB")
    try:
        return decode_json(data, where)
    except Malformed as exc:
        raise ApiUnavailable(str(exc)) from None


def get_json(src: KubeletSource, path: str, limit: int, timeout: float) -> Any:
    """GET `path` from the kubelet; the decoded JSON reply. Raises `ApiUnavailable` as
    `get_bytes` and `decoded` do."""
    data, where = get_bytes(src, path, limit, timeout)
    return decoded(data, where, limit)


def load_kubelet_inventory(src: KubeletSource, timeout: float) -> PodInventory:
    """The pods bound to this node, from the kubelet's `/pods`. Raises `ApiUnavailable` as
    `get_json` does, and when the reply is not a PodList."""
    doc = get_json(src, "/pods", MAX_PODS_BYTES, timeout)
    source = f"kubelet:{src.url} node {src.api.node}"
    try:
        return inventory_from_podlist(doc, source=source)
    except BadInput as exc:
        raise ApiUnavailable(str(exc)) from None


#: A way to the kubelet's `/configz`: the kubelet itself (`--kubelet-url`) or the API server's
#: node proxy for the node (`--kubelet-configz`).
ConfigzRoute = KubeletSource | ApiSource

# route → (when asked, its kubeletconfig or why it could not be read)
_configz: dict[ConfigzRoute, tuple[float, dict[str, Any] | str]] = {}


def configz_source(route: ConfigzRoute) -> str:
    """The provenance name of what `route`'s `/configz` sets: `kubelet /configz`, and through
    the node proxy `kubelet /configz of node N (nodes/proxy)`."""
    if isinstance(route, KubeletSource):
        return CONFIGZ_SOURCE
    return f"{CONFIGZ_SOURCE} of node {route.node} (nodes/proxy)"


def configz_label(route: ConfigzRoute) -> str:
    """`configz_source` with where it was read, for `-v`."""
    if isinstance(route, KubeletSource):
        return f"{CONFIGZ_SOURCE} ({route.url})"
    return configz_source(route)


def read_configz(route: ConfigzRoute, timeout: float) -> dict[str, Any]:
    """The kubelet's effective KubeletConfiguration (`/configz`'s `kubeletconfig`), decoded,
    asked directly or through the node proxy (`route`), read to at most `MAX_CONFIGZ_BYTES`;
    the answer (or the failure) is reused for `CONFIGZ_TTL` seconds, so that the several
    readers of one run or agent cycle ask once. Raises `ApiUnavailable` (one line) for a
    refusal, an unreachable kubelet, a reply over the bound, not JSON, or without such an
    object."""
    now = time.monotonic()
    hit = _configz.get(route)
    if hit is None or now - hit[0] >= CONFIGZ_TTL:
        try:
            if isinstance(route, KubeletSource):
                data, where = get_bytes(route, "/configz", MAX_CONFIGZ_BYTES, timeout)
            else:
                data, where = get_node_proxy(route, "configz", MAX_CONFIGZ_BYTES, timeout)
            doc = decoded(data, where, MAX_CONFIGZ_BYTES)
        except ApiUnavailable as exc:
            hit = (now, str(exc))
        else:
            config = doc.get("kubeletconfig") if isinstance(doc, dict) else None
            hit = (now, config if isinstance(config, dict) else
                   f"{where}: no kubeletconfig object in the reply")  # fmt: skip
        _configz[route] = hit
    if isinstance(hit[1], str):
        raise ApiUnavailable(hit[1])
    return hit[1]


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
        s.kubelet_url,
        s.kubelet_ca,
        ApiSource(creds, s.context, node_name(s.node_name)),
        s.kubelet_server_name,
    )


def configz_route(s: Settings) -> ConfigzRoute | None:
    """Where a run asks the kubelet's `/configz`: not when `--kubelet-config` names the file;
    the kubelet itself with `--kubelet-url`; through the node proxy with `--kubelet-configz`
    (`nodes/proxy` grants the whole kubelet API — exec, logs — so it is asked only when told
    to) when there are credentials for the API; else nowhere (None). Raises `BadInput` as
    `kubelet_source` does."""
    if s.kubelet_config is not None:
        return None
    if s.kubelet_url:
        return kubelet_source(s)
    if s.kubelet_configz:
        creds = find_credentials(s.kubeconfig, s.env)
        if creds is not None:
            return ApiSource(creds, s.context, node_name(s.node_name))
    return None


@dataclass(frozen=True, slots=True)
class Configz:
    """What a run took from the kubelet's `/configz`: its `kubeletconfig` (`doc`, None when
    it could not be read), the provenance name of its values (`source`), the text `-v` shows
    (`label`), and why it was not read (`fallback`, "" when it was)."""

    doc: dict[str, Any] | None
    source: str
    label: str
    fallback: str = ""


def kubelet_configz(s: Settings) -> Configz | None:
    """The kubelet's `/configz` as a run uses it (`configz_route`, `read_configz`), or None
    when it is not asked. A refused or unreachable `/configz`, or a reply kubegc does not read,
    is a `Configz` without `doc` saying why (the files are read instead). Raises `BadInput`
    for what the user must fix: no credentials for `--kubelet-url`, an unusable
    `--kubelet-ca`."""
    route = configz_route(s)
    if route is None:
        return None
    try:
        doc: dict[str, Any] | None = read_configz(route, s.timeout)
        why = ""
    except ApiUnavailable as exc:
        doc, why = None, str(exc)
    return Configz(doc, configz_source(route), configz_label(route), why)

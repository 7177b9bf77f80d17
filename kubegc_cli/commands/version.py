"""`kubegc version`: kubegc's own version and the CRI runtime's, as `crictl version` asks for
it (the runtime's `Version` call: its name, its version, the CRI API version it serves).

Observe only. The runtime is found as every command finds it (`flow.open_client`); a runtime
that cannot be reached is part of the report (`VersionReport.error`), so the client's part is
still shown before the command ends with the runtime-unreachable exit code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubegc_cli.commands.edges import Ui
from kubegc_cli.commands.flow import open_client
from kubegc_cli.core.errors import RuntimeUnavailable
from kubegc_cli.core.model import API_VERSION, RuntimeInfo
from kubegc_cli.core.settings import Settings


@dataclass(frozen=True, slots=True)
class VersionReport:
    """`client`: kubegc's version; `endpoint`: the runtime's endpoint as shown elsewhere
    (`unix:///run/containerd/containerd.sock`, "" when none was found); `runtime`: what its
    `Version` call answered (None when it could not be asked); `error`: why not, one line
    ("" when it answered)."""

    client: str
    endpoint: str = ""
    runtime: RuntimeInfo | None = None
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The `-o json|yaml` document: `client.version`; `runtime` with the endpoint and
        crictl's four fields under CRI's names (`version`, `runtime_name`, `runtime_version`,
        `runtime_api_version`), or null; `error` ("" when the runtime answered)."""
        rt = self.runtime
        runtime = None
        if rt is not None:
            runtime = {
                "endpoint": self.endpoint,
                "version": rt.cri_version,
                "runtime_name": rt.name,
                "runtime_version": rt.version,
                "runtime_api_version": rt.api_version,
            }
        return {
            "kind": "Version",
            "apiVersion": API_VERSION,
            "client": {"version": self.client},
            "runtime": runtime,
            "error": self.error,
        }


def version_report(s: Settings, ui: Ui, client_version: str) -> VersionReport:
    """Ask the runtime for its version (one `Version` call, `--timeout` as every call).

    Never raises for a runtime that cannot be reached or refuses the call: the report says
    why (`error`), and the caller decides the exit code (`RuntimeUnavailable`'s)."""
    try:
        client = open_client(s, ui)
    except RuntimeUnavailable as exc:
        return VersionReport(client_version, error=str(exc))
    endpoint = getattr(getattr(client, "endpoint", None), "display", "")
    try:
        info = client.version()
    except RuntimeUnavailable as exc:
        return VersionReport(client_version, endpoint, error=str(exc))
    finally:
        client.close()
    return VersionReport(client_version, endpoint, info)

"""`Settings`: the global options, parsed — what every command hands the core.

Kept apart from `commands.flow` so that a command that needs only these (`evict check`,
`memory available`) does not import the planners with it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_STATE_DIR = "/var/lib/kubegc"


@dataclass(frozen=True, slots=True)
class Settings:
    """Global options, already parsed. Durations in seconds, sizes in bytes, `now` in ns."""

    runtime_endpoint: str | None = None
    # Where `runtime_endpoint` came from, as errors name it: the flag or the config file's key.
    runtime_endpoint_source: str = "--runtime-endpoint"
    timeout: float = 10.0
    max_recv_size: int = 256 * 1024 * 1024
    host_root: Path = Path("/")
    output: str = "table"  # table, wide, name, json, yaml
    no_headers: bool = False  # --no-headers: tables without titles and header lines
    verbose: int = 0
    quiet: bool = False
    limit: int = 100  # --limit: rows a plan table lists per section (0 = all)
    pod_source: str | None = None
    pods_file: Path | None = None
    state_dir: Path = Path(DEFAULT_STATE_DIR)
    snapshot: Path | None = None
    now: int | None = None
    kubelet_config: Path | None = None
    # --kubelet-config-dir: the kubelet's drop-in directory (--config-dir), read as given
    kubelet_config_dir: Path | None = None
    # --kubelet-version: the kubelet version whose defaults apply ("v1.30.2"), as given
    kubelet_version: str | None = None
    # --kubelet-configz: evict check reads the kubelet's /configz through nodes/proxy first
    kubelet_configz: bool = False
    # --kubelet-url, --kubelet-ca, --kubelet-server-name: the node's kubelet (/pods,
    # /configz), the CA files trusted for its serving certificate (each that exists), and
    # the name that certificate must carry (None: the URL's host)
    kubelet_url: str | None = None
    kubelet_ca: tuple[str, ...] = ()
    kubelet_server_name: str | None = None
    # --runtime-config: containerd's config file, a host path (read under host_root)
    runtime_config: Path | None = None
    kubeconfig: str | None = None
    context: str | None = None
    node_name: str | None = None
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    lock_timeout: float = 0.0  # seconds a changing run waits for another run's node lock
    metrics_file: Path | None = None  # --metrics-file: node_exporter textfile written after
    events: bool = False  # --events: Kubernetes Events on the Node (kubegc_cli.report.events)

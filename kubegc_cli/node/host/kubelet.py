"""The node's kubelet configuration file (KubeletConfiguration), the fields kubegc uses.

Default location `/var/lib/kubelet/config.yaml` under `--host-root`; `--kubelet-config`
names another. A missing default file is fine (kubelet defaults apply); a named file that
cannot be read or parsed is `BadInput`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.inputs import parse_yaml, present, read_text, shown
from kubegc_cli.core.units import parse_duration
from kubegc_cli.node.host.bounded import Stalled, Watch, bounded

DEFAULT_CONFIG = "/var/lib/kubelet/config.yaml"
DEFAULT_POD_LOGS_DIR = "/var/log/pods"
CONTAINER_LOGS_DIR = "/var/log/containers"
# the KubeletConfiguration versions the kubelet decodes
API_VERSIONS = ("kubelet.config.k8s.io/v1beta1", "kubelet.config.k8s.io/v1")


@dataclass(frozen=True, slots=True)
class KubeletConfig:
    """The KubeletConfiguration fields kubegc reads. Paths are host paths (not under host root).

    `pod_logs_dir` is `podLogsDir` (kubelet default `/var/log/pods`). `source` names the file,
    `kubelet /configz` (`node.kubeletapi`), or `defaults` when none was read. `image_gc` holds
    the image GC fields the file sets, by kubegc's option name (`image_gc_high_threshold`: int,
    `minimum_image_ttl_duration`: seconds).
    """

    pod_logs_dir: str = DEFAULT_POD_LOGS_DIR
    source: str = "defaults"
    image_gc: Mapping[str, Any] = field(default_factory=dict)
    # why the kubelet's /configz was not used, when it was asked and this was read instead
    fallback: str = ""


def validate_pod_logs_dir(value: object, *, source: str) -> str:
    """A pod log root as the kubelet requires it (absolute, clean, ASCII) and never `/`; kubegc
    also refuses control characters (a newline would split its messages).

    Returns the clean path; raises `BadInput` naming `source` and the value.
    """
    if not isinstance(value, str) or not value.startswith("/"):
        raise BadInput(f"{source} {value!r} must be an absolute path")
    clean = os.path.normpath(value)
    if clean == "/":
        raise BadInput(f"{source} '/' would let kubegc delete anywhere; refusing")
    printable = value.isascii() and value.isprintable()  # no newline, tab, DEL, ...
    if clean != value.rstrip("/") or clean.startswith("//") or not printable:
        raise BadInput(f"{source} {value!r} must be a clean ASCII path (as the kubelet requires)")
    return clean


def parse_kubelet_config(doc: Any, *, source: str) -> KubeletConfig:
    """Decoded KubeletConfiguration → `KubeletConfig`. Raises `BadInput` naming `source`: not
    a mapping, another `kind` or `apiVersion` (either may be left out), a bad field."""
    if doc is None:
        return KubeletConfig(source=source)
    if not isinstance(doc, dict):
        raise BadInput(f"{source}: not a KubeletConfiguration (expected a mapping)")
    kind = doc.get("kind")
    if kind not in (None, "KubeletConfiguration"):
        raise BadInput(f"{source}: kind is {shown(kind)}, expected KubeletConfiguration")
    version = doc.get("apiVersion")
    if version not in (None, *API_VERSIONS):
        raise BadInput(
            f"{source}: apiVersion is {shown(version)}, expected {' or '.join(API_VERSIONS)} "
            "(the kubelet would not load it)"
        )
    logs = doc.get("podLogsDir")
    if logs is None or logs == "":  # the kubelet's default applies to an unset or empty field
        logs = DEFAULT_POD_LOGS_DIR
    clean = validate_pod_logs_dir(logs, source=f"{source}: podLogsDir")
    image_gc: dict[str, Any] = {}
    for key, name in (
        ("imageGCHighThresholdPercent", "image_gc_high_threshold"),
        ("imageGCLowThresholdPercent", "image_gc_low_threshold"),
    ):
        if key in doc:
            if not isinstance(doc[key], int) or isinstance(doc[key], bool):
                raise BadInput(f"{source}: {key} {shown(doc[key])} must be an integer")
            image_gc[name] = doc[key]
    for key, name in (
        ("imageMinimumGCAge", "minimum_image_ttl_duration"),
        ("imageMaximumGCAge", "image_maximum_gc_age"),
    ):
        if key in doc:
            if not isinstance(doc[key], str):  # a metav1.Duration is a string: "2m", "1h30m"
                raise BadInput(f'{source}: {key} {shown(doc[key])} must be a duration ("2m")')
            image_gc[name] = parse_duration(doc[key], flag=f"{source}: {key}")
    return KubeletConfig(pod_logs_dir=clean, source=source, image_gc=image_gc)


def load_kubelet_config(explicit: Path | None, host_root: Path) -> KubeletConfig:
    """Read `explicit` (as given) or the default file under `host_root` if it exists.

    The default file is looked for and read under `host.bounded.bounded`: a host directory
    that gives no answer within `--timeout` (a hung mount) raises `BadInput` naming it, as a
    file that cannot be read does, instead of hanging the run."""
    if explicit is not None:
        doc = parse_yaml(read_text(explicit, "kubelet config"), explicit, "kubelet config")
        return parse_kubelet_config(doc, source=str(explicit))
    path = host_root / DEFAULT_CONFIG.lstrip("/")

    def read(watch: Watch) -> str | None:
        watch.at(str(path))
        return read_text(path, "kubelet config") if present(path) else None

    try:
        text = bounded(read)
    except Stalled as exc:
        raise BadInput(f"cannot read kubelet config {path}: {exc.strerror}") from None
    if text is None:
        return KubeletConfig()
    return parse_kubelet_config(parse_yaml(text, path, "kubelet config"), source=str(path))

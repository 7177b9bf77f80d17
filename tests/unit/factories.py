"""Builders for plain kubegc data used by the pure tests."""

from __future__ import annotations

import os
from typing import Any

from kubegc_cli.core.model import (
    LABEL_CONTAINER_NAME,
    LABEL_POD_NAME,
    LABEL_POD_NAMESPACE,
    LABEL_POD_UID,
    Container,
    ContainerState,
)

NOW = 1_800_000_000 * 1_000_000_000  # a fixed "now", ns since the epoch
S = 1_000_000_000


def ctr(
    cid: str,
    uid: str = "uid-p",
    name: str = "app",
    attempt: int = 0,
    state: str = "EXITED",
    age_s: float = 600,
    ns: str = "default",
    pod: str | None = None,
    finished_age_s: float | None = None,
    log_bytes: int | None = None,
) -> Container:
    """A kubelet-labelled container created `age_s` seconds before NOW."""
    labels = {LABEL_CONTAINER_NAME: name, LABEL_POD_NAMESPACE: ns}
    if uid:
        labels[LABEL_POD_UID] = uid
        labels[LABEL_POD_NAME] = pod or f"pod-{uid}"
    return Container(
        id=cid,
        pod_sandbox_id=f"sb-{uid}",
        name=name,
        attempt=attempt,
        state=ContainerState(state),
        created_at=NOW - int(age_s * S),
        finished_at=0 if finished_age_s is None else NOW - int(finished_age_s * S),
        labels=labels,
        log_bytes=log_bytes,
    )


def owner(cid: str, log_path: str, **kw: object) -> Container:
    """A container whose labels and restart count make `log_path`
    (`.../<ns>_<pod>_<uid>/<container>/<restartCount>.log`) the kubelet's path for its log."""
    from dataclasses import replace

    from kubegc_cli.core.model import ANNOTATION_RESTART_COUNT

    pod_dir, name, file = log_path.split("/")[-3:]
    ns, pod, uid = pod_dir.split("_", 2)
    c = ctr(cid, uid=uid, name=name, ns=ns, pod=pod, **kw)  # type: ignore[arg-type]
    return replace(c, annotations={ANNOTATION_RESTART_COUNT: file.split(".")[0]})


def disk(*paths: Any) -> int:
    """What the files at `paths` take on disk (allocated blocks, `st_blocks` × 512, as kubegc
    counts a file: `core.sizes.on_disk`), links not followed."""
    return sum(os.lstat(p).st_blocks * 512 for p in paths)

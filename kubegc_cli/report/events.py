"""`--events`: Kubernetes Events on this node's Node object for what a run did or found.

Events are posted as the kubelet posts its own node events: core/v1 `Event`s in namespace
`default` (a Node has no namespace), `involvedObject` the Node (`kind: Node`, `name` and `uid`
the node name, as the kubelet's node reference), `source.component` `kubegc` and
`source.host` the node, `count` 1, first and last timestamp the run's end. They show in
`kubectl describe node` and `kubectl get events --field-selector involvedObject.kind=Node`.

Reasons, in the kubelet's style (the kubelet's own where the meaning is the same):

| reason | type | when |
|---|---|---|
| `ContainerGCSucceeded` | Normal | `gc containers/sandboxes/logs/all` removed, none failed |
| `ContainerGCFailed` | Warning | one of their removals failed |
| `ImageGCFreed` | Normal | `gc images` removed images, no failure, target reached |
| `ImageGCFailed` | Warning | an image removal failed |
| `FreeDiskSpaceFailed` | Warning | `gc images` short of its target (the kubelet's message) |
| `EvictedPodsPruned` | Normal | `evict prune` deleted pods |
| `EvictedPodsPruneFailed` | Warning | a deletion was refused |
| `ResidueFound` | Warning | `residue scan/clean` found residue (what a clean left) |
| `EvictionThresholdMet` | Warning | `evict check` found thresholds met |
| `PolicyRejected` | Warning | `kubegc agent`'s policy file changed to a content it cannot use |

Dry runs of removing commands post nothing (nothing was done); findings (`ResidueFound`,
`EvictionThresholdMet`) are posted by any run that makes them.

Rate limit: at most one Event per reason and node per `INTERVAL_SECONDS` (10 minutes),
remembered in `<state-dir>/events.json` (`{"last_posted": {"<node>/<reason>": unix seconds}}`,
updated under flock, only after the API accepted the Event) — a DaemonSet checking every
minute reports a lasting pressure every 10 minutes, not every minute.

Nothing here fails a run: no credentials, a refusal (403: the account needs `create events`),
an unreachable API or an unusable state directory is one warning line each.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.inputs import Malformed, decode_json
from kubegc_cli.core.units import format_bytes
from kubegc_cli.node.pods.api import (
    ApiSource,
    find_credentials,
    node_name,
    open_api,
    status_message,
)
from kubegc_cli.node.state import ensure_state_dir, open_in
from kubegc_cli.render.plan import bytes_said

NAMESPACE = "default"
COMPONENT = "kubegc"
INTERVAL_SECONDS = 600
STATE_FILE = "events.json"
MAX_MESSAGE = 1024  # events.k8s.io's limit on a note; kept for core/v1 too

NORMAL, WARNING = "Normal", "Warning"
CONTAINER_GC_KINDS = frozenset({"container", "sandbox", "pod-log-dir", "log-symlink"})
NOUNS = {
    "container": "container(s)",
    "sandbox": "sandbox(es)",
    "pod-log-dir": "pod log dir(s)",
    "log-symlink": "log symlink(s)",
    "finding": "residue finding(s)",
    "image": "image(s)",
}

Warn = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class NodeEvent:
    """One Event to post: `reason` (CamelCase, kubelet style), `type` (`Normal`/`Warning`),
    `message` (one line, at most `MAX_MESSAGE` characters)."""

    reason: str
    type: str
    message: str


def _event(reason: str, kind: str, message: str) -> NodeEvent:
    text = " ".join(message.split())
    if len(text) > MAX_MESSAGE:
        text = text[: MAX_MESSAGE - 1] + "…"
    return NodeEvent(reason, kind, text)


def _first_error(actions: list[Any]) -> str:
    return next((a.error for a in actions if a.error), "")


def _removed_summary(actions: list[Any]) -> str:
    counts = Counter(a.kind for a in actions if a.result.value == "removed")
    parts = [f"{n} {NOUNS.get(k, k)}" for k, n in counts.items()]
    return ", ".join(parts) or "nothing"


def _gc_events(plan: Any) -> list[NodeEvent]:
    acts = list(plan.actions)
    failed = [a for a in acts if a.result.value == "failed"]
    removed = [a for a in acts if a.result.value == "removed"]
    if failed:
        return [
            _event(
                "ContainerGCFailed",
                WARNING,
                f"{len(failed)} of {len(acts)} removal(s) failed: {_first_error(failed)}; "
                f"removed {_removed_summary(acts)}",
            )
        ]
    if removed:
        return [
            _event(
                "ContainerGCSucceeded",
                NORMAL,
                f"removed {_removed_summary(acts)}; {bytes_said(plan.summary())}",
            )
        ]
    return []


def _reclaim_events(plan: Any) -> list[NodeEvent]:
    """`reclaim`: `ReclaimFailed` (warning) when a removal failed, else `Reclaimed` with what
    was removed, the bytes expected and the bytes the filesystems regained (measured)."""
    acts = list(plan.actions)
    failed = [a for a in acts if a.result.value == "failed"]
    if failed:
        return [_event(
            "ReclaimFailed", WARNING,
            f"{len(failed)} of {len(acts)} removal(s) failed: {_first_error(failed)}; "
            f"removed {_removed_summary(acts)}",
        )]  # fmt: skip
    if any(a.result.value == "removed" for a in acts):
        return [_event(
            "Reclaimed", NORMAL,
            f"removed {_removed_summary(acts)}; {bytes_said(plan.summary())}",
        )]  # fmt: skip
    return []


def _image_events(plan: Any) -> list[NodeEvent]:
    acts = list(plan.actions)
    failed = [a for a in acts if a.result.value == "failed"]
    removed = [a for a in acts if a.result.value == "removed"]
    out: list[NodeEvent] = []
    fs = plan.filesystem or {}
    if failed:
        out.append(_event(
            "ImageGCFailed", WARNING,
            f"{len(failed)} of {len(acts)} image removal(s) failed: {_first_error(failed)}",
        ))  # fmt: skip
    if plan.shortfall:
        wanted = int(fs.get("bytes_to_free") or 0)
        out.append(_event(
            "FreeDiskSpaceFailed", WARNING,
            "Failed to garbage collect required amount of images. Attempted to free "
            f"{wanted} bytes, but only found {max(0, wanted - plan.shortfall)} bytes eligible "
            "to free.",
        ))  # fmt: skip
    if removed and not out:
        out.append(_event(
            "ImageGCFreed", NORMAL,
            f"removed {len(removed)} image(s); {bytes_said(plan.summary())}",
        ))  # fmt: skip
    return out


def _prune_events(plan: Any) -> list[NodeEvent]:
    acts = list(plan.actions)
    failed = [a for a in acts if a.result.value == "failed"]
    removed = [a for a in acts if a.result.value == "removed"]
    where = "on all nodes" if (plan.policy or {}).get("all_nodes") else "on this node"
    out: list[NodeEvent] = []
    if removed:
        out.append(_event("EvictedPodsPruned", NORMAL,
                          f"deleted {len(removed)} Evicted pod(s) {where}"))  # fmt: skip
    if failed:
        out.append(_event(
            "EvictedPodsPruneFailed", WARNING,
            f"{len(failed)} of {len(acts)} Evicted pod deletion(s) refused: "
            f"{_first_error(failed)}",
        ))  # fmt: skip
    return out


def _residue_events(plan: Any) -> list[NodeEvent]:
    left = [f for f in [*plan.actions, *plan.kept] if f.result.value != "removed"]
    if not left:
        return []
    by_type = Counter(f.type for f in left)
    size = sum(f.bytes or 0 for f in left)
    safe = sum(1 for f in left if f.safe)
    kinds = ", ".join(f"{n} {t}" for t, n in by_type.most_common())
    return [
        _event(
            "ResidueFound",
            WARNING,
            f"{len(left)} residue finding(s), {format_bytes(size)} on disk: {kinds}; "
            f"{safe} safe to clean (kubegc residue clean)",
        )
    ]


def _observed(signal: str, value: int | None) -> str:
    if value is None:
        return "unknown"
    if signal.endswith(".available") and not signal.startswith("pid."):
        return format_bytes(value)
    return str(value)


def _eviction_events(report: Any) -> list[NodeEvent]:
    met = report.met()
    if not met:
        return []
    parts = []
    for r in met:
        t = r.threshold
        obs = r.observation.available if r.observation is not None else None
        kind = "hard" if t.hard else "soft"
        parts.append(
            f"{t.signal}<{t.text} ({kind}, {r.condition}): observed {_observed(t.signal, obs)}"
        )
    return [_event("EvictionThresholdMet", WARNING, "thresholds met: " + "; ".join(parts))]


def events_for(command: str, result: Any, exit_code: int) -> list[NodeEvent]:
    """The Events a run of `command` that produced `result` (a `Plan`, an `EvictionReport`
    or None) and ended with `exit_code` warrants. Pure: no I/O."""
    if result is None:
        return []
    if hasattr(result, "met") and hasattr(result, "results"):
        return _eviction_events(result)
    if not hasattr(result, "actions"):
        return []
    if hasattr(result, "types") and hasattr(result, "totals"):
        return _residue_events(result)
    if result.dry_run:
        return []
    kinds = {a.kind for a in result.actions}
    if getattr(result, "kind", "") == "ReclaimPlan":
        return _reclaim_events(result)
    if kinds & {"image"} or getattr(result, "kind", "") == "ImageGCPlan":
        return _image_events(result)  # a shortfall with no image eligible is an event too
    if kinds & {"pod"}:
        return _prune_events(result)
    if kinds & CONTAINER_GC_KINDS:
        return _gc_events(result)
    return []


def policy_rejected(reason: str) -> NodeEvent:
    """The Event of a policy file `kubegc agent` rejected: `reason` says which file, why,
    and that the last good policy stays in force (`agent.loop.PolicyFile.reason`)."""
    return _event("PolicyRejected", WARNING, reason)


def _timestamp(now: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))


def event_body(node: str, event: NodeEvent, now: float) -> dict[str, Any]:
    """The core/v1 Event as the kubelet's recorder would send it for its Node (JSON-ready).
    `now` is Unix seconds; the name is `<node>.<ns timestamp in hex>`, as client-go's."""
    stamp = _timestamp(now)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{node}.{int(now * 1e9):x}", "namespace": NAMESPACE},
        "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node},
        "reason": event.reason,
        "message": event.message,
        "type": event.type,
        "source": {"component": COMPONENT, "host": node},
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
        "reportingComponent": COMPONENT,
        "reportingInstance": node,
    }


class RateLimit:
    """Last post time per `<node>/<reason>`, in `<state-dir>/events.json` (see module doc).

    Used as a context manager: the file is opened and flock'ed on entry (created if
    missing, mode 0600, never through a link), and written back on exit. Raises `OSError` on
    entry when the state directory cannot be used, `BadInput` when it is not one kubegc may
    use (`kubegc_cli.node.state.safe_dir`) or the file is a link; callers then post without a
    limit (and say so). A file whose content is damaged (`damaged` says how) counts as no
    Event posted yet, and is replaced on exit."""

    def __init__(self, state_dir: Path, interval: float) -> None:
        self.path = state_dir / STATE_FILE
        self.interval = interval
        self.last: dict[str, float] = {}
        self.damaged = ""
        self._fd = -1
        self._dirty = False

    def __enter__(self) -> RateLimit:

        real = ensure_state_dir(self.path.parent)
        self._fd = open_in(real, STATE_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        raw = b""
        while chunk := os.read(self._fd, 65536):
            raw += chunk
        self.last, self.damaged = last_posted(raw, str(self.path))
        self._dirty = bool(self.damaged)  # written back whole on exit
        return self

    def due(self, key: str, now: float) -> bool:
        """True when no Event with `key` was posted in the last `interval` seconds (a time
        in the future — a clock set back — counts as long ago)."""
        last = self.last.get(key)
        return last is None or not (now - self.interval < last <= now)

    def mark(self, key: str, now: float) -> None:
        self.last[key] = now
        self._dirty = True

    def __exit__(self, *exc: object) -> None:
        try:
            if self._dirty:
                data = json.dumps({"last_posted": self.last}, sort_keys=True).encode()
                os.lseek(self._fd, 0, os.SEEK_SET)
                os.ftruncate(self._fd, 0)
                os.write(self._fd, data)
                os.fsync(self._fd)
        finally:
            os.close(self._fd)


def last_posted(raw: bytes, where: str) -> tuple[dict[str, float], str]:
    """The `last_posted` times (Unix seconds by `<node>/<reason>`) of the bytes `raw` of the
    events file `where`, and "" — or no times and why not, one line naming `where`: not JSON
    kubegc reads (`decode_json`), or not of that shape. Empty bytes are a new file."""
    if not raw:
        return {}, ""
    try:
        doc = decode_json(raw, where)
    except Malformed as exc:
        return {}, str(exc)
    last = doc.get("last_posted") if isinstance(doc, dict) else None
    if not isinstance(last, dict) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in last.values()
    ):
        return {}, f'{where} is not a {{"last_posted": {{"<node>/<reason>": seconds}}}} document'
    return {k: float(v) for k, v in last.items()}, ""


@contextlib.contextmanager
def _limits(state_dir: Path, interval: float, warn: Warn) -> Iterator[RateLimit | None]:

    limit = RateLimit(state_dir, interval)
    try:
        limit.__enter__()
    except (OSError, BadInput) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        warn(f"cannot remember posted events in {limit.path}: {why}; posting without the "
             "rate limit")  # fmt: skip
        yield None
        return
    if limit.damaged:
        warn(f"{limit.damaged}; taken as no event posted yet, and replaced")
    try:
        yield limit
    finally:
        try:
            limit.__exit__(None, None, None)
        except OSError as exc:
            warn(f"cannot remember posted events in {limit.path}: {exc.strerror or exc}")


def _refusal(exc: Any) -> str:
    status = int(getattr(exc, "status", 0) or 0)
    if status == 403:
        return "403 Forbidden: kubegc needs permission to create events in namespace default"

    detail = status_message(getattr(exc, "body", "") or "")
    return f"{status} {getattr(exc, 'reason', '') or ''}".strip() + (
        f": {detail}" if detail else ""
    )


def record_events(
    s: Any,
    command: str,
    result: Any,
    exit_code: int,
    *,
    warn: Warn,
    now: float | None = None,
    interval: float = INTERVAL_SECONDS,
) -> list[NodeEvent]:
    """Post the Events `events_for(command, result, exit_code)` gives (`post_events`)."""
    events = events_for(command, result, exit_code)
    return post_events(s, events, warn=warn, now=now, interval=interval)


def post_events(
    s: Any,
    events: list[NodeEvent],
    *,
    warn: Warn,
    now: float | None = None,
    interval: float = INTERVAL_SECONDS,
) -> list[NodeEvent]:
    """Post `events` on the Node `--node-name` (default the hostname), through the API found
    as kubectl finds it (`s.kubeconfig`, `s.context`, `s.env`; `s.timeout` seconds per
    request), each at most once per `interval` seconds per reason (state in `s.state_dir`).
    `now` is Unix seconds.

    Returns the Events the API accepted. Never raises for API or state problems: each is one
    line through `warn`; after a transport failure the remaining Events are not tried."""
    if not events:
        return []

    creds = find_credentials(s.kubeconfig, s.env)
    if creds is None:
        warn(
            "--events: no Kubernetes API credentials (--kubeconfig, KUBECONFIG, "
            "~/.kube/config, in-cluster service account); no events recorded"
        )
        return []
    node = node_name(s.node_name)
    try:
        api, host = open_api(ApiSource(creds, s.context, node))
    except BadInput as exc:
        warn(f"--events: {exc}; no events recorded")
        return []
    # deferred: tests/unit/test_startup.py::test_a_plain_dry_run_loads_no_heavy_package
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    when = time.time() if now is None else now
    posted: list[NodeEvent] = []
    try:
        with _limits(Path(s.state_dir), interval, warn) as limits:
            for ev in events:
                key = f"{node}/{ev.reason}"
                if limits is not None and not limits.due(key, when):
                    continue
                try:
                    api.create_namespaced_event(
                        NAMESPACE,
                        event_body(node, ev, when),
                        _preload_content=False,
                        _request_timeout=s.timeout,
                    )
                except ApiException as exc:
                    if not exc.status:
                        warn(f"event {ev.reason} not recorded: Kubernetes API {host} "
                             f"unreachable: {exc.reason}")  # fmt: skip
                        break
                    warn(f"event {ev.reason} on node {node} not recorded: {_refusal(exc)}")
                    continue
                except (HTTPError, OSError) as exc:
                    first = str(exc).splitlines()[0] if str(exc) else ""
                    warn(f"event {ev.reason} not recorded: Kubernetes API {host} unreachable: "
                         f"{type(exc).__name__}{': ' + first if first else ''}")  # fmt: skip
                    break
                posted.append(ev)
                if limits is not None:
                    limits.mark(key, when)
    finally:
        with contextlib.suppress(Exception):
            api.api_client.close()
    return posted

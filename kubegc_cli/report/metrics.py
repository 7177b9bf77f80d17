"""`--metrics-file PATH`: a node_exporter textfile-collector file, written after every run.

The file is in the Prometheus text exposition format (0.0.4), as node_exporter's textfile
collector reads it from `*.prom` files in its `--collector.textfile.directory`: a HELP and a
TYPE line per metric, then samples `name{label="value",...} value`, without timestamps.

Every series carries a `command` label (`gc all`, `evict check`, ...). A run replaces only its
own command's series and writes the other commands' back as the previous file held them, so
a timer running `gc all` and `residue scan` into one file keeps both.

| metric | type | labels (besides `command`) | value |
|---|---|---|---|
| `kubegc_runs_total` | counter | `result` (`success`, `failure`) | runs |
| `kubegc_objects_total` | counter | `kind`, `result` (removed, skipped, failed) | objects |
| `kubegc_freed_bytes_total` | counter | `kind` | bytes freed by removals |
| `kubegc_last_run_objects` | gauge | `kind`, `result` (also planned, kept) | last run's plan |
| `kubegc_measured_bytes_total` | counter | | bytes the filesystems regained, measured |
| `kubegc_last_run_planned_bytes` | gauge | `kind` | bytes the last run's plan would free |
| `kubegc_last_run_expected_bytes` | gauge | `kind` | bytes expected of what went |
| `kubegc_last_run_measured_bytes` | gauge | | bytes the filesystems regained, measured |
| `kubegc_last_run_freed_bytes` | gauge | `kind` | bytes the last run freed |
| `kubegc_last_run_duration_seconds` | gauge | | wall time of the last run |
| `kubegc_last_run_exit_code` | gauge | | its exit code |
| `kubegc_last_run_timestamp_seconds` | gauge | | when it ended (Unix time) |
| `kubegc_last_success_timestamp_seconds` | gauge | | when the last successful run ended |
| `kubegc_eviction_threshold_met` | gauge | `signal`, `type` (hard, soft) | 1 met, 0 not |
| `kubegc_residue_findings` | gauge | `kind` (finding type), `safe` | findings (residue) |
| `kubegc_residue_bytes` | gauge | `kind` | bytes the findings hold on disk |
| `kubelet_image_garbage_collected_total` | counter | `reason` (`age`, `space`) | images removed |
| `kubelet_image_gc_attempts_total` | counter | `op`, `result`, `reason` | runs that acted |
| `kubelet_image_gc_image_deletions_total` | counter | `op`, `reason`, `result` | removals |
| `kubelet_image_gc_skipped_images_total` | counter | `op`, `reason` | images kept |
| `kubelet_image_gc_freed_bytes` | histogram | `op`, `result`, `reason` | bytes freed a run |
| `kubelet_image_gc_image_fs_usage_percent` | gauge | `phase` (`before`) | image filesystem usage |

(`op`: `operation` and `trigger`.) `kind` is the action's kind (`container`, `sandbox`,
`pod-log-dir`, `log-symlink`, `image`, `pod`), or for residue the finding type
(`orphaned-pod-dir`, ...).

Where kubegc measures what the kubelet measures, it uses the kubelet's names and labels
(`image_gc_samples`): `kubelet_image_garbage_collected_total` is the kubelet's own metric
(`pkg/kubelet/metrics` `ImageGarbageCollectedTotal`, reasons "age" for MaxAge and "space" for
the high-threshold GC; `gc images --prune-unused` has no kubelet reason there); the
`kubelet_image_gc_*` series follow the draft of the kubelet's image GC observability proposal
(KEP-6053, alpha names that may still change). `operation` is `garbage_collect` (the
threshold and MaxAge GC) or `delete_unused_images` (`--prune-unused`, `reclaim`); `trigger`
is `periodic` for `kubegc agent` cycles, else `unknown`; an attempt is a run that acted.

The bytes are the run's own two figures (`kubegc_cli.core.plan`), as its table, its JSON
summary and `kubegc history` give them: expected (`bytes_expected`: what the objects still
to go in a dry run, or removed after acting, are expected to free; an image's size is an
upper bound) and measured (`bytes_measured`: what the filesystems the run touched regained,
statvfs before and after acting; `kubegc_last_run_measured_bytes` is absent when the last
run measured nothing, a dry run).

Counters are carried across runs in the file itself: a run adds to what the previous file
holds (no previous file, or one that cannot be parsed, starts them at 0, which Prometheus
takes as a counter reset). A failed run keeps the previous file's
`kubegc_last_success_timestamp_seconds`. Success is exit code 0 — and 5, with which
`evict check` says a threshold is met (what the check found, not a failure of the check).

Writing is atomic: a temporary file in the same directory (`.NAME.<random>.tmp`, ignored by
the collector), written, fsync'ed, given mode 0644, renamed over PATH, the directory
fsync'ed. kubegc runs writing the same file take turns (flock on the directory).
"""

from __future__ import annotations

import errno
import fcntl
import math
import os
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubegc_cli.core.errors import BadInput, ExitCode, KubegcError
from kubegc_cli.core.plan import Result, expected_bytes, measured_bytes
from kubegc_cli.core.residue import CNI_IP, NETNS, POD_CGROUP, POD_DIR
from kubegc_cli.node.host.regular import NotRegularFile, read_regular
from kubegc_cli.node.outfile import replace_file

SUFFIX = ".prom"
LOCK_TIMEOUT_SECONDS = 10.0

#: name → (type, help), in the order written.
METRICS: dict[str, tuple[str, str]] = {
    "kubegc_runs_total": (
        "counter",
        "kubegc runs by command and result (success: exit 0, or 5 from evict check).",
    ),
    "kubegc_objects_total": (
        "counter",
        "Objects kubegc acted on, by command, kind and result (removed, skipped, failed).",
    ),
    "kubegc_freed_bytes_total": (
        "counter",
        "Bytes freed by kubegc's removals, by command and kind.",
    ),
    "kubegc_last_run_objects": (
        "gauge",
        "Objects in the last run's plan by kind and result (planned in a dry run; removed, "
        "skipped, failed after acting; kept: left by a rule).",
    ),
    "kubegc_measured_bytes_total": (
        "counter",
        "Bytes the filesystems kubegc's runs acted on regained, measured (statvfs before and "
        "after acting), by command.",
    ),
    "kubegc_last_run_planned_bytes": ("gauge", "Bytes the last run's plan would free, by kind."),
    "kubegc_last_run_expected_bytes": (
        "gauge",
        "Bytes the last run expected to free by kind: of the objects still to go (a dry run) "
        "or removed (after acting); an image's size is the runtime's, an estimate.",
    ),
    "kubegc_last_run_measured_bytes": (
        "gauge",
        "Bytes the filesystems the last run acted on regained, measured (statvfs before and "
        "after acting); absent when it measured nothing.",
    ),
    "kubegc_last_run_freed_bytes": ("gauge", "Bytes the last run freed, by kind."),
    "kubegc_last_run_duration_seconds": ("gauge", "Wall time of the last run of the command."),
    "kubegc_last_run_exit_code": ("gauge", "Exit code of the last run of the command."),
    "kubegc_last_run_timestamp_seconds": (
        "gauge",
        "When the last run of the command ended (Unix time).",
    ),
    "kubegc_last_success_timestamp_seconds": (
        "gauge",
        "When the last successful run of the command ended (Unix time); kept by failed runs.",
    ),
    "kubegc_eviction_threshold_met": (
        "gauge",
        "1 when the eviction threshold on the signal is met, else 0 (evict check).",
    ),
    "kubegc_residue_findings": ("gauge", "Residue findings by type and whether safe to clean."),
    "kubegc_residue_bytes": ("gauge", "Bytes on disk the residue findings hold, by type."),
    "kubelet_image_garbage_collected_total": (
        "counter",
        "Total number of images garbage collected, by reason (age, space), as the kubelet counts.",
    ),
    "kubelet_image_gc_attempts_total": (
        "counter",
        "Image GC attempts (runs that acted) by operation, trigger, result (success, partial, "
        "noop, error) and reason, as KEP-6053 drafts the kubelet's.",
    ),
    "kubelet_image_gc_image_deletions_total": (
        "counter",
        "Image deletions tried by operation, trigger, reason (space, age, all_unused) and "
        "result (success, error), as KEP-6053 drafts the kubelet's.",
    ),
    "kubelet_image_gc_skipped_images_total": (
        "counter",
        "Images an image GC attempt kept, by operation, trigger and reason (in_use, min_age, "
        "pinned, other), as KEP-6053 drafts the kubelet's.",
    ),
    "kubelet_image_gc_freed_bytes": (
        "histogram",
        "Bytes an image GC attempt freed (image sizes the runtime reported), by operation, "
        "trigger, result and reason, as KEP-6053 drafts the kubelet's.",
    ),
    "kubelet_image_gc_image_fs_usage_percent": (
        "gauge",
        "Image filesystem usage percent observed before image GC (phase before).",
    ),
}
COUNTERS = frozenset(n for n, (t, _) in METRICS.items() if t in ("counter", "histogram"))
#: `le` bounds of `kubelet_image_gc_freed_bytes` (bytes: 1 MiB to 100 GiB, then +Inf).
FREED_BYTES_BUCKETS = tuple(float(2**20 * 10**k) for k in range(6))
_HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
KEEP_ON_FAILURE = frozenset({"kubegc_last_success_timestamp_seconds"})

#: Action kinds each command acts on (their counters start at 0 on the first run).
KINDS: dict[str, tuple[str, ...]] = {
    "gc containers": ("container",),
    "gc sandboxes": ("sandbox",),
    "gc logs": ("pod-log-dir", "log-symlink"),
    "gc all": ("container", "sandbox", "pod-log-dir", "log-symlink"),
    "gc images": ("image",),
    "evict prune": ("pod",),
    "reclaim": (
        "container",
        "sandbox",
        "pod-log-dir",
        "log-symlink",
        POD_DIR,
        NETNS,
        CNI_IP,
        POD_CGROUP,
        "image",
    ),
}
ACTED = ("removed", "skipped", "failed")
LABEL_ORDER = ("command", "kind", "signal", "type", "safe", "operation", "trigger", "result")

Labels = tuple[tuple[str, str], ...]
Key = tuple[str, Labels]


class MetricsError(KubegcError):
    """The metrics file could not be written (or the previous one read). A command run tells
    it as a warning and keeps its exit code (`kubegc_cli.report.run.report_run`)."""

    exit_code = ExitCode.FAILED


@dataclass(frozen=True, slots=True)
class RunFacts:
    """One finished run: `command` (`gc all`), `exit_code`, `started` and `ended` (Unix
    seconds), `duration` (seconds, monotonic), `result` (a `Plan`, an `EvictionReport`, or
    None when the command produced neither), `trigger` (`periodic` for an agent cycle's run)."""

    command: str
    exit_code: int
    started: float
    ended: float
    duration: float
    result: Any = None
    trigger: str = "unknown"  # what started the run, as KEP-6053 names it: periodic, unknown

    @property
    def succeeded(self) -> bool:
        """Exit 0, or 5 (`ExitCode.THRESHOLD_MET`: `evict check` found thresholds met, its
        finding, not a failure)."""
        return self.exit_code in (ExitCode.OK, ExitCode.THRESHOLD_MET)


def check_metrics_path(text: str) -> Path:
    """`--metrics-file` value → Path. Raises `BadInput` (exit 2, naming the value) when it is
    empty, does not end in `.prom` (the collector reads nothing else), or is a directory.

    A directory that is missing or not writable is not bad input: the run does its work and
    then cannot write the file (one warning line on stderr; the exit code is the run's)."""
    if not text.strip():
        raise BadInput("invalid value for --metrics-file: empty path")
    if not text.endswith(SUFFIX) or text.endswith("/" + SUFFIX) or text == SUFFIX:
        raise BadInput(
            f"invalid value for --metrics-file: {text!r} must be a file name ending in .prom "
            "(node_exporter's textfile collector reads only *.prom)"
        )
    path = Path(text)
    if os.path.isdir(path):
        raise BadInput(f"invalid value for --metrics-file: {text!r} is a directory")
    return path


def key(name: str, labels: Mapping[str, str]) -> Key:
    """A sample's key: (`name`, its labels as pairs, `LABEL_ORDER` first, then by name), as
    `render` and `merge` key samples."""
    return _key(name, labels)


def _key(name: str, labels: Mapping[str, str]) -> Key:
    order = {k: i for i, k in enumerate(LABEL_ORDER)}
    pairs = sorted(labels.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0]))
    return name, tuple(pairs)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), value)


def sample_value(value: float) -> str:
    """A sample's value in the Prometheus text format at full precision: a whole number in
    digits (a timestamp `1796450000`, never `1.79645e+09`), else `repr` (the shortest text
    that reads back as the same float), `NaN`, `+Inf`, `-Inf`."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == int(value) and abs(value) < 2**53:
        return str(int(value))
    return repr(value)


_SAMPLE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(?:,|$)')


def parse_samples(text: str) -> dict[Key, float]:
    """Samples of a text-format file: (name, labels) → value. Comment lines and lines that
    do not parse are skipped (a damaged previous file costs its values, nothing more)."""
    out: dict[Key, float] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.fullmatch(line)
        if not m:
            continue
        labels: dict[str, str] = {}
        rest = m.group(2) or ""
        pos = 0
        while pos < len(rest):
            lm = _LABEL.match(rest, pos)
            if not lm:
                break
            labels[lm.group(1)] = _unescape(lm.group(2))
            pos = lm.end()
        if pos < len(rest):
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        out[_key(m.group(1), labels)] = value
    return out


def render(samples: Mapping[Key, float], metrics: Mapping[str, tuple[str, str]] = METRICS) -> str:
    """The text format: the metrics of `metrics` (name → (type, help); default kubegc's
    textfile metrics, `METRICS`) in its order, each with HELP and TYPE, samples sorted by
    labels. Metric names not in `metrics` are dropped (the file holds only kubegc's)."""
    lines: list[str] = []
    by_family: dict[str, list[tuple[str, Labels, float]]] = {}
    for (n, labels), v in samples.items():
        family = family_of(n, metrics)
        if family is not None:
            by_family.setdefault(family, []).append((n, labels, v))
    for name, (kind, help_text) in metrics.items():
        rows = sorted(by_family.get(name, ()), key=lambda r: _row_order(name, r[0], r[1]))
        if not rows:
            continue
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")
        for n, labels, value in rows:
            inner = ",".join(f'{k}="{_escape(v)}"' for k, v in labels)
            lines.append(
                f"{n}{{{inner}}} {sample_value(value)}" if inner else f"{n} {sample_value(value)}"
            )
    return "\n".join(lines) + "\n"


def family_of(name: str, metrics: Mapping[str, tuple[str, str]] = METRICS) -> str | None:
    """The metric `name` belongs to: itself when `metrics` has it, the histogram it is a
    `_bucket`, `_sum` or `_count` of, else None."""
    if name in metrics:
        return name
    for suffix in _HISTOGRAM_SUFFIXES:
        base = name.removesuffix(suffix)
        if base != name and metrics.get(base, ("",))[0] == "histogram":
            return base
    return None


def _row_order(family: str, name: str, labels: Labels) -> tuple[Any, ...]:
    """A histogram's series by their labels, each one's buckets by bound, then _sum, _count;
    any other metric's by labels."""
    if name == family:
        return (labels,)
    rest = tuple(kv for kv in labels if kv[0] != "le")
    le = dict(labels).get("le", "+Inf")
    return (rest, _HISTOGRAM_SUFFIXES.index(name[len(family) :]), float(le))


def _kind_of(action: Any) -> str:
    """The `kind` label of an action: its kind, or for a residue finding its type."""
    if action.kind == "finding":
        return str(action.type)
    return str(action.kind)


def run_samples(facts: RunFacts) -> dict[Key, float]:
    """This run's own samples (counters as this run's increments, not yet summed)."""
    cmd = facts.command
    out: dict[Key, float] = {}

    def put(name: str, value: float, **labels: str) -> None:
        key = _key(name, {"command": cmd, **labels})
        out[key] = out.get(key, 0.0) + value

    put("kubegc_runs_total", 1.0, result="success" if facts.succeeded else "failure")
    put("kubegc_runs_total", 0.0, result="failure" if facts.succeeded else "success")
    put("kubegc_last_run_duration_seconds", round(facts.duration, 6))
    put("kubegc_last_run_exit_code", float(facts.exit_code))
    put("kubegc_last_run_timestamp_seconds", round(facts.ended, 3))
    if facts.succeeded:
        put("kubegc_last_success_timestamp_seconds", round(facts.ended, 3))
    result = facts.result
    if result is None:
        return out
    if hasattr(result, "actions") and hasattr(result, "kept"):
        _plan_samples(facts, result, put)
        if cmd in IMAGE_GC_COMMANDS:
            for (name, labels), value in image_gc_samples(result, cmd, facts.trigger).items():
                put(name, value, **{k: v for k, v in labels if k != "command"})
    if hasattr(result, "results") and hasattr(result, "met"):
        for r in result.results:
            t = r.threshold
            put("kubegc_eviction_threshold_met", 1.0 if r.met else 0.0,
                signal=t.signal, type="hard" if t.hard else "soft")  # fmt: skip
    return out


def _plan_samples(facts: RunFacts, plan: Any, put: Any) -> None:
    kinds = list(KINDS.get(facts.command, ()))
    types = tuple(getattr(plan, "types", ()) or ())
    kinds += [t for t in types if t not in kinds]
    for a in [*plan.actions, *plan.kept]:
        k = _kind_of(a)
        if k not in kinds:
            kinds.append(k)
    for k in kinds:
        for r in ACTED:
            put("kubegc_objects_total", 0.0, kind=k, result=r)
        put("kubegc_freed_bytes_total", 0.0, kind=k)
        put("kubegc_last_run_planned_bytes", 0.0, kind=k)
        put("kubegc_last_run_expected_bytes", 0.0, kind=k)
        put("kubegc_last_run_freed_bytes", 0.0, kind=k)
        for r in Result:  # planned, removed, skipped, failed, kept, ...
            put("kubegc_last_run_objects", 0.0, kind=k, result=r.value)
    for a in plan.actions:
        k, r = _kind_of(a), a.result.value
        put("kubegc_last_run_objects", 1.0, kind=k, result=r)
        put("kubegc_last_run_planned_bytes", float(a.planned_bytes), kind=k)
        put("kubegc_last_run_expected_bytes", float(expected_bytes([a])), kind=k)
        if r in ACTED:
            put("kubegc_objects_total", 1.0, kind=k, result=r)
        if a.bytes_freed:
            put("kubegc_freed_bytes_total", float(a.bytes_freed), kind=k)
            put("kubegc_last_run_freed_bytes", float(a.bytes_freed), kind=k)
    for a in plan.kept:
        put("kubegc_last_run_objects", 1.0, kind=_kind_of(a), result="kept")
    measured = measured_bytes(getattr(plan, "filesystems", ()))
    put("kubegc_measured_bytes_total", float(measured or 0))
    if measured is not None:
        put("kubegc_last_run_measured_bytes", float(measured))
    if hasattr(plan, "totals") and types:
        for t in types:
            put("kubegc_residue_findings", 0.0, kind=t, safe="true")
            put("kubegc_residue_findings", 0.0, kind=t, safe="false")
            put("kubegc_residue_bytes", 0.0, kind=t)
        for f in [*plan.actions, *plan.kept]:
            put("kubegc_residue_findings", 1.0, kind=f.type, safe="true" if f.safe else "false")
            put("kubegc_residue_bytes", float(f.bytes or 0), kind=f.type)


#: The commands that run the kubelet's image GC (`gc images`) or its DeleteUnusedImages
#: (`reclaim`, which removes unused images as `gc images --prune-unused`).
IMAGE_GC_COMMANDS = ("gc images", "reclaim")
#: kubegc's image rule → the reason `kubelet_image_garbage_collected_total` counts it under.
IMAGE_GC_REASONS = {"max-age": "age", "space": "space"}
#: kubegc's image rule → KEP-6053's deletion reason.
_DELETION_REASONS = {"max-age": "age", "space": "space", "prune-unused": "all_unused"}
#: The rule an image was kept by → KEP-6053's skipped-image reason (images not needed to
#: reach a target were not looked at, as in the kubelet's walk, and are not counted).
_SKIP_REASONS = {"in-use": "in_use", "min-age": "min_age", "pinned": "pinned",
                 "protected": "other", "unpullable": "other"}  # fmt: skip


def image_gc_samples(plan: Any, command: str, trigger: str = "unknown") -> dict[Key, float]:
    """The kubelet's image GC series of one run's `plan` (a `gc images` or `reclaim` plan;
    `command` its command, `trigger` what started it), as increments, every key with the
    `command` label: `kubelet_image_garbage_collected_total` (both reasons, 0 when none);
    for a run that acted, one attempt of KEP-6053 (its result: error when a removal failed,
    partial when some were removed short of the target or while a cap (`--max-delete`,
    `--max-bytes`) held back others — KEP-6053's partial: some removed, the objective not
    met —, error when none was removed for either reason, noop when none was removed and
    none had to be, else success; no attempt at all for a dry run), its deletions, the images
    it kept, the bytes it freed; the image filesystem's usage before (a gauge) whenever known."""
    out: dict[Key, float] = {}

    def put(name: str, value: float, **labels: str) -> None:
        k = _key(name, {"command": command, **labels})
        out[k] = out.get(k, 0.0) + value

    images = [a for a in plan.actions if a.kind == "image"]
    for reason in IMAGE_GC_REASONS.values():
        put("kubelet_image_garbage_collected_total", 0.0, reason=reason)
    for a in images:
        if a.result is Result.REMOVED and a.rule in IMAGE_GC_REASONS:
            put("kubelet_image_garbage_collected_total", 1.0, reason=IMAGE_GC_REASONS[a.rule])
    usage = (getattr(plan, "filesystem", None) or {}).get("usage_percent")
    if usage is not None and command == "gc images":
        put("kubelet_image_gc_image_fs_usage_percent", float(usage), phase="before")
    if plan.dry_run:
        return out
    prune = command == "reclaim" or bool((plan.policy or {}).get("prune_unused"))
    op = {"operation": "delete_unused_images" if prune else "garbage_collect", "trigger": trigger}
    removed = [a for a in images if a.result is Result.REMOVED]
    failed = [a for a in images if a.result is Result.FAILED]
    for a in [*removed, *failed]:
        ok = "success" if a.result is Result.REMOVED else "error"
        why = _DELETION_REASONS.get(a.rule, "unknown")
        put("kubelet_image_gc_image_deletions_total", 1.0, **op, reason=why, result=ok)
    for k in plan.kept:
        if k.kind == "image" and k.rule in _SKIP_REASONS:
            put("kubelet_image_gc_skipped_images_total", 1.0, **op, reason=_SKIP_REASONS[k.rule])
    short = command == "gc images" and plan.shortfall > 0
    held = any(a.result is Result.HELD_BACK for a in images)
    if failed:
        result, reason = "error", "delete_error"
    elif short or held:  # (images a cap held back: what the policy chose was not all freed)
        result, reason = ("partial" if removed else "error"), "insufficient_freed"
    else:
        result = "success" if removed else "noop"
        rules = {a.rule for a in removed}
        reason = "all_unused" if prune else "age" if rules == {"max-age"} else "threshold"
    put("kubelet_image_gc_attempts_total", 1.0, **op, result=result, reason=reason)
    freed = float(sum(a.bytes_freed for a in removed))
    labels = {**op, "result": result, "reason": reason}
    for bound in FREED_BYTES_BUCKETS:
        put("kubelet_image_gc_freed_bytes_bucket", 1.0 if freed <= bound else 0.0,
            **labels, le=sample_value(bound))  # fmt: skip
    put("kubelet_image_gc_freed_bytes_bucket", 1.0, **labels, le="+Inf")
    put("kubelet_image_gc_freed_bytes_sum", freed, **labels)
    put("kubelet_image_gc_freed_bytes_count", 1.0, **labels)
    return out


def merge(previous: Mapping[Key, float], facts: RunFacts) -> dict[Key, float]:
    """The file's new samples: other commands' series as `previous` held them; this
    command's replaced by this run's, counters summed with their previous values, and the
    last-success time kept from `previous` when this run failed."""
    mine = run_samples(facts)
    out: dict[Key, float] = {}
    for key, value in previous.items():
        name, labels = key
        family = family_of(name)
        if family is None:
            continue
        if dict(labels).get("command") != facts.command:
            out[key] = value
        elif family in COUNTERS:
            out[key] = value + mine.pop(key, 0.0)
        elif name in KEEP_ON_FAILURE and key not in mine:
            out[key] = value
    out.update(mine)
    return out


def _take_turn(fd: int, path: Path, timeout: float) -> None:
    """flock on the directory's descriptor `fd` (read access suffices, no lock file is left);
    gives up with `MetricsError` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise MetricsError(
                    f"cannot write metrics file {path}: another run held it for {timeout:g}s"
                ) from None
            time.sleep(0.05)


def _why(exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return "no such directory"
    return exc.strerror or str(exc)


MAX_PREVIOUS_BYTES = 16 * 1024 * 1024


def read_previous(path: Path) -> dict[Key, float]:
    """The samples of the file as a previous run left it ({} when there is none). Raises
    `MetricsError` when it exists but cannot be read (its counters would be lost), or is not
    a regular file kubegc may read: a symbolic link (never followed), a FIFO or device
    (opened without blocking, then refused: never a wait), or over 16 MiB."""
    try:
        data = read_regular(str(path), MAX_PREVIOUS_BYTES, follow_symlinks=False)
    except FileNotFoundError:
        return {}
    except NotRegularFile:
        raise MetricsError(
            f"the previous metrics file {path} is not a regular file; remove it"
        ) from None
    except OSError as exc:
        why = "a symbolic link (not followed)" if exc.errno == errno.ELOOP else exc.strerror
        raise MetricsError(f"cannot read the previous metrics file {path}: {why or exc}") from None
    if len(data) > MAX_PREVIOUS_BYTES:
        raise MetricsError(f"the previous metrics file {path} is larger than 16 MiB")
    return parse_samples(data.decode("utf-8", errors="replace"))


def write_atomically(path: Path, text: str) -> None:
    """Replace `path` with `text`, mode 0644 (node_exporter runs as another user), as
    `kubegc_cli.node.outfile.replace_file` does. Raises `MetricsError`."""
    try:
        replace_file(path, text, 0o644)
    except OSError as exc:
        raise MetricsError(f"cannot write metrics file {path}: {_why(exc)}") from None


def write_metrics(path: Path, facts: RunFacts) -> None:
    """Write the metrics of the run `facts` into the textfile `path` (see the module doc).

    Raises `MetricsError` (one line naming the file) when the directory is missing or not
    writable, the previous file cannot be read, or another run holds the file too long."""
    try:
        fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise MetricsError(f"cannot write metrics file {path}: {_why(exc)}") from None
    try:
        _take_turn(fd, path, LOCK_TIMEOUT_SECONDS)
        samples = merge(read_previous(path), facts)
        write_atomically(path, render(samples))
    finally:
        os.close(fd)


def series(samples: Mapping[Key, float], name: str) -> Iterable[tuple[dict[str, str], float]]:
    """The samples of metric `name` as (labels, value) pairs (for callers and tests)."""
    for (n, labels), value in samples.items():
        if n == name:
            yield dict(labels), value

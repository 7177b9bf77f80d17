"""The kubelet's container log rotation, as a pure judge of what a container log directory
holds: what rotation has not done yet, and what it (or a removal behind its back) left.

Source of the rules: kubelet `pkg/kubelet/logs/container_log_manager.go`, in short:

- A running container's live log `<n>.log` is rotated once its size is at or over
  `containerLogMaxSize` (`processContainer`: `info.Size() < MaxSize` keeps it); a negative
  size disables rotation (`NewContainerLogManager` starts no manager). Only running
  containers' logs are rotated (`rotateLogs`).
- Rotation (`rotateLog`): the files `<n>.log.*` (`filepath.Glob`), less the unused ones,
  which it removes (`cleanupUnusedLogs` / `isInUse`: every `.tmp` file — what a compression
  writes first — and an uncompressed file whose `.gz` already exists); then it keeps the
  newest `containerLogMaxFiles - 2` of them in name order (`removeExcessLogs`: names carry
  the timestamp, so name order is age order), compresses the uncompressed ones
  (`compressLog`: `<file>.tmp`, then renamed `<file>.gz`, then the file removed), and renames
  the live log `<n>.log.<YYYYMMDD-hhmmss>` (`rotateLatestLog`, timestampFormat
  `20060102-150405`) before the runtime reopens it (`ReopenContainerLog`). So between
  rotations a container keeps at most `containerLogMaxFiles - 1` rotated files, all but the
  newest compressed, and `containerLogMaxSize` × `containerLogMaxFiles` bytes.
- A container's logs are removed with the container (kuberuntime `removeContainerLog`):
  files of an instance the runtime no longer has escape every rule above.

kubegc judges each container log directory of a pod the runtime knows (a gone pod's whole
directory is `orphaned-pod-log-dir`), with no clock, socket or file: time and facts come in
as arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping

from kubegc_cli.core.podlogs import (
    ContainerLogDir,
    LinkedLog,
    LogFile,
    LogOwner,
    LogRotation,
    live_log_of,
)
from kubegc_cli.core.residue import (
    EARLIER_INSTANCE_LOG,
    LOG_OVER_SIZE,
    LOGS_OVER_BUDGET,
    NOTHING,
    ROTATED_PAST_COUNT,
    ROTATED_UNCOMPRESSED,
    ROTATION_LEFTOVER,
    STALE_LOG_LINK,
    Finding,
    known_id,
)
from kubegc_cli.core.units import format_bytes

#: A file changed less than this many seconds ago may be one the kubelet or the runtime is
#: writing right now (a compression's `.tmp`, a new instance's `<n>.log` created after the
#: runtime was listed): never marked safe, and left at removal.
LOG_GRACE_SECONDS = 600

#: The kubelet's suffixes (container_log_manager.go `compressSuffix`, `tmpSuffix`).
COMPRESS_SUFFIX = ".gz"
TMP_SUFFIX = ".tmp"

NOT_RUNTIME = "the runtime could not be listed"
UNSURE = "a container of this name has no restart count the log name can be told from"


def split_rotations(names: Iterable[str]) -> tuple[list[str], list[str]]:
    """The rotated files of one live log (`<log>.*` names) as the kubelet splits them
    (container_log_manager.go `filterUnusedLogs`, `isInUse`): (in use, in name order: the
    compressed ones and the uncompressed ones without a `.gz` twin; unused: every `.tmp`
    and each uncompressed file whose `.gz` exists)."""
    every = set(names)
    in_use: list[str] = []
    unused: list[str] = []
    for n in sorted(every):
        if n.endswith(TMP_SUFFIX):
            unused.append(n)
        elif n.endswith(COMPRESS_SUFFIX) or n + COMPRESS_SUFFIX not in every:
            in_use.append(n)
        else:
            unused.append(n)
    return in_use, unused


def excess_rotations(in_use: list[str], max_files: int, *, rotating: bool) -> list[str]:
    """The rotated files (in use, name order) past the count, oldest first: beyond
    `max_files - 1` between rotations, beyond `max_files - 2` right before one (`rotating`:
    the kubelet's `removeExcessLogs` runs first, so that with the live log renamed and a new
    one opened there are `max_files` in all)."""
    keep = max(max_files - (2 if rotating else 1), 0)
    ordered = sorted(in_use)
    return ordered[: max(len(ordered) - keep, 0)]


def plan_log_rotation(
    dirs: Iterable[ContainerLogDir],
    owners: Mapping[str, LogOwner],
    rotation: LogRotation,
    now: float,
    *,
    runtime_known: bool,
    pod_known: Callable[[str], bool],
    unsure: Collection[str] = (),
    grace: float = LOG_GRACE_SECONDS,
) -> list[Finding]:
    """Findings for the container log directories `dirs` (host paths), sorted by target.

    `owners` maps the host path of each live log the runtime has a container for (the
    kubelet's `<dir>/<restartCount>.log` of every container the runtime lists) to that
    container. `rotation` is the effective containerLogMaxSize / containerLogMaxFiles; `now`
    seconds since the epoch. `pod_known(uid)`: the runtime has a sandbox or container of
    that pod (only then is a directory judged when the runtime was listed); `unsure` holds
    the host paths of container log directories where a container of the runtime has no log
    name the kubelet's layout gives (its instance cannot be told: nothing there counts as
    an earlier instance's). Without the runtime (`runtime_known` False) no log counts as
    over size or as an earlier instance's.

    The finding types (`core.residue`), each from the kubelet function its rule follows:

    - `log-over-size` (`processContainer`): a running container's live log at or over
      `max_size`; safe (cleaning rotates it: rename, then CRI ReopenContainerLog, renamed
      back when that fails), `bytes` its allocated size, which rotation moves, not frees.
    - `rotated-log-past-count` (`removeExcessLogs`): the oldest in-use rotated files beyond
      `max_files - 1` (beyond `max_files - 2` when this plan rotates the live log); safe.
    - `log-rotation-leftover` (`cleanupUnusedLogs`): `.tmp` files and uncompressed files
      whose `.gz` exists; safe once they (or the `.gz`) have not changed for `grace` seconds.
      Removed only while the `.gz` is still there (`details["judged"]` names it) — unless
      that `.gz` is itself past the count: the two are then one rotation judged together
      (the kubelet removes both in one pass: `cleanupUnusedLogs`, then `removeExcessLogs`),
      the file is judged by itself (`judged` its own name) and safe once neither changed
      for `grace` seconds, so one clean leaves neither, as the kubelet would.
    - `uncompressed-rotated-log` (`compressLog` not run yet): an in-use uncompressed rotated
      file other than the newest; not safe (kubegc does not compress: the kubelet does at
      the container's next rotation).
    - `logs-over-budget`: a container whose log files add up to more than `max_size` ×
      `max_files` (apparent sizes); not safe (a report: the findings above are what can be
      done), `bytes` the excess.
    - `earlier-instance-log` (`removeContainerLog` never ran): every file of a live log no
      container of the runtime owns, in the directory of a pod the runtime knows; safe once
      unchanged for `grace` seconds.
    The size and count rules apply only while rotation is enabled (`max_size` not negative).
    """
    out: list[Finding] = []
    for d in dirs:
        if runtime_known and not pod_known(d.uid):
            continue  # a gone pod's directory: `orphaned-pod-log-dir`
        groups: dict[str, list[LogFile]] = {}
        for f in d.files:
            live = live_log_of(f.name)
            if live:
                groups.setdefault(live, []).append(f)
        for live, files in sorted(groups.items()):
            log_host = f"{d.host}/{live}"
            owner = owners.get(log_host)
            if runtime_known and owner is None:
                out += _earlier_instance(d, live, files, now, grace, unsure)
                continue
            out += _one_log(d, live, files, owner, rotation, now, grace)
    return sorted(out, key=lambda f: f.target)


def _details(d: ContainerLogDir, live: str, f: LogFile, **more: object) -> dict[str, object]:
    """What a file finding carries for `residue clean`'s re-checks and for JSON."""
    return {
        "uid": d.uid,
        "container": d.container,
        "container_log_dir": d.host,
        "log": f"{d.host}/{live}",
        "name": f.name,
        "size": f.size,
        "mtime": f.mtime,
        "dev": f.dev,
        "ino": f.ino,
        **more,
    }


def _unlink_action(name: str) -> str:
    return f"unlink {name} (only while it is the same file, unchanged)"


def _young(f: LogFile, now: float, grace: float) -> str:
    """ "" or why a file changed `now - f.mtime` seconds ago is not safe yet."""
    age = now - f.mtime
    if age >= grace:
        return ""
    return f"changed {max(int(age), 0)}s ago: it may still be being written"


def _one_log(
    d: ContainerLogDir,
    live: str,
    files: list[LogFile],
    owner: LogOwner | None,
    rotation: LogRotation,
    now: float,
    grace: float,
) -> list[Finding]:
    """The findings of one live log the runtime owns (`owner`; None when the runtime was not
    listed) and its rotated files."""
    out: list[Finding] = []
    by_name = {f.name: f for f in files}
    current = by_name.get(live)
    rotated = [f.name for f in files if f.name != live and f.regular]
    in_use, unused = split_rotations(rotated)
    log_host = f"{d.host}/{live}"
    cid = owner.container_id if owner else ""
    rotating = (
        rotation.enabled
        and owner is not None
        and owner.running
        and current is not None
        and current.regular
        and current.size >= rotation.max_size
    )
    excess = excess_rotations(in_use, rotation.max_files, rotating=rotating)
    going = set(excess) if rotation.enabled else set()
    for name in unused:
        f = by_name[name]
        why = "a compression's temporary file (.tmp)"
        judged = f
        young = ""
        if not name.endswith(TMP_SUFFIX):
            twin = by_name[name + COMPRESS_SUFFIX]
            if twin.name in going:
                # One rotation in two files, judged together: the kubelet removes this one
                # (cleanupUnusedLogs) and then its .gz (removeExcessLogs) in the same pass, so
                # this one goes whether or not its .gz is still there when it is removed.
                why = (
                    f"already compressed as {twin.name}, which is past the count too: the "
                    "kubelet removes both"
                )
                young = _young(twin, now, grace) or _young(f, now, grace)
            else:
                judged = twin
                why = f"already compressed as {twin.name}"
        young = young or _young(judged, now, grace)
        out.append(
            Finding(
                type=ROTATION_LEFTOVER,
                target=f"{d.host}/{name}",
                evidence=f"rotated file of {live} the kubelet no longer uses: {why}",
                bytes=f.blocks,
                safe=not young,
                unsafe_reason=young,
                action=_unlink_action(name),
                details=_details(
                    d,
                    live,
                    f,
                    container_id=cid,
                    judged=judged.name,
                    judged_mtime=judged.mtime,
                    judged_size=judged.size,
                    judged_dev=judged.dev,
                    judged_ino=judged.ino,
                    grace=grace,
                ),
            )
        )
    if not rotation.enabled:
        return out
    if rotating and current is not None and owner is not None:
        out.append(
            Finding(
                type=LOG_OVER_SIZE,
                target=log_host,
                evidence=(
                    f"live log of running container {owner.container_id[:13]}: {current.size} "
                    f"bytes ({format_bytes(current.size)}), at or over containerLogMaxSize "
                    f"{rotation.max_size} ({rotation.source}); the kubelet has not rotated it yet"
                ),
                bytes=current.blocks,
                safe=True,
                action=(
                    f"rename {live} to {live}.<YYYYMMDD-hhmmss>, then CRI ReopenContainerLog "
                    f"{owner.container_id[:13]} (renamed back if that fails); never truncated"
                ),
                details=_details(
                    d, live, current, container_id=owner.container_id, max_size=rotation.max_size
                ),
            )
        )
    keep = rotation.max_files - (2 if rotating else 1)
    for name in excess:
        f = by_name[name]
        out.append(
            Finding(
                type=ROTATED_PAST_COUNT,
                target=f"{d.host}/{name}",
                evidence=(
                    f"{len(in_use)} rotated files of {live}; containerLogMaxFiles "
                    f"{rotation.max_files} ({rotation.source}) leaves {max(keep, 0)}"
                    f"{' before a rotation' if rotating else ''}: this is among the oldest"
                ),
                bytes=f.blocks,
                safe=True,
                action=_unlink_action(name),
                details=_details(d, live, f, container_id=cid, max_files=rotation.max_files),
            )
        )
    kept = [n for n in in_use if n not in set(excess)]
    for name in kept[:-1]:
        if name.endswith(COMPRESS_SUFFIX):
            continue
        f = by_name[name]
        out.append(
            Finding(
                type=ROTATED_UNCOMPRESSED,
                target=f"{d.host}/{name}",
                evidence=f"uncompressed rotated file of {live}, not the newest rotation",
                bytes=f.blocks,
                safe=False,
                unsafe_reason=(
                    "kubegc does not compress logs: the kubelet compresses it at the "
                    "container's next rotation"
                ),
                action=NOTHING,
                manual=f"gzip {d.host}/{name} (as the kubelet's compressLog would)",
                details=_details(d, live, f, container_id=cid),
            )
        )
    total = sum(f.size for f in files if f.regular)
    budget = rotation.budget
    if total > budget:
        out.append(
            Finding(
                type=LOGS_OVER_BUDGET,
                target=log_host,
                evidence=(
                    f"{live} and its {len(files) - 1} rotated file(s): {total} bytes "
                    f"({format_bytes(total)}), over containerLogMaxSize × containerLogMaxFiles "
                    f"= {budget} ({format_bytes(budget)}, {rotation.source}); bytes: the excess"
                ),
                bytes=total - budget,
                safe=False,
                unsafe_reason="a report: the other findings of this log are what can be cleaned",
                action=NOTHING,
                details={
                    "uid": d.uid,
                    "container": d.container,
                    "container_log_dir": d.host,
                    "log": log_host,
                    "container_id": cid,
                    "total": total,
                    "budget": budget,
                    "files": len(files),
                },
            )
        )
    return out


def _earlier_instance(
    d: ContainerLogDir,
    live: str,
    files: list[LogFile],
    now: float,
    grace: float,
    unsure: Collection[str],
) -> list[Finding]:
    """The findings of a live log no container of the runtime owns: each of its files."""
    out: list[Finding] = []
    for f in sorted(files, key=lambda f: f.name):
        if not f.regular:
            continue
        reasons = []
        if d.host in unsure:
            reasons.append(UNSURE)
        if young := _young(f, now, grace):
            reasons.append(young)
        out.append(
            Finding(
                type=EARLIER_INSTANCE_LOG,
                target=f"{d.host}/{f.name}",
                evidence=(
                    f"log of instance {live.removesuffix('.log')} of container {d.container} "
                    f"of pod {d.uid}, which the runtime no longer has: no rotation counts it"
                ),
                bytes=f.blocks,
                safe=not reasons,
                unsafe_reason="; ".join(reasons),
                action=_unlink_action(f.name),
                details=_details(d, live, f),
            )
        )
    return out


def stale_links(
    links: Iterable[LinkedLog],
    known_ids: Collection[str],
    now: float,
    *,
    runtime_known: bool,
    grace: float = LOG_GRACE_SECONDS,
) -> list[Finding]:
    """`/var/log/containers` symlinks whose target exists but whose container the runtime
    no longer has (type `stale-log-link`): a log shipper that reads the directory reads that
    log again under the link of the instance that replaced it. The kubelet removes the link
    with the container (kuberuntime `removeContainerLog`), so kubegc removes it by the same
    rule: safe when the runtime was listed and knows no container or sandbox whose ID equals
    the name's or shares a prefix of at least 12 characters with it (`known_id`), and the
    link has not changed for `grace` seconds (`now`, seconds since the epoch: the kubelet
    makes a new container's link right after creating it, maybe after the runtime was
    listed); a link whose name has no container ID is left (only a dangling one is removed
    then: `dangling-log-link`)."""
    out: list[Finding] = []
    for link in links:
        cid = link.container_id
        if not cid or not runtime_known or known_id(cid, known_ids):
            continue
        age = now - link.mtime
        young = f"made {max(int(age), 0)}s ago: its container may be new" if age < grace else ""
        out.append(
            Finding(
                type=STALE_LOG_LINK,
                target=link.host,
                evidence=(
                    f"symlink of container {cid}, which the runtime no longer has; its target "
                    f"{link.target} exists (a log shipper reads it twice)"
                ),
                bytes=0,
                safe=not young,
                unsafe_reason=young,
                action=f"unlink (only while it is a symlink and {cid[:13]} stays unknown)",
                details={"container_id": cid, "target": link.target},
            )
        )
    return sorted(out, key=lambda f: f.target)

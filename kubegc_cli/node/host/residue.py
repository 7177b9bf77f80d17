"""Host-side residue scanners: what is left on the node's disk, in its mount and network
namespaces, its cgroup trees and its process table after pods are gone.

Each `scan_*(ctx)` reads the host under `ctx.host_root` and returns `Finding`s sorted by
target. A scanner never raises for a missing directory: a root that is missing or cannot be
read gives [] (the orchestrator reports what it could not read), and entries that vanish
while a scan walks them are skipped.

Safety (kubegc's, stricter than the kubelet's): a finding is marked `safe` only when every
fact its removal depends on was read — the pod source for "the pod is gone", the runtime's
full inventory for "the runtime does not know it", this process's mount table for "nothing
is mounted at or below it", the host's process table for "no process uses it". Whatever
kubegc cannot establish is reported, never cleaned.

Sources for the rules: the kubelet's orphaned pod directory cleanup
(`kubelet_volumes.go` `cleanupOrphanedPodDirs`, whose log line "orphaned pod %q found, but
volume paths are still present on disk" this module quotes), its pod log cleanup (see
`kubegc_cli.node.host.podlogs`), the CNI `host-local` IPAM disk store (one file per reserved
address, named by the address, holding the container ID and, in newer plugins, the
interface name; `lock` and `last_reserved_ip.<range>` are its bookkeeping), containerd's
`cni-<uuid>` network namespaces under `/var/run/netns`, and the kubelet's pod cgroup names
(see `kubegc_cli.node.host.cgroups`).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import stat
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import Any, NamedTuple

import psutil

from kubegc_cli.core.errors import SignalUnavailable
from kubegc_cli.core.podlogs import NOT_A_POD, container_id_from_link, is_pod_uid
from kubegc_cli.core.pods import is_static_pod_uid
from kubegc_cli.core.residue import (
    CNI_IP,
    LOG_LINK,
    NETNS,
    NOTHING,
    POD_CGROUP,
    POD_DIR,
    POD_LOG_DIR,
    SHIM,
    Finding,
    known_id,
)
from kubegc_cli.core.sizes import on_disk
from kubegc_cli.node.host.bounded import Stalled, Watch, bounded, bounded_each, listdir, stat_of
from kubegc_cli.node.host.cgroups import cgroup_hierarchies, count_processes, find_pod_cgroups
from kubegc_cli.node.host.du import TreeUsage, tree_usage
from kubegc_cli.node.host.logs import (
    LogRoots,
    host_path_of,
    on_host,
    pinned_on_host,
    resolve_on_host,
)
from kubegc_cli.node.host.podlogs import dangling_links, read_pod_log_dirs
from kubegc_cli.node.host.scan import ScanContext

SETUP_GRACE_SECONDS = 600
"""Objects younger than this (seconds) may belong to a sandbox still being set up: the
runtime creates the network namespace, reserves the IP and starts the shim before it lists
the new sandbox. Such network namespaces and IP reservations are never marked safe, and such
shims are reported with their age (shims are never safe anyway)."""

POD_DIR_GRACE_SECONDS = SETUP_GRACE_SECONDS
"""A pod directory changed less than this (seconds) ago may be a new pod's (see
`pod_dir_setup_reason`): never marked safe, and left at removal."""

CRI_NAMESPACE = "k8s.io"
"""The containerd namespace the CRI plugin keeps Kubernetes containers in; shims of other
namespaces (Docker's `moby`, `ctr`'s `default`) are not the CRI runtime's."""

MEMORY_V1 = "/sys/fs/cgroup/memory"
NETNS_PREFIX = "cni-"
CNI_BOOKKEEPING = ("lock", "last_reserved_ip")

NO_POD_SOURCE = "no pod source: kubegc cannot tell the pod is gone"
NO_RUNTIME = "the runtime could not be listed"
STATIC_POD = (
    "a static pod's UID that no mirror pod names: kubegc cannot see the kubelet's manifests"
)
NO_PROCESSES = "cannot see the host's processes (--host-root is not /)"
NEVER_KILL = "kubegc never kills processes"

DIR_ACTION = "rm -r {path} (one filesystem, no symlinks followed)"
# --- shared helpers ---------------------------------------------------------------------------


def sees_host_processes(host_root: Path) -> bool:
    """True when this process's /proc is the host's: `host_root` is `/`."""
    return os.path.realpath(str(host_root)) == "/"


def _sorted(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: f.target)


def _age(st: os.stat_result, now: float) -> float:
    """Seconds since the last modification (a reservation file is written once; a namespace
    file's nsfs inode carries the time its namespace was first bound)."""
    return now - st.st_mtime


def pod_dir_setup_reason(local: str, now: float) -> str:
    """Why pod directory `local` may belong to a pod still being set up ("" when it has not
    changed for `POD_DIR_GRACE_SECONDS`): the kubelet makes `<root-dir>/pods/<uid>` and its
    subdirectories, and mounts the volumes, before the pod's sandbox exists, so a pod source
    older than the pod (a pods file written earlier) cannot speak for it. Its age is that of
    the newest modification time (not following symlinks) of the directory and of every
    entry directly in it; one that cannot be read (or gives no answer within `--timeout`)
    counts as new."""

    def newest_mtime(watch: Watch) -> float:
        watch.at(local)
        newest = os.lstat(local).st_mtime
        with os.scandir(local) as it:
            for e in it:
                watch.at(e.path)
                newest = max(newest, e.stat(follow_symlinks=False).st_mtime)
        return newest

    try:
        newest = bounded(newest_mtime)
    except FileNotFoundError:
        return ""
    except OSError as exc:
        return f"cannot read when it last changed: {exc.strerror or exc}"
    age = now - newest
    if age >= POD_DIR_GRACE_SECONDS:
        return ""
    return f"changed {max(int(age), 0)}s ago: a new pod may still be being set up"


def _unsafe(reasons: list[str]) -> tuple[bool, str]:
    return (not reasons), "; ".join(reasons)


def _pod_gone_reasons(ctx: ScanContext, uid: str) -> list[str]:
    """Why kubegc cannot treat pod `uid` as gone (empty when `ctx.pod_is_gone(uid)` and `uid`
    is spelled like a pod UID; a name that is not is never a gone pod's)."""
    naming = [] if is_pod_uid(uid) else [NOT_A_POD]
    if ctx.pod_is_gone(uid):
        return naming
    reasons = naming
    if not ctx.pods_known:
        reasons.append(NO_POD_SOURCE)
    if not ctx.runtime_known:
        reasons.append(NO_RUNTIME)
    known = uid in ctx.pod_uids or uid in ctx.runtime_pod_uids
    if is_static_pod_uid(uid) and not reasons and not known:
        reasons.append(STATIC_POD)
    return reasons or [f"pod {uid} is known"]


def _pod_evidence(ctx: ScanContext, uid: str, what: str) -> str:
    if ctx.pods_known:
        return f"{what}: neither the pod source nor the runtime knows pod {uid}"
    return f"{what}: the runtime knows no sandbox or container of pod {uid} (no pod source read)"


class _DirFacts(NamedTuple):
    """What decides whether a directory may be removed: `reasons` it may not (empty: none
    found), host paths of the `mounts` at or below it, whether it `is_link`, and its
    resolved local path (`real`; the link itself for a symlink)."""

    reasons: list[str]
    mounts: list[str]
    is_link: bool
    real: str


def _dir_facts(ctx: ScanContext, local: str) -> _DirFacts | None:
    """`_DirFacts` of the local directory `local`; None when it is gone.

    Mount points are looked up for both the path as written and its resolved form, so a
    symlinked kubelet root cannot hide a mount. One the mount table names is not touched (a
    stale mount would hang a stat); one that gives no answer within `--timeout` is reported.
    """
    root = ctx.host_root
    host = host_path_of(root, local)
    if ctx.mounts.is_mount_point(local):
        mounts = [host_path_of(root, p) for p in ctx.mounts.at_or_below(local)]
        return _DirFacts([f"it is itself a mount point ({host})"], mounts, False, local)
    try:
        st = stat_of(local)
    except Stalled as exc:
        return _DirFacts([f"{host}: {exc.strerror}"], [host], False, local)
    except OSError:
        return None
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(local)
        except OSError:
            target = "?"
        mounts = [host_path_of(root, p) for p in ctx.mounts.at_or_below(local)]
        reason = f"it is a symlink (to {target}); kubegc never removes through symlinks"
        return _DirFacts([reason], mounts, True, local)
    try:
        real = resolve_on_host(root, host)
    except OSError as exc:
        return _DirFacts([f"cannot resolve {host}: {exc.strerror or exc}"], [], False, local)
    reasons: list[str] = []
    if not ctx.mounts.known:
        reasons.append(ctx.mounts.error)
    top = os.path.realpath(str(root))
    if top != "/" and real != top and not real.startswith(top + "/"):
        reasons.append(f"it resolves outside --host-root ({real})")
    points = sorted(set(ctx.mounts.at_or_below(local)) | set(ctx.mounts.at_or_below(real)))
    if any(p in (local, real) for p in points):
        reasons.append(f"it is itself a mount point ({host})")
    below = [host_path_of(root, p) for p in points if p not in (local, real)]
    if below:
        reasons.append("mounted below it: " + ", ".join(below))
    return _DirFacts(reasons, [host_path_of(root, p) for p in points], False, real)


def _may_enter(facts: _DirFacts) -> bool:
    """The directory may be looked into: it is not itself a mount point and did not hang."""
    return not any(
        r.startswith("it is itself a mount point") or r.endswith("(a hung mount?)")
        for r in facts.reasons
    )


def _usage(ctx: ScanContext, facts: _DirFacts) -> TreeUsage:
    """The disk usage of a directory found (`tree_usage`, bounded by `--timeout`); none for
    one that is itself a mount point or gave no answer (never entered)."""
    return tree_usage(facts.real, ctx.mounts) if _may_enter(facts) else TreeUsage()


def _stalled(ctx: ScanContext, local: str) -> str:
    """The reason a directory whose walk got no answer at `local` is not safe to remove."""
    shown = host_path_of(ctx.host_root, local)
    return f"no answer from {shown} within --timeout (a hung mount?); its size is partial"


def _release_mounts(kind: str, mounts: list[str]) -> str:
    """By hand, for a directory kept for its mounts: release them, then clean again."""
    if not mounts:
        return ""
    return (
        f"umount {' '.join(mounts)} (once nothing uses them), then "
        f"`kubegc residue clean --kind {kind}`"
    )


# --- 1. orphaned pod directories --------------------------------------------------------------


def _volume_dirs(local_pod: str, host_pod: str) -> list[str]:
    """Host paths of `volumes/<plugin>/<volume>` directories (never following symlinks)."""
    out: list[str] = []
    volumes = os.path.join(local_pod, "volumes")
    try:
        plugins = [e for e in listdir(volumes) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return out
    for plugin in plugins:
        try:
            names = [e.name for e in listdir(plugin.path) if e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        out.extend(f"{host_pod}/volumes/{plugin.name}/{n}" for n in names)
    return sorted(out)


def _pod_dir_finding(ctx: ScanContext, pods_host: str, uid: str, local: str) -> Finding | None:
    """The finding of the pod directory `local` (`<pods_host>/<uid>` on the host), or None
    when it is no finding (a pod known, not a directory, gone). See `scan_pod_dirs`."""
    if not ctx.pod_unknown(uid):
        return None
    if not ctx.mounts.is_mount_point(local):  # (a mount point is a directory: not stat'ed)
        try:
            st = stat_of(local)
        except Stalled:
            pass  # reported by `_dir_facts`
        except OSError:
            return None
        else:
            if not (stat.S_ISDIR(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                return None
    host = f"{pods_host}/{uid}"
    facts = _dir_facts(ctx, local)
    if facts is None:
        return None
    usable = not facts.is_link and _may_enter(facts)
    volumes = _volume_dirs(local, host) if usable else []
    reasons = facts.reasons + _pod_gone_reasons(ctx, uid)
    recent = pod_dir_setup_reason(local, time.time()) if usable else ""
    if recent:
        reasons.append(recent)
    usage = _usage(ctx, facts)
    if usage.stalled:
        reasons.append(_stalled(ctx, usage.stalled))
    safe, why = _unsafe(reasons)
    what = (
        f"orphaned pod {uid} found, but volume paths are still present on disk"
        if volumes
        else f"orphaned pod {uid} found"
    )
    return Finding(
        type=POD_DIR,
        target=host,
        evidence=_pod_evidence(ctx, uid, what),
        bytes=usage.bytes,
        safe=safe,
        unsafe_reason=why,
        action=DIR_ACTION.format(path=host),
        details={"uid": uid, "volumes": volumes, "mounts_below": facts.mounts},
        manual=_release_mounts(POD_DIR, facts.mounts),
        changed_ns=usage.changed_ns,
    )


def _stalled_pod_dir(
    ctx: ScanContext, pods_host: str, uid: str, local: str, exc: Stalled
) -> Finding | None:
    """The finding of a pod directory whose look gave no answer within `--timeout` at
    `exc.filename`: not safe, its size unknown (0), the mounts the table names at or below it;
    None for a pod that is known."""
    if not ctx.pod_unknown(uid):
        return None
    host = f"{pods_host}/{uid}"
    mounts = [host_path_of(ctx.host_root, p) for p in ctx.mounts.at_or_below(local)]
    shown = host_path_of(ctx.host_root, exc.filename or local)
    stalled = f"no answer from {shown} within --timeout (a hung mount?); its size is unknown"
    reasons = [stalled, *_pod_gone_reasons(ctx, uid)]
    return Finding(
        type=POD_DIR,
        target=host,
        evidence=_pod_evidence(ctx, uid, f"orphaned pod {uid} found"),
        bytes=0,
        safe=False,
        unsafe_reason="; ".join(reasons),
        action=DIR_ACTION.format(path=host),
        details={"uid": uid, "volumes": [], "mounts_below": mounts},
        manual=_release_mounts(POD_DIR, mounts),
    )


def scan_pod_dirs(ctx: ScanContext) -> list[Finding]:
    """Orphaned pod directories `<root_dir>/pods/<uid>` (type `POD_DIR`).

    A directory is a finding when the runtime has no sandbox or container of pod `<uid>` and
    the pod source (when read) does not list it; a pod either knows is no finding at all.
    `bytes`: allocated bytes below it on its own filesystem (mounted volumes not counted).
    details: `uid`, `volumes` (host paths of `volumes/*/*`), `mounts_below` (host paths of
    every mount point at or below it). Evidence quotes the kubelet's "orphaned pod <uid>
    found, but volume paths are still present on disk" when volume directories remain.

    Safe only when `ctx.pod_is_gone(uid)`, `<uid>` is spelled like a pod UID
    (`is_pod_uid`), the mount table was read and nothing at or below it is mounted, it is
    neither a symlink nor a mount point itself, and it has not changed for
    `POD_DIR_GRACE_SECONDS` (`pod_dir_setup_reason`); otherwise `unsafe_reason` names the
    mounts, the unreadable mount table, the name, the missing pod source or the unreadable
    runtime.
    """
    pods_host = f"{ctx.root_dir.rstrip('/')}/pods"
    try:
        pods_local = pinned_on_host(ctx.host_root, pods_host).path  # held until removal
        entries = [(e.name, e.path) for e in listdir(pods_local)]
    except OSError:
        return []
    found: list[Finding | None] = [None] * len(entries)

    def each(item: tuple[int, tuple[str, str]], watch: Watch) -> None:
        i, (uid, local) = item
        found[i] = _pod_dir_finding(ctx, pods_host, uid, local)

    # One worker thread for the whole scan while nothing hangs (the per-directory calls run
    # inline in it: `bounded`), not one per call: 10,000 directories cost no 70,000 threads.
    for i, exc in bounded_each(list(enumerate(entries)), each):
        uid, local = entries[i]
        found[i] = _stalled_pod_dir(ctx, pods_host, uid, local, exc)
    findings = [f for f in found if f is not None]
    return _sorted(findings)


# --- 2. pod log directories and dangling legacy links -----------------------------------------


def scan_pod_log_dirs(ctx: ScanContext) -> list[Finding]:
    """Pod log directories of gone pods (type `POD_LOG_DIR`) and dangling
    `/var/log/containers/*.log` symlinks (type `LOG_LINK`).

    A directory `<pod_logs_dir>/<namespace>_<pod>_<uid>` (UID = last `_` field, KUBELET-
    SEMANTICS §c.2) is a finding when pod `<uid>` is unknown (as for pod directories) and is
    safe under the same rule: the pod is gone, `<uid>` is spelled like a pod UID, the mount
    table was read and nothing is mounted at or below it, it is not a symlink. `bytes` are
    allocated bytes; details `uid`, `mounts_below`.

    A legacy link is a finding when it is dangling: its target, resolved under `host_root`
    (`link_dangles`), does not exist. Safe when its name carries no container
    ID (the kubelet removes those unconditionally, §c.4) or when the runtime was listed and
    knows no such container; a link whose container the runtime still has is reported but
    left (`kubegc gc logs` decides on the container's state). details `container_id`.
    """
    findings: list[Finding] = []
    try:
        root_local = LogRoots(ctx.host_root, ctx.pod_logs_dir).real_pod_logs_dir
        dirs = read_pod_log_dirs(root_local, ctx.mounts) if root_local else []
    except OSError:
        dirs = []
    for d in dirs:
        if not ctx.pod_unknown(d.uid):
            continue
        host = f"{ctx.pod_logs_dir.rstrip('/')}/{d.name}"
        facts = _dir_facts(ctx, d.path)
        if facts is None:
            continue
        reasons, mounts = list(facts.reasons), list(facts.mounts)
        if d.mount and not mounts:  # podlogs saw one this module's lookup did not
            reasons.append(f"mounted at or below it: {host_path_of(ctx.host_root, d.mount)}")
            mounts = [host_path_of(ctx.host_root, d.mount)]
        usage = _usage(ctx, facts)
        if usage.stalled:
            reasons.append(_stalled(ctx, usage.stalled))
        safe, why = _unsafe(reasons + _pod_gone_reasons(ctx, d.uid))
        findings.append(
            Finding(
                type=POD_LOG_DIR,
                target=host,
                evidence=_pod_evidence(ctx, d.uid, f"log directory of pod {d.uid}"),
                bytes=usage.bytes,
                safe=safe,
                unsafe_reason=why,
                action=DIR_ACTION.format(path=host),
                details={"uid": d.uid, "mounts_below": mounts},
                manual=_release_mounts(POD_LOG_DIR, mounts),
                changed_ns=usage.changed_ns,
            )
        )
    links_host = ctx.container_logs_dir.rstrip("/")
    try:
        links = dangling_links(pinned_on_host(ctx.host_root, links_host).path, ctx.host_root)
    except OSError:
        links = []
    known = ctx.container_ids | ctx.sandbox_ids
    for name, local in links:
        try:
            blocks = on_disk(os.lstat(local).st_blocks)
        except OSError:
            continue
        cid = container_id_from_link(name)
        host = f"{links_host}/{name}"
        reasons = []
        if not cid or not _HEX_ID.fullmatch(cid):
            evidence = "dangling symlink whose name carries no container ID"
        else:
            evidence = f"dangling symlink of container {cid}"
            if not ctx.runtime_known:
                reasons.append(NO_RUNTIME)
            elif known_id(cid, known):
                reasons.append(
                    f"the runtime still has container {cid}; `kubegc gc logs` removes the link"
                    " once it has exited"
                )
            else:
                evidence += ", which the runtime does not know"
        safe, why = _unsafe(reasons)
        findings.append(
            Finding(
                type=LOG_LINK,
                target=host,
                evidence=evidence,
                bytes=blocks,
                safe=safe,
                unsafe_reason=why,
                action=f"unlink {host} (only while it still dangles)",
                details={"container_id": cid},
            )
        )
    return _sorted(findings)


# --- 3. network namespaces --------------------------------------------------------------------


def netns_users(
    pids: Iterable[int],
    proc_dir: str = "/proc",
    files: Collection[tuple[int, int]] = (),
) -> dict[tuple[int, int], set[int]]:
    """Which processes use which network namespace: `(st_dev, st_ino)` → PIDs.

    A process uses a namespace when one of its threads is in it (`/proc/<pid>/task/<tid>/ns/
    net`, stat'ed: the namespace's nsfs inode) or it holds a file descriptor on it: a
    `/proc/<pid>/fd/<n>` that stats (the open file itself, whatever name it was opened by:
    `/proc/<pid>/ns/net`, a bind mount such as `/run/netns/<name>`, ...) to an nsfs inode, or
    to one of `files` (such as a namespace file's own inode under its mount, see
    `netns_keys`). Processes, threads and descriptors that vanish or cannot be read are
    skipped.
    """
    users: dict[tuple[int, int], set[int]] = defaultdict(set)
    try:
        nsfs_dev = os.stat(f"{proc_dir}/self/ns/net").st_dev
    except OSError:
        nsfs_dev = None
    wanted = set(files)
    for pid in pids:
        base = f"{proc_dir}/{pid}"
        try:
            tids = os.listdir(f"{base}/task")
        except OSError:
            tids = []
        paths = [f"{base}/task/{t}/ns/net" for t in tids] or [f"{base}/ns/net"]
        for p in paths:
            try:
                st = os.stat(p)
            except OSError:
                continue
            users[(st.st_dev, st.st_ino)].add(pid)
        try:
            fds = os.listdir(f"{base}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                st = os.stat(f"{base}/fd/{fd}")  # follows to the open file
            except OSError:
                continue
            key = (st.st_dev, st.st_ino)
            if nsfs_dev is None or st.st_dev == nsfs_dev or key in wanted:
                users[key].add(pid)
    return users


def netns_keys(local: str) -> set[tuple[int, int]]:
    """The `(st_dev, st_ino)` pairs a process holding the namespace file `local` open may
    have: what the path stats to (the namespace's nsfs inode while it is mounted there, the
    plain file otherwise) and the plain file under the mount (the directory entry's inode,
    which a process may have opened before the namespace was bound). Raises `OSError` when
    the file cannot be stat'ed."""
    st = os.lstat(local)
    keys = {(st.st_dev, st.st_ino)}
    parent, name = os.path.split(local)
    with contextlib.suppress(OSError):
        dev = os.stat(parent).st_dev
        with os.scandir(parent) as it:
            for e in it:
                if e.name == name:
                    keys.add((dev, e.inode()))
                    break
    return keys


def holders_of(
    users: dict[tuple[int, int], set[int]], keys: Iterable[tuple[int, int]]
) -> list[int]:
    """The PIDs `netns_users` found for any of `keys`, sorted."""
    return sorted({pid for k in keys for pid in users.get(k, ())})


def _netns_dirs(ctx: ScanContext) -> list[tuple[str, str]]:
    """(host dir, local resolved dir) of each netns directory, the same directory once."""
    out: list[tuple[str, str]] = []
    seen: set[tuple[int, int]] = set()
    for host_dir in ctx.netns_dirs:
        try:
            local = resolve_on_host(ctx.host_root, host_dir)
            st = os.stat(local)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        out.append((host_dir.rstrip("/"), local))
    return out


def scan_netns(
    ctx: ScanContext, *, pids: Callable[[], Iterable[int]] | None = None
) -> list[Finding]:
    """Leaked network namespaces (type `NETNS`): `cni-*` entries of `ctx.netns_dirs` (a
    directory reached twice, as `/var/run` → `/run`, is read once) that no sandbox uses.

    A sandbox uses an entry when one of `ctx.sandbox_netns` resolves to the same path or has
    the same name. Safe only when the runtime was listed and said which namespaces its
    sandboxes use (an empty `sandbox_netns` while sandboxes exist is not an answer: with
    only host-network sandboxes no namespace is ever safe), no process is in it or holds it
    open by any name (`netns_users` with `netns_keys`; needs the host's process table, so
    `host_root` `/`, or `pids` given), and it is at least `SETUP_GRACE_SECONDS` old.
    `pids` supplies the PIDs to check (default: psutil's, when `host_root` is `/`). details:
    `name`, `used_by` (PIDs).
    """
    now = time.time()
    used_real: set[str] = set()
    used_names: set[str] = set()
    for p in ctx.sandbox_netns:
        used_names.add(os.path.basename(p.rstrip("/")))
        with contextlib.suppress(OSError):
            used_real.add(resolve_on_host(ctx.host_root, p))
    candidates: list[tuple[str, str, os.stat_result, set[tuple[int, int]]]] = []
    for host_dir, local_dir in _netns_dirs(ctx):
        try:
            with os.scandir(local_dir) as it:
                names = [e.name for e in it if e.name.startswith(NETNS_PREFIX)]
        except OSError:
            continue
        for name in names:
            local = os.path.join(local_dir, name)
            try:
                st = os.lstat(local)
                keys = netns_keys(local)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and name not in used_names and local not in used_real:
                candidates.append((host_dir, name, st, keys))
    if not candidates:
        return []
    if pids is None and sees_host_processes(ctx.host_root):
        pids = psutil.pids
    wanted = {k for *_, keys in candidates for k in keys}
    users = netns_users(pids(), files=wanted) if pids is not None else None
    findings: list[Finding] = []
    for host_dir, name, st, keys in candidates:
        host = f"{host_dir}/{name}"
        reasons: list[str] = []
        if not ctx.runtime_known:
            reasons.append(NO_RUNTIME)
        elif not ctx.sandbox_netns and ctx.sandbox_ids:
            reasons.append("the runtime did not say which network namespaces its sandboxes use")
        holders: list[int] = []
        if users is None:
            reasons.append(NO_PROCESSES)
        else:
            holders = holders_of(users, keys)
            if holders:
                reasons.append("in use by PID " + ", ".join(map(str, holders)))
        age = _age(st, now)
        if age < SETUP_GRACE_SECONDS:
            reasons.append(f"created {int(age)}s ago: a sandbox may still be being set up")
        safe, why = _unsafe(reasons)
        findings.append(
            Finding(
                type=NETNS,
                target=host,
                evidence=f"network namespace {name} that no sandbox of the runtime uses",
                bytes=None,
                safe=safe,
                unsafe_reason=why,
                action=f"umount {host} && unlink {host}",
                details={"name": name, "used_by": holders},
            )
        )
    return _sorted(findings)


# --- 4. CNI host-local IP reservations --------------------------------------------------------


def is_ip_name(name: str) -> bool:
    """The file name is an IPv4 or IPv6 address (a host-local reservation)."""
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def read_reservation(local: str) -> tuple[str, str]:
    """(container ID, interface name) recorded in a host-local reservation file: the first
    line, and the second when present ("" otherwise). Raises `OSError` when unreadable."""
    with open(local, encoding="utf-8", errors="replace") as f:
        lines = f.read(4096).splitlines()
    cid = lines[0].strip() if lines else ""
    ifname = lines[1].strip() if len(lines) > 1 else ""
    return cid, ifname


def scan_cni(ctx: ScanContext) -> list[Finding]:
    """Leaked host-local IPAM reservations (type `CNI_IP`): files
    `<cni_dir>/networks/<net>/<ip>` whose recorded container ID is no live sandbox: unknown
    to the runtime, or a sandbox of `ctx.notready_sandbox_ids` (such a finding is not safe
    while the runtime has the sandbox: `kubegc gc sandboxes` removes it first). An ID the
    runtime knows as a READY sandbox or as a container is no finding.

    Only files named by an IPv4/IPv6 address count; `lock`, `last_reserved_ip.*` and
    anything else are never findings. details: `network`, `ip`, `id` (recorded), `ifname`,
    `network_leaked` (findings in that network) and `network_reserved` (address files in
    it). Safe only when the runtime was listed, the file records an ID the runtime does not
    know, and it is at least `SETUP_GRACE_SECONDS` old (the runtime reserves the address
    before it lists the new sandbox).
    """
    now = time.time()
    nets_host = f"{ctx.cni_dir.rstrip('/')}/networks"
    try:
        with os.scandir(resolve_on_host(ctx.host_root, nets_host)) as it:
            nets = sorted((e.name, e.path) for e in it if e.is_dir(follow_symlinks=False))
    except OSError:
        return []
    notready = ctx.notready_sandbox_ids
    live = (ctx.sandbox_ids - notready) | ctx.container_ids
    findings: list[Finding] = []
    for net, net_local in nets:
        try:
            with os.scandir(net_local) as it:
                names = sorted(e.name for e in it if is_ip_name(e.name))
        except OSError:
            continue
        leaked: list[Finding] = []
        reserved = 0
        for ip in names:
            local = os.path.join(net_local, ip)
            try:
                st = os.lstat(local)
                if not stat.S_ISREG(st.st_mode):
                    continue
                cid, ifname = read_reservation(local)
            except OSError:
                continue
            reserved += 1
            if known_id(cid, live):
                continue
            dead = next((n for n in sorted(notready) if known_id(cid, (n,))), "")
            reasons: list[str] = []
            if not ctx.runtime_known:
                reasons.append(NO_RUNTIME)
            if dead:
                reasons.append(
                    f"sandbox {dead} is NOTREADY; once `kubegc gc sandboxes` removes it, the "
                    "reservation can go"
                )
            if not cid:
                reasons.append("the reservation records no container ID")
            age = _age(st, now)
            if age < SETUP_GRACE_SECONDS:
                reasons.append(f"reserved {int(age)}s ago: a sandbox may still be being set up")
            safe, why = _unsafe(reasons)
            host = f"{nets_host}/{net}/{ip}"
            holder = (
                f"the NOTREADY sandbox {dead}, which holds no live pod network"
                if dead
                else f"{cid or '(no ID)'}, which is no sandbox or container the runtime knows"
            )
            leaked.append(
                Finding(
                    type=CNI_IP,
                    target=host,
                    evidence=f"{ip} in network {net} is reserved for {holder}",
                    bytes=None,
                    safe=safe,
                    unsafe_reason=why,
                    action=f"unlink {host} (only if it still records {cid or '(no ID)'} and "
                    "the runtime still does not know it)",
                    details={"network": net, "ip": ip, "id": cid, "ifname": ifname},
                    manual=(
                        "kubegc gc sandboxes, then `kubegc residue clean --kind leaked-cni-ip`"
                        if dead
                        else ""
                    ),
                )
            )
        for f in leaked:
            f.details["network_leaked"] = len(leaked)
            f.details["network_reserved"] = reserved
        findings.extend(leaked)
    return _sorted(findings)


def cni_summary(findings: Iterable[Finding]) -> dict[str, tuple[int, int]]:
    """Per network, (leaked, reserved) addresses, from the `CNI_IP` findings of `scan_cni`
    (networks without leaks do not appear). Sorted by network name."""
    out: dict[str, tuple[int, int]] = {}
    for f in findings:
        if f.type == CNI_IP:
            d = f.details
            out[d["network"]] = (int(d["network_leaked"]), int(d["network_reserved"]))
    return dict(sorted(out.items()))


# --- 5. pod cgroups ---------------------------------------------------------------------------


_HEX_ID = re.compile(r"[0-9a-f]{6,64}")  # a CRI container ID, as the link names it


def scan_pod_cgroups(ctx: ScanContext) -> list[Finding]:
    """Orphaned pod cgroups (type `POD_CGROUP`), one finding per pod UID.

    Pod cgroups are found in every mounted hierarchy (`cgroup_hierarchies`: v2, or each v1
    controller), both drivers (`find_pod_cgroups`). A pod is a finding when it is unknown
    (as for pod directories). `target` is its cgroup in the memory (or unified) hierarchy, or
    the first; details: `uid`, `qos`, `paths` (every hierarchy's host path), `processes`
    (the most PIDs any one of them holds with its descendants; None if unreadable). Safe
    only when the pod is gone and no process is in any of them. No cgroup filesystem: [].
    """
    groups: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for layout in cgroup_hierarchies(ctx.host_root):
        try:
            refs = find_pod_cgroups(ctx.host_root, layout)
        except SignalUnavailable:
            continue
        for ref in refs:
            if ctx.pod_unknown(ref.uid):
                groups[ref.uid].append((ref.qos, ref.path))
    findings: list[Finding] = []
    for uid, entries in groups.items():
        paths = sorted({p for _, p in entries})
        counts: list[int | None] = []
        for p in paths:
            try:
                counts.append(count_processes(ctx.host_root, p))
            except SignalUnavailable:
                counts.append(None if os.path.isdir(on_host(ctx.host_root, p)) else 0)
        reasons: list[str] = []
        processes: int | None = max((c for c in counts if c is not None), default=0)
        if any(c is None for c in counts):
            processes = None
            reasons.append("cannot read cgroup.procs")
        elif processes:
            reasons.append(f"{processes} process(es) still in it")
        reasons += _pod_gone_reasons(ctx, uid)
        safe, why = _unsafe(reasons)
        target = next((p for p in paths if p.startswith(MEMORY_V1 + "/")), paths[0])
        findings.append(
            Finding(
                type=POD_CGROUP,
                target=target,
                evidence=_pod_evidence(ctx, uid, f"cgroup of pod {uid}"),
                bytes=None,
                safe=safe,
                unsafe_reason=why,
                action="rmdir (deepest first) " + " ".join(paths),
                details={"uid": uid, "qos": entries[0][0], "paths": paths, "processes": processes},
            )
        )
    return _sorted(findings)


# --- 6. shims ---------------------------------------------------------------------------------


class ProcessInfo(NamedTuple):
    """One process as the shim scan needs it: `create_time` in seconds since the epoch."""

    pid: int
    name: str
    cmdline: tuple[str, ...]
    create_time: float


def host_processes() -> list[ProcessInfo]:
    """Every process psutil can read (those that vanish while read are skipped)."""
    out: list[ProcessInfo] = []
    for p in psutil.process_iter(["pid", "name", "cmdline", "create_time"]):
        info: dict[str, Any] = p.info
        out.append(
            ProcessInfo(
                pid=int(info["pid"]),
                name=str(info.get("name") or ""),
                cmdline=tuple(info.get("cmdline") or ()),
                create_time=float(info.get("create_time") or 0.0),
            )
        )
    return out


SHIM_BOOL_FLAGS = frozenset({"debug", "v"})


def shim_args(cmdline: Iterable[str]) -> dict[str, str]:
    """The Go-style flags of a shim command line (`-id X`, `--id=X`, ...), as a dict without
    dashes (a boolean flag such as `-debug` maps to ""). `id` falls back to the last element
    of `-workdir` (shim v1)."""
    args: dict[str, str] = {}
    items = list(cmdline)[1:]
    i = 0
    while i < len(items):
        a = items[i]
        i += 1
        if not a.startswith("-"):
            continue
        key = a.lstrip("-")
        if "=" in key:
            key, value = key.split("=", 1)
        elif key not in SHIM_BOOL_FLAGS and i < len(items) and not items[i].startswith("-"):
            value = items[i]
            i += 1
        else:
            value = ""
        args.setdefault(key, value)
    if not args.get("id") and args.get("workdir"):
        args["id"] = os.path.basename(args["workdir"].rstrip("/"))
    return args


def _socket(address: str) -> str:
    return address.removeprefix("unix://")


def scan_shims(
    ctx: ScanContext,
    *,
    processes: Callable[[], Iterable[ProcessInfo]] | None = None,
    address: str = "",
) -> list[Finding]:
    """Leaked containerd shims (type `SHIM`, never safe: kubegc never kills processes).

    A `containerd-shim*` process of the CRI namespace (`-namespace k8s.io`) whose `-id` (or
    shim v1 `-workdir` basename) is no sandbox or container the runtime knows. A shim started
    less than `SETUP_GRACE_SECONDS` ago is reported with its age (it may serve a sandbox
    being created). With `address` (the runtime's socket, `unix://` optional) shims of
    another containerd are ignored. Only when the runtime was listed and the host's
    processes are visible (`host_root` `/`, or `processes` given); otherwise []. Target
    `pid:<n>`; `manual` the check (`ctr` against the shim's containerd) and the `kill` an
    operator could run; details `pid`, `id`, `namespace`, `address`, `cmdline`,
    `age_seconds`.
    """
    if not ctx.runtime_known:
        return []
    if processes is None:
        if not sees_host_processes(ctx.host_root):
            return []
        processes = host_processes
    now = time.time()
    known = ctx.sandbox_ids | ctx.container_ids
    findings: list[Finding] = []
    for p in processes():
        exe = os.path.basename(p.cmdline[0]) if p.cmdline else ""
        if not (p.name.startswith("containerd-shim") or exe.startswith("containerd-shim")):
            continue
        args = shim_args(p.cmdline)
        sid = args.get("id", "")
        if not sid or args.get("namespace") != CRI_NAMESPACE:
            continue
        if address and args.get("address") and _socket(args["address"]) != _socket(address):
            continue
        if known_id(sid, known):
            continue
        age = now - p.create_time
        why = NEVER_KILL
        if age < SETUP_GRACE_SECONDS:
            why += f"; started {int(age)}s ago: a sandbox may still be being set up"
        sock = _socket(args.get("address", "") or address)
        ctr = f"ctr --address {sock} -n {CRI_NAMESPACE}" if sock else f"ctr -n {CRI_NAMESPACE}"
        findings.append(
            Finding(
                type=SHIM,
                target=f"pid:{p.pid}",
                evidence=f"containerd shim (PID {p.pid}) for {sid}, which is no sandbox or "
                "container the runtime knows",
                bytes=None,
                safe=False,
                unsafe_reason=why,
                action=NOTHING,
                manual=f"once `{ctr} tasks ls` shows no task {sid}: kill {p.pid}",
                details={
                    "pid": p.pid,
                    "id": sid,
                    "namespace": args.get("namespace", ""),
                    "address": args.get("address", ""),
                    "cmdline": " ".join(p.cmdline),
                    "age_seconds": int(age),
                },
            )
        )
    return _sorted(findings)

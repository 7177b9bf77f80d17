"""`kubegc residue clean`: act on safe findings, re-checking each right before acting.

Rules per finding type (only findings marked `safe` are ever acted on):

- directories (`POD_DIR`, `POD_LOG_DIR`): the name must be a pod UID and the pod must still
  be gone (a `POD_DIR` must also still be unchanged for the setup grace period); the mount
  table is read again — it must be readable (else anything may be mounted) and nothing may be
  mounted at or below the directory; it must not have become a symlink. Removal
  (`remove_tree`) opens every directory without following symlinks (a symlink inside is
  unlinked, its target untouched) and never enters a directory on another device or named by
  the mount table; what it had to leave is reported.
- `LOG_LINK`: unlinked only while it is still a dangling symlink, its target resolved under
  the host root (and, when its name carries a container ID, only while the runtime still
  does not know that ID).
- `NETNS`: only while no process is in the namespace or holds it open (by any name: the
  namespace's nsfs inode, or the file under its mount); a plain `umount`
  (not lazy, not following a symlink; "not mounted" is fine), then `unlink`.
- `CNI_IP`: under the network's host-local `lock` (the plugin's own flock), the file must
  still record the planned ID and the runtime must still not know that ID; then `unlink`.
- `POD_CGROUP`: the pod must still be gone and no `cgroup.procs` below it, in any hierarchy,
  may list a process; then `rmdir` of every cgroup directory deepest first.
- container log rotation (`core.residue.LOG_ROTATION_TYPES`), each in its container log
  directory opened from podLogsDir as held since the scan (`host.logrotation`: never through
  a symlink, never into a mount), on the file only while it is the file scanned (device,
  inode, and, for a file removed, its modification time): `ROTATED_PAST_COUNT` and
  `ROTATION_LEFTOVER` (for an uncompressed file, only while its `.gz` is still the file
  judged at the scan — device, inode, size, modification time — and unchanged for the grace
  period) are unlinked; `EARLIER_INSTANCE_LOG` only while the runtime (asked again) has no container
  whose live log it is; `LOG_OVER_SIZE` is rotated as the kubelet rotates it — renamed
  `<n>.log.<YYYYMMDD-hhmmss>`, then CRI `ReopenContainerLog`, renamed back when that fails —
  only while its container (asked again) is running with that log path, never truncated or
  removed; `STALE_LOG_LINK` is unlinked only while it is a symlink and the runtime still does
  not know its container.
- `SHIM` (kubegc never kills processes) and the runtime's finding types are never acted on.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import stat
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from kubegc_cli.core.plan import GONE, Result
from kubegc_cli.core.podlogs import NOT_A_POD, is_pod_uid, pod_uid_from_dir
from kubegc_cli.core.residue import (
    CNI_IP,
    EARLIER_INSTANCE_LOG,
    LOG_LINK,
    LOG_OVER_SIZE,
    NETNS,
    POD_CGROUP,
    POD_DIR,
    POD_LOG_DIR,
    ROTATED_PAST_COUNT,
    ROTATION_LEFTOVER,
    STALE_LOG_LINK,
    Finding,
)
from kubegc_cli.node.execute.actions import Executor
from kubegc_cli.node.host.bounded import Stalled
from kubegc_cli.node.host.logrotation import rotate_live_log, unlink_log_file
from kubegc_cli.node.host.logs import LogRoots, host_path_of, pinned_on_host, resolve_on_host
from kubegc_cli.node.host.mounts import MountTable
from kubegc_cli.node.host.podlogs import LogDirChanged, remove_dangling_link, remove_link
from kubegc_cli.node.host.residue import (
    CNI_BOOKKEEPING,
    NETNS_PREFIX,
    NO_PROCESSES,
    holders_of,
    netns_keys,
    netns_users,
    pod_dir_setup_reason,
    read_reservation,
    sees_host_processes,
)
from kubegc_cli.node.host.tree import Refused, remove_tree

UMOUNT_NOFOLLOW = 8  # <sys/mount.h>: do not follow a symlink at the target
LOCK_WAIT_SECONDS = 5.0


# --- network namespaces -----------------------------------------------------------------------

_libc: ctypes.CDLL | None = None


def umount(local: str) -> bool:
    """Unmount whatever is mounted at `local` (a plain umount2 with `UMOUNT_NOFOLLOW`, never
    lazy), repeating for stacked mounts. Returns False when nothing was mounted there
    (EINVAL). Raises `OSError` otherwise (ENOENT when the path is gone, EBUSY, ...)."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    unmounted = False
    for _ in range(16):
        if _libc.umount2(os.fsencode(local), UMOUNT_NOFOLLOW) == 0:
            unmounted = True
            continue
        err = ctypes.get_errno()
        if err == errno.EINVAL:
            return unmounted
        raise OSError(err, os.strerror(err), local)
    raise OSError(errno.EBUSY, "still mounted after 16 unmounts", local)


# --- the executor -----------------------------------------------------------------------------


@dataclass
class ResidueCleaner(Executor[Any]):
    """Acts on safe residue findings (see the module docstring for the rules per type).

    (Typed `Executor[Any]`: `Finding` derives `rule` and `reason`, which the `Action`
    protocol declares as plain attributes; every action it runs is a `Finding`.)

    `client` is unused (the re-checks that need the runtime are the callables); `host_root`
    is the host's `/` as this process sees it. `still_unknown(id)` answers, at action time,
    whether no sandbox or container has that ID (CNI reservations, container log links);
    `pod_still_gone(uid)` whether neither the pod source nor the runtime knows that pod
    (directories, cgroups). Either missing → the findings that need it are skipped. `pids`
    lists the host's processes (default psutil's, only when `host_root` is `/`);
    `read_mounts` reads the mount table before each directory removal.

    For container logs: `pod_logs_dir` (host path) is podLogsDir as scanned;
    `instance_gone(log)` answers whether no container of the runtime has the live log `log`
    (a host path) now; `running_with_log(id, log)` whether container `id` is running with
    the log path `log` now; `reopen(id)` is CRI `ReopenContainerLog` (raising when it
    fails). Either missing → the findings that need it are skipped.

    Results: `removed` (with `bytes_freed`), `skipped` (no longer qualifies, gone, or not
    safe; the reason in `error`), `failed` (an error, or a directory only partly removed
    because part of it was on another filesystem or could not be removed: `error` names
    what was left, `bytes_freed` what was freed).
    """

    client: Any = None
    host_root: Path = Path("/")
    still_unknown: Callable[[str], bool] | None = None
    pod_still_gone: Callable[[str], bool] | None = None
    pids: Callable[[], Iterable[int]] | None = None
    read_mounts: Callable[[], MountTable] = MountTable.read
    pod_logs_dir: str = ""
    instance_gone: Callable[[str], bool] | None = None
    running_with_log: Callable[[str, str], bool] | None = None
    reopen: Callable[[str], None] | None = None

    def _act(self, a: Finding) -> None:
        if not a.safe:
            a.result, a.error = Result.SKIPPED, f"not safe to clean: {a.unsafe_reason}"
            return
        handlers: dict[str, Callable[[Finding], None]] = {
            POD_DIR: self._directory,
            POD_LOG_DIR: self._directory,
            LOG_LINK: self._log_link,
            NETNS: self._netns,
            CNI_IP: self._cni_ip,
            POD_CGROUP: self._cgroup,
            ROTATED_PAST_COUNT: self._log_file,
            ROTATION_LEFTOVER: self._log_file,
            EARLIER_INSTANCE_LOG: self._log_file,
            LOG_OVER_SIZE: self._rotate,
            STALE_LOG_LINK: self._stale_link,
        }
        handler = handlers.get(a.type)
        if handler is None:
            a.result, a.error = Result.SKIPPED, f"residue clean never acts on {a.type}"
            return
        try:
            handler(a)
        except Refused as exc:
            a.result, a.error = Result.SKIPPED, str(exc)
        except Stalled as exc:
            a.result, a.error = Result.FAILED, f"{exc.filename}: {exc.strerror}"
        except FileNotFoundError:
            a.result, a.error = Result.SKIPPED, GONE
        except OSError as exc:
            a.result, a.error = Result.FAILED, f"cannot remove {a.target}: {exc.strerror or exc}"

    # -- re-checks --

    def _pod_gone(self, uid: str) -> None:
        if not uid:
            raise Refused("the finding names no pod UID")
        if self.pod_still_gone is None:
            raise Refused(f"cannot re-check that pod {uid} is gone")
        if not self.pod_still_gone(uid):
            raise Refused(f"pod {uid} is known again")

    def _id_unknown(self, object_id: str) -> None:
        if self.still_unknown is None:
            raise Refused(f"cannot re-check that the runtime does not know {object_id}")
        if not self.still_unknown(object_id):
            raise Refused(f"the runtime knows {object_id} now")

    def _entry(self, host_path: str) -> str:
        """The local path of `host_path`: its directory resolved on the host, its last
        component as written (so a symlink there is seen, never followed)."""
        parent, name = os.path.split(host_path.rstrip("/"))
        return os.path.join(resolve_on_host(self.host_root, parent), name)

    # -- per type --

    def _directory(self, a: Finding) -> None:
        uid = str(a.details.get("uid", ""))
        name = os.path.basename(a.target.rstrip("/"))
        named = name == uid if a.type == POD_DIR else pod_uid_from_dir(name) == uid
        if not named:
            raise Refused(f"{a.target} does not name pod {uid}; left")
        if not is_pod_uid(uid):
            raise Refused(f"{a.target} is {NOT_A_POD}; left")
        self._pod_gone(uid)
        local = self._entry(a.target)
        st = os.lstat(local)
        if stat.S_ISLNK(st.st_mode):
            raise Refused(f"{a.target} became a symlink; left")
        recent = pod_dir_setup_reason(local, time.time()) if a.type == POD_DIR else ""
        if recent:
            raise Refused(f"{recent}; left")
        real = resolve_on_host(self.host_root, a.target)
        root = os.path.realpath(str(self.host_root))
        if root != "/" and not real.startswith(root.rstrip("/") + "/"):
            raise Refused(f"{a.target} resolves outside --host-root ({real}); left")
        mounts = self.read_mounts()
        if not mounts.known:
            raise Refused(f"{mounts.error}; left")
        points = sorted(set(mounts.at_or_below(local)) | set(mounts.at_or_below(real)))
        if points:
            shown = ", ".join(host_path_of(self.host_root, p) for p in points)
            raise Refused(f"mounted at or below it now: {shown}; left")
        # its directory as the scan pinned it: nothing put on that path since is followed
        parent = pinned_on_host(self.host_root, os.path.dirname(a.target.rstrip("/")))
        done = remove_tree(os.path.join(parent.path, name), mounts, parent)
        a.bytes_freed = done.bytes_freed
        if done.complete:
            a.result = Result.REMOVED
            return
        a.result, a.error = Result.FAILED, done.problem(lambda p: host_path_of(self.host_root, p))

    def _log_link(self, a: Finding) -> None:
        cid = str(a.details.get("container_id", ""))
        if cid:
            self._id_unknown(cid)
        try:
            parent = pinned_on_host(self.host_root, os.path.dirname(a.target.rstrip("/")))
            local = os.path.join(parent.path, os.path.basename(a.target.rstrip("/")))
            remove_dangling_link(local, self.host_root, parent)
        except LogDirChanged as exc:
            raise Refused(str(exc)) from None
        a.result = Result.REMOVED

    def _log_roots(self, a: Finding) -> LogRoots:
        """podLogsDir as scanned; `Refused` when the finding's directory is not below it."""
        if not self.pod_logs_dir:
            raise Refused("no podLogsDir to act in")
        roots = LogRoots(self.host_root, self.pod_logs_dir)
        if not str(a.details.get("container_log_dir", "")).startswith(roots.layout_prefix):
            raise Refused(f"{a.target} is not below podLogsDir {self.pod_logs_dir}; left")
        return roots

    def _log_file(self, a: Finding) -> None:
        roots = self._log_roots(a)
        d = a.details
        log = str(d.get("log", ""))
        if a.type == EARLIER_INSTANCE_LOG:
            if self.instance_gone is None:
                raise Refused(f"cannot re-check that the runtime has no container of {log}")
            if not self.instance_gone(log):
                raise Refused(f"the runtime has a container whose log is {log} now; left")
        twin = ""
        if a.type == ROTATION_LEFTOVER and d.get("judged") != d.get("name"):
            twin = str(d.get("judged", ""))
        freed, _ = unlink_log_file(roots, self.read_mounts(), d, twin=twin)
        a.bytes_freed = freed
        a.result = Result.REMOVED

    def _rotate(self, a: Finding) -> None:
        roots = self._log_roots(a)
        d = a.details
        cid, log = str(d.get("container_id", "")), str(d.get("log", ""))
        if self.running_with_log is None or self.reopen is None:
            raise Refused(f"cannot re-check or reopen container {cid}")
        if not self.running_with_log(cid, log):
            raise Refused(f"container {cid} is no longer running with the log {log}; left")
        done = rotate_live_log(roots, self.read_mounts(), d, self.reopen)
        rotated, name = os.path.basename(done.rotated), os.path.basename(log)
        a.log_note = f"rotated to {rotated} ({done.size} bytes); the runtime reopened {name}"
        a.result = Result.REMOVED

    def _stale_link(self, a: Finding) -> None:
        self._id_unknown(str(a.details.get("container_id", "")))
        try:
            parent = pinned_on_host(self.host_root, os.path.dirname(a.target.rstrip("/")))
            local = os.path.join(parent.path, os.path.basename(a.target.rstrip("/")))
            remove_link(local, parent)
        except LogDirChanged as exc:
            raise Refused(str(exc)) from None
        a.result = Result.REMOVED

    def _netns(self, a: Finding) -> None:
        local = self._entry(a.target)
        if not os.path.basename(local).startswith(NETNS_PREFIX):
            raise Refused(f"{a.target} is not a {NETNS_PREFIX}* network namespace; left")
        pids = self.pids
        if pids is None:
            if not sees_host_processes(self.host_root):
                raise Refused(NO_PROCESSES)
            pids = psutil.pids
        st = os.lstat(local)
        if not stat.S_ISREG(st.st_mode):
            raise Refused(f"{a.target} is no longer a namespace file; left")
        keys = netns_keys(local)
        holders = holders_of(netns_users(pids(), files=keys), keys)
        if holders:
            raise Refused("in use by PID " + ", ".join(map(str, holders)) + " now")
        umount(local)
        os.unlink(local)
        a.result = Result.REMOVED

    def _cni_ip(self, a: Finding) -> None:
        planned = str(a.details.get("id", ""))
        if not planned:
            raise Refused("the reservation records no container ID")
        local = self._entry(a.target)
        if os.path.basename(local).startswith(CNI_BOOKKEEPING):
            raise Refused(f"{a.target} is IPAM bookkeeping; left")
        lock_fd = _lock(os.path.join(os.path.dirname(local), "lock"))
        try:
            st = os.lstat(local)
            if not stat.S_ISREG(st.st_mode):
                raise Refused(f"{a.target} is no longer a regular file; left")
            now_id, _ = read_reservation(local)
            if now_id != planned:
                raise Refused(f"now reserved for {now_id or '(no ID)'}, not {planned}; left")
            self._id_unknown(planned)
            os.unlink(local)
        finally:
            if lock_fd is not None:
                os.close(lock_fd)
        a.result = Result.REMOVED

    def _cgroup(self, a: Finding) -> None:
        uid = str(a.details.get("uid", ""))
        paths = [str(p) for p in a.details.get("paths", [a.target])]
        for p in paths:
            name = os.path.basename(p.rstrip("/"))
            if not (name.endswith(uid) or name.endswith(uid.replace("-", "_") + ".slice")):
                raise Refused(f"{p} is not the cgroup of pod {uid}; left")
        if not is_pod_uid(uid):
            raise Refused(f"{uid} is {NOT_A_POD}; left")
        self._pod_gone(uid)
        plans: list[list[str]] = []
        for p in paths:
            local = resolve_on_host(self.host_root, p)
            if not os.path.isdir(local):
                continue
            dirs = _cgroup_dirs(local)
            for d in dirs:
                procs = os.path.join(d, "cgroup.procs")
                try:
                    with open(procs, encoding="utf-8", errors="replace") as f:
                        busy = f.read().split()
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    raise Refused(f"cannot read {procs}: {exc.strerror or exc}") from None
                if busy:
                    shown = host_path_of(self.host_root, d)
                    raise Refused(f"{len(busy)} process(es) in {shown} now; left")
            plans.append(dirs)
        if not plans:
            raise Refused(GONE)
        for dirs in plans:
            for d in dirs:
                try:
                    os.rmdir(d)
                except FileNotFoundError:
                    continue
        a.result = Result.REMOVED


def _cgroup_dirs(local: str) -> list[str]:
    """The cgroup directory `local` and its descendants, deepest first (no symlinks)."""
    found: list[str] = []
    for top, dirs, _files in os.walk(local, followlinks=False):
        found.extend(os.path.join(top, d) for d in dirs)
    found.sort(key=lambda p: p.count("/"), reverse=True)
    return [*found, local]


def _lock(path: str) -> int | None:
    """Take the host-local IPAM lock at `path` (flock, exclusive) within `LOCK_WAIT_SECONDS`.

    Returns the open descriptor (closing it releases the lock), or None when there is no lock
    file (no plugin has run; nothing to serialise with). Raises `Refused` when it stays held.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise Refused(f"the IPAM lock {path} stays held; left") from None
            time.sleep(0.05)
        except OSError:
            os.close(fd)
            raise

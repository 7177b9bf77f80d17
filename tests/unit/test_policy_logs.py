"""The kubelet's pod log GC rules (kuberuntime_gc.go, legacy.go) and host side, on fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kubegc_cli.core.model import LABEL_POD_UID, Sandbox, SandboxState
from kubegc_cli.core.plan import LogAction, Plan, Result
from kubegc_cli.core.podlogs import (
    NOT_A_POD,
    LegacyLink,
    PodLogDir,
    container_id_from_link,
    pod_uid_from_dir,
)
from kubegc_cli.core.pods import (
    NO_POD_SOURCE,
    PodInfo,
    against_runtime,
    inventory_from_podlist,
    inventory_of,
)
from kubegc_cli.node.execute.actions import LogRemover
from kubegc_cli.node.host.logs import LogRoots
from kubegc_cli.node.host.mounts import MountTable
from kubegc_cli.node.host.podlogs import (
    LogDirChanged,
    dangling_links,
    links_into,
    read_pod_log_dirs,
    remove_dangling_link,
    remove_pod_log_dir,
)
from kubegc_cli.node.host.tree import Pin
from kubegc_cli.policy.logs import link_state, plan_logs
from tests.unit.factories import NOW, ctr, disk
from tests.unit.memorycri import MemoryCri

GONE = "9a1b2c3d-0000-1111-2222-333344445555"
LIVE = "11111111-2222-3333-4444-555555555555"


@pytest.mark.parametrize(
    ("name", "uid"),
    [(f"kube-system_coredns-7d8f_{GONE}", GONE), (GONE, GONE), ("ns_pod_with_x_u1", "u1")],
)
def test_uid_is_the_last_field(name: str, uid: str) -> None:
    assert pod_uid_from_dir(name) == uid


@pytest.mark.parametrize(
    ("name", "cid"),
    [
        ("web_default_app-0123456789abcdef.log", "0123456789abcdef"),
        ("web_default_app-abcdef.log", "abcdef"),
        ("web_default_app-abcde.log", ""),  # fewer than 6 characters
        ("web_default_app-0123456789abcdef.txt", ""),
    ],
)
def test_legacy_link_id_parse(name: str, cid: str) -> None:
    assert container_id_from_link(name) == cid


def tree(root: Path) -> Path:
    logs = root / "var/log/pods"
    for name in (f"kube-system_coredns-7d8f_{GONE}", f"default_web_{LIVE}"):
        (logs / name / "app").mkdir(parents=True)
        (logs / name / "app/0.log").write_bytes(b"x" * 100)
    return logs


def _plan_live_pod_only(logs: Path) -> Plan[LogAction]:
    """The log plan for the directories in `logs` when only pod LIVE exists."""
    dirs = read_pod_log_dirs(str(logs), MountTable(frozenset()))
    pods = inventory_of([PodInfo(LIVE, "default", "web")])
    return plan_logs(
        dirs, [], [], pods, NOW, pod_logs_dir="/var/log/pods",
        container_logs_dir="/var/log/containers",
    )  # fmt: skip


def test_deleted_pods_dir_goes_live_one_stays(tmp_path: Path) -> None:
    logs = tree(tmp_path)
    plan = _plan_live_pod_only(logs)
    dirs = read_pod_log_dirs(str(logs), MountTable(frozenset()))
    gone = logs / f"kube-system_coredns-7d8f_{GONE}"
    on_disk = disk(gone, gone / "app", gone / "app/0.log")  # every inode's blocks, as du
    assert [(a.kind, a.path, a.rule, a.bytes) for a in plan.actions] == [
        ("pod-log-dir", f"/var/log/pods/kube-system_coredns-7d8f_{GONE}", "deleted-pod", on_disk)
    ]
    none = plan_logs(
        dirs, [], [], NO_POD_SOURCE, NOW, pod_logs_dir="/var/log/pods",
        container_logs_dir="/var/log/containers",
    )  # fmt: skip
    assert none.actions == [] and any("No pod source" in n for n in none.notes)


def test_dir_of_a_pod_with_containers_or_a_mount_is_kept(tmp_path: Path) -> None:
    logs = tree(tmp_path)
    real = os.path.realpath(logs / f"kube-system_coredns-7d8f_{GONE}")
    mounts = MountTable(frozenset({real + "/app/cache"}))
    dirs = read_pod_log_dirs(str(logs), mounts)
    pods = inventory_of([PodInfo(LIVE, "default", "web")])
    plan = plan_logs(
        dirs, [], [], pods, NOW, pod_logs_dir="/var/log/pods",
        container_logs_dir="/var/log/containers",
    )  # fmt: skip
    assert plan.actions == []
    assert [k.rule for k in plan.kept] == ["mount-point"]
    dirs2 = read_pod_log_dirs(str(logs), MountTable(frozenset()))
    plan2 = plan_logs(
        dirs2, [], [ctr("c", uid=GONE)], pods, NOW, pod_logs_dir="/var/log/pods",
        container_logs_dir="/var/log/containers",
    )  # fmt: skip
    assert [k.rule for k in plan2.kept] == ["has-containers"]


def test_unreadable_mount_table_keeps_every_pod_log_dir(tmp_path: Path) -> None:
    """F1 for gc logs: with a mount table that could not be read no pod log directory is
    planned (kept, `mount-point`, the reason says why) and removal refuses."""
    logs = tree(tmp_path)
    unknown = MountTable.read(tmp_path / "no-proc/self/mountinfo")
    dirs = read_pod_log_dirs(str(logs), unknown)
    pods = inventory_of([PodInfo(LIVE, "default", "web")])
    plan = plan_logs(
        dirs, [], [], pods, NOW, pod_logs_dir="/var/log/pods",
        container_logs_dir="/var/log/containers",
    )  # fmt: skip
    assert plan.actions == []
    (kept,) = plan.kept
    assert kept.rule == "mount-point" and "cannot read the mount table" in kept.reason
    assert any("No pod log directory is removed" in n for n in plan.notes)
    d = logs / f"kube-system_coredns-7d8f_{GONE}"
    with pytest.raises(LogDirChanged, match="cannot read the mount table"):
        remove_pod_log_dir(str(d), unknown, Pin.open(str(logs)))
    assert (d / "app/0.log").exists()


def test_remove_refuses_a_dir_that_became_a_mount(tmp_path: Path) -> None:
    logs = tree(tmp_path)
    d = logs / f"kube-system_coredns-7d8f_{GONE}"
    with pytest.raises(LogDirChanged):
        remove_pod_log_dir(
            str(d), MountTable(frozenset({os.path.realpath(d) + "/app"})), Pin.open(str(logs))
        )
    assert (d / "app/0.log").exists()
    assert (
        remove_pod_log_dir(str(d), MountTable(frozenset()), Pin.open(str(logs))).size_freed == 100
    )
    assert not d.exists()


def test_symlinked_pod_dir_removes_only_the_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.log").write_text("keep")
    logs = tmp_path / "var/log/pods"
    logs.mkdir(parents=True)
    (logs / f"ns_p_{GONE}").symlink_to(outside)
    (d,) = read_pod_log_dirs(str(logs), MountTable(frozenset()))
    assert d.is_symlink and d.bytes == 0
    assert remove_pod_log_dir(d.path, MountTable(frozenset()), Pin.open(str(logs))).complete
    assert (outside / "precious.log").read_text() == "keep"


def test_dangling_links(tmp_path: Path) -> None:
    links = tmp_path / "var/log/containers"
    links.mkdir(parents=True)
    target = tmp_path / "real.log"
    target.write_text("x")
    (links / "a_ns_c-aaaaaaaaaaaa.log").symlink_to(tmp_path / "missing.log")  # gone container
    (links / "b_ns_c-bbbbbbbbbbbb.log").symlink_to(tmp_path / "missing.log")  # running one
    (links / "c_ns_c-cccccccccccc.log").symlink_to(tmp_path / "missing.log")  # exited one
    (links / "d_ns_c-x.log").symlink_to(tmp_path / "missing.log")  # unparsable
    (links / "e_ns_c-eeeeeeeeeeee.log").symlink_to(target)  # not dangling
    found = dangling_links(str(links))
    assert [n for n, _ in found] == [
        "a_ns_c-aaaaaaaaaaaa.log", "b_ns_c-bbbbbbbbbbbb.log", "c_ns_c-cccccccccccc.log",
        "d_ns_c-x.log",
    ]  # fmt: skip
    containers = [
        ctr("bbbbbbbbbbbb" + "0" * 52, state="RUNNING"),
        ctr("cccccccccccc" + "0" * 52, state="EXITED"),
    ]
    lks = [
        LegacyLink(
            n, p, container_id_from_link(n), link_state(container_id_from_link(n), containers)
        )
        for n, p in found
    ]
    plan = plan_logs(
        [], lks, containers, NO_POD_SOURCE, NOW, pod_logs_dir="/var/log/pods",
        container_logs_dir="/var/log/containers",
    )  # fmt: skip
    assert {a.path.rsplit("/", 1)[1]: a.rule for a in plan.actions} == {
        "a_ns_c-aaaaaaaaaaaa.log": "container-gone",
        "c_ns_c-cccccccccccc.log": "container-exited",
        "d_ns_c-x.log": "unparsable-link",
    }
    assert [(k.path.rsplit("/", 1)[1], k.rule) for k in plan.kept] == [
        ("b_ns_c-bbbbbbbbbbbb.log", "container-not-exited")
    ]


def test_dangling_links_resolve_under_the_host_root(tmp_path: Path) -> None:
    """F2 for gc logs: under --host-root a link's target is looked up on the host, never on
    this machine's `/`; removal re-checks the same way (LogRemover with the host root)."""
    from kubegc_cli.core.plan import LogAction, Result

    host = tmp_path / "host"
    live = f"/var/log/pods/default_web_{LIVE}/nginx/0.log"
    (host / live.lstrip("/")).parent.mkdir(parents=True)
    (host / live.lstrip("/")).write_text("serving\n")
    links = host / "var/log/containers"
    links.mkdir(parents=True)
    (links / "web_default_nginx-aaaaaaaaaaaa.log").symlink_to(live)
    (links / "web_default_etc-bbbbbbbbbbbb.log").symlink_to("/etc/hostname")
    (links / "web_default_rel-cccccccccccc.log").symlink_to(f"../pods/default_web_{LIVE}")
    (links / "web_default_esc-dddddddddddd.log").symlink_to("../../../../../../../etc/hostname")
    (links / "web_default_loop-eeeeeeeeeeee.log").symlink_to("web_default_loop-eeeeeeeeeeee.log")
    found = dangling_links(str(links), host)
    assert [n for n, _ in found] == [
        "web_default_esc-dddddddddddd.log",
        "web_default_etc-bbbbbbbbbbbb.log",
        "web_default_loop-eeeeeeeeeeee.log",
    ]
    assert remove_dangling_link_refuses(str(links / "web_default_nginx-aaaaaaaaaaaa.log"), host)

    def action(name: str) -> LogAction:
        return LogAction(
            "log-symlink", f"/var/log/containers/{name}", str(links / name), "", "r", "why"
        )

    keep = action("web_default_nginx-aaaaaaaaaaaa.log")
    go = action("web_default_etc-bbbbbbbbbbbb.log")
    roots = LogRoots(host, "/var/log/pods")
    remover = LogRemover(None, concurrency=1, mounts=MountTable.read(), host_root=host, roots=roots)  # type: ignore[arg-type]
    remover.run([keep, go])  # links need no runtime: the client is never asked
    assert keep.result is Result.SKIPPED and "no longer a dangling symlink" in keep.error
    assert go.result is Result.REMOVED
    assert (links / "web_default_nginx-aaaaaaaaaaaa.log").is_symlink()
    assert not os.path.lexists(links / "web_default_etc-bbbbbbbbbbbb.log")


def remove_dangling_link_refuses(local: str, host: Path) -> bool:
    try:
        remove_dangling_link(local, host, Pin.open(os.path.dirname(local)))
    except LogDirChanged:
        return os.path.islink(local)
    return False


def test_scope_applies_to_dirs_and_links(tmp_path: Path) -> None:
    from kubegc_cli.policy.scope import Scope

    logs = tree(tmp_path)
    (logs / "other_x_77777777-7777-7777-7777-777777777777").mkdir()
    dirs = read_pod_log_dirs(str(logs), MountTable(frozenset()))
    links = [LegacyLink("pod_kube-system_c-aaaaaaaaaaaa.log", "/x", "aaaaaaaaaaaa", ""),
             LegacyLink("pod_other_c-bbbbbbbbbbbb.log", "/y", "bbbbbbbbbbbb", "")]  # fmt: skip
    pods = inventory_of([PodInfo(LIVE, "default", "web")])
    plan = plan_logs(
        dirs, links, [], pods, NOW, pod_logs_dir="/var/log/pods",
        container_logs_dir="/var/log/containers", scope=Scope(namespaces=frozenset({"other"})),
    )  # fmt: skip
    assert sorted(a.path.rsplit("/", 1)[1] for a in plan.actions) == [
        "other_x_77777777-7777-7777-7777-777777777777",
        "pod_other_c-bbbbbbbbbbbb.log",
    ]


@pytest.mark.parametrize(
    ("name", "planned"),
    [
        (f"ns_p_{GONE}", True),  # a pod from the API: a dashed UUID
        (GONE, True),  # the legacy layout: the name is the UID
        ("log", False),  # /var/log/pods -> .. would list /var/log's siblings
        ("lib", False),
        ("ns_p_uid-p", False),
        ("ns_p_" + GONE.upper(), False),
        (f"ns_p_{GONE}x", False),
    ],
)
def test_only_directories_named_by_a_pod_uid_are_removed(
    tmp_path: Path, name: str, planned: bool
) -> None:
    """The kubelet removes any directory whose last `_` field is not a known pod; kubegc only
    one whose UID is spelled as the kubelet spells pod UIDs (others are kept, saying why)."""
    logs = tmp_path / "var/log/pods"
    (logs / name).mkdir(parents=True)
    plan = _plan_live_pod_only(logs)
    assert [a.path for a in plan.actions] == ([f"/var/log/pods/{name}"] if planned else [])
    if not planned:
        assert [(a.rule, a.reason) for a in plan.kept] == [("not-a-pod-uid", NOT_A_POD)]


def test_a_static_pods_directory_is_never_planned() -> None:
    """A static pod's UID (32 hex) is not in the API: whether a mirror pod names it or not, its
    log directory is not a deleted pod's (kubegc cannot see the kubelet's manifests)."""
    static = "0123456789abcdef" * 2
    mirror = {
        "metadata": {
            "uid": LIVE, "namespace": "kube-system", "name": "etcd-n1",
            "annotations": {"kubernetes.io/config.mirror": static},
        }
    }  # fmt: skip
    other = "fedcba9876543210" * 2
    for source in ([mirror], []):
        pods = inventory_from_podlist({"kind": "PodList", "items": source}, source="t")
        for uid in (static, other):
            d = PodLogDir(
                f"kube-system_etcd-n1_{uid}", f"/l/kube-system_etcd-n1_{uid}", uid, 9, False
            )
            plan = plan_logs(
                [d], [], [], pods, NOW, pod_logs_dir="/var/log/pods",
                container_logs_dir="/var/log/containers",
            )  # fmt: skip
            assert plan.actions == [], (source, uid)
    gone = PodLogDir(f"ns_p_{GONE}", f"/l/ns_p_{GONE}", GONE, 9, False)
    plan = plan_logs(
        [gone], [], [], pods, NOW, pod_logs_dir="/var/log/pods",
        container_logs_dir="/var/log/containers",
    )  # fmt: skip
    assert [a.pod_uid for a in plan.actions] == [GONE]  # (the same source: a dashed UID is gone)


def test_links_into_a_removed_pod_log_dir_go_after_it(tmp_path: Path) -> None:
    """The kubelet removes a deleted pod's legacy links with its log directory: kubegc plans
    the links into a directory it removes (absolute or relative targets), after it, so a
    second run finds nothing; links into a directory that stays are not touched."""
    gone_dir = f"/var/log/pods/ns_gone_{GONE}"
    live_dir = f"/var/log/pods/default_web_{LIVE}"
    for d in (gone_dir, live_dir):
        (tmp_path / d.lstrip("/") / "app").mkdir(parents=True)
        (tmp_path / d.lstrip("/") / "app/0.log").write_text("x")
    links = tmp_path / "var/log/containers"
    links.mkdir(parents=True)
    (links / "gone_ns_app-aaaaaaaaaaaa.log").symlink_to(f"{gone_dir}/app/0.log")
    (links / "gone_ns_app-bbbbbbbbbbbb.log").symlink_to(f"../pods/ns_gone_{GONE}/app/0.log")
    (links / "web_default_app-cccccccccccc.log").symlink_to(f"{live_dir}/app/0.log")
    (links / "other_ns_app-dddddddddddd.log").symlink_to(f"{gone_dir}x/app/0.log")
    pod_dirs = {gone_dir, live_dir}
    found = links_into(str(links), "/var/log/containers", pod_dirs)
    assert [(n, into) for n, _, into in found] == [
        ("gone_ns_app-aaaaaaaaaaaa.log", gone_dir),
        ("gone_ns_app-bbbbbbbbbbbb.log", gone_dir),
        ("web_default_app-cccccccccccc.log", live_dir),
    ]
    legacy = [LegacyLink(n, p, container_id_from_link(n), "", into) for n, p, into in found]
    dirs = read_pod_log_dirs(str(tmp_path / "var/log/pods"), MountTable(frozenset()))
    plan = plan_logs(
        dirs, legacy, [], inventory_of([PodInfo(LIVE, "default", "web")]), NOW,
        pod_logs_dir="/var/log/pods", container_logs_dir="/var/log/containers",
    )  # fmt: skip
    assert [(a.kind, a.path) for a in plan.actions] == [
        ("pod-log-dir", gone_dir),
        ("log-symlink", "/var/log/containers/gone_ns_app-aaaaaaaaaaaa.log"),
        ("log-symlink", "/var/log/containers/gone_ns_app-bbbbbbbbbbbb.log"),
    ]
    assert all(f"its log is in {gone_dir}, removed first" in a.reason for a in plan.actions[1:])


def _sandbox(uid: str, state: str) -> Sandbox:
    return Sandbox(
        id=f"sb-{uid}", name="web", namespace="default", uid=uid, attempt=0,
        state=SandboxState(state), created_at=0, labels={LABEL_POD_UID: uid},
    )  # fmt: skip


@pytest.mark.parametrize(("state", "planned"), [("READY", False), ("NOTREADY", True)])
def test_a_pod_alive_by_its_ready_sandbox_keeps_its_log_dir(
    tmp_path: Path, state: str, planned: bool
) -> None:
    """A pod missing from the pod source (partial, stale) whose sandbox is READY — no container
    yet, its image still pulling — is alive: its log directory stays (`against_runtime`)."""
    logs = tree(tmp_path)
    dirs = read_pod_log_dirs(str(logs), MountTable(frozenset()))
    source = inventory_of([PodInfo(LIVE, "default", "web")])
    live = ctr("live", uid=LIVE, state="RUNNING")
    pods = against_runtime(source, [live], [_sandbox(GONE, state)])
    plan = plan_logs(
        dirs, [], [live], pods, NOW, pod_logs_dir="/var/log/pods",
        container_logs_dir="/var/log/containers",
    )  # fmt: skip
    assert [a.pod_uid for a in plan.actions] == ([GONE] if planned else [])
    alive = [(k.pod_uid, k.rule) for k in plan.kept if k.rule == "pod-alive"]
    assert alive == ([] if planned else [(GONE, "pod-alive")])
    assert any("1 pod log directory(ies) kept" in n for n in plan.notes) is not planned


@pytest.mark.parametrize(
    ("sandbox", "container", "removed"),
    [
        (None, None, True),
        ("NOTREADY", None, True),
        ("READY", None, False),
        (None, "EXITED", False),
        ("NOTREADY", "RUNNING", False),
    ],
)
def test_removal_rechecks_the_runtime_for_the_pod(
    tmp_path: Path, sandbox: str | None, container: str | None, removed: bool
) -> None:
    """Right before removing a pod's log directory the runtime is asked again: a container of
    the pod, or a READY sandbox of it (made since the plan), keeps the directory."""
    logs = tree(tmp_path)
    gone = logs / f"kube-system_coredns-7d8f_{GONE}"
    cri = MemoryCri(
        {"c": ctr("c", uid=GONE, state=container)} if container else {},
        {f"sb-{GONE}": _sandbox(GONE, sandbox)} if sandbox else {},
    )
    action = LogAction(
        "pod-log-dir", f"/var/log/pods/{gone.name}", str(gone), GONE, "deleted-pod", "why"
    )
    remover = LogRemover(
        cri, concurrency=1, mounts=MountTable(frozenset()), host_root=tmp_path,  # type: ignore[arg-type]
        roots=LogRoots(tmp_path, "/var/log/pods"),
    )  # fmt: skip
    remover.run([action])
    assert (action.result is Result.REMOVED) is removed, action.error
    assert gone.exists() is not removed
    if sandbox == "READY" or container == "RUNNING":
        assert action.error == "the pod is alive now"

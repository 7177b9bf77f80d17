"""Host readers and the log remover, against fixture trees under a --host-root."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.pods import load_pods_file
from kubegc_cli.node.host.kubelet import load_kubelet_config
from kubegc_cli.node.host.logs import (
    LogRemovalError,
    LogRoots,
    LogSizer,
    deletable_log_files,
    kubelet_log_path,
    legacy_symlink_name,
    log_bytes,
    log_files,
    remove_container_logs,
    resolve_on_host,
)
from kubegc_cli.node.host.mounts import MountTable, parse_mountinfo
from tests.unit.factories import ctr, disk, owner

MOUNTINFO = """\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 0:26 / /var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/cache rw - tmpfs tmpfs rw
31 22 0:27 / /mnt/with\\040space rw - tmpfs tmpfs rw
"""


def test_mountinfo_parsing() -> None:
    pts = parse_mountinfo(MOUNTINFO)
    assert "/mnt/with space" in pts
    t = MountTable(pts)
    assert t.is_mount_point("/var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/cache")
    assert t.has_mount_below("/var/lib/kubelet/pods/u1")
    assert not t.has_mount_below("/var/lib/kubelet/pods/u2")
    assert not t.is_mount_point("/var/lib/kubelet")


def make_logs(root: Path, uid: str = "u1") -> tuple[str, Path]:
    """A pod log dir with 0.log and two rotated files; returns (host log_path, local dir)."""
    d = root / f"var/log/pods/default_web_{uid}/app"
    d.mkdir(parents=True)
    (d / "0.log").write_bytes(b"x" * 100)
    (d / "0.log.20261129-101010").write_bytes(b"y" * 50)
    (d / "0.log.20261128-101010.gz").write_bytes(b"z" * 25)
    (d / "1.log").write_bytes(b"other attempt")
    return f"/var/log/pods/default_web_{uid}/app/0.log", d


def test_log_bytes_counts_what_would_be_freed(tmp_path: Path) -> None:
    log_path, d = make_logs(tmp_path)
    roots = LogRoots(tmp_path, "/var/log/pods")
    none = MountTable(frozenset())
    ours = [d / "0.log", d / "0.log.20261129-101010", d / "0.log.20261128-101010.gz"]
    assert log_bytes(roots, log_path, none) == disk(*ours)  # blocks on disk, not 175 bytes
    assert log_bytes(roots, "", none) is None
    assert log_bytes(roots, "/var/log/pods/missing/app/0.log", none) == 0
    # A bind-mounted log file and a log outside podLogsDir would not be freed.
    mounted = MountTable(frozenset({os.path.realpath(d / "0.log")}))
    assert log_bytes(roots, log_path, mounted) == disk(*ours[1:])
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere/0.log").write_bytes(b"x" * 10)
    assert log_bytes(roots, "/elsewhere/0.log", none) == 0


def test_remove_logs_and_legacy_symlink(tmp_path: Path) -> None:
    log_path, d = make_logs(tmp_path)
    c = owner("abcdef0123456789", log_path)
    links = tmp_path / "var/log/containers"
    links.mkdir(parents=True)
    link = links / legacy_symlink_name("web", "default", "app", c.id)
    link.symlink_to(log_path)
    other = links / legacy_symlink_name("web", "default", "app", "fff")
    other.symlink_to("/nowhere")
    roots = LogRoots(tmp_path, "/var/log/pods")
    ours = disk(d / "0.log", d / "0.log.20261129-101010", d / "0.log.20261128-101010.gz")
    freed, note = remove_container_logs(roots, c, log_path, MountTable(frozenset()))
    assert (freed, note) == (ours, "")
    assert sorted(os.listdir(d)) == ["1.log"]
    assert not os.path.lexists(link)
    assert os.path.lexists(other)


def _labelled(labels: dict[str, str], restarts: str | None) -> Any:
    from dataclasses import replace

    c = ctr("c1")
    notes = {} if restarts is None else {"io.kubernetes.container.restartCount": restarts}
    return replace(c, labels=labels, annotations=notes)


KUBELET_LABELS = {
    "io.kubernetes.pod.namespace": "batch",
    "io.kubernetes.pod.name": "indexer-0",
    "io.kubernetes.pod.uid": "0b8f-11",
    "io.kubernetes.container.name": "compactor",
}


@pytest.mark.parametrize(
    ("root", "labels", "restarts", "expected"),
    [
        ("/var/log/pods", KUBELET_LABELS, "3",
         "/var/log/pods/batch_indexer-0_0b8f-11/compactor/3.log"),
        ("/var/log/pods/", KUBELET_LABELS, "0",
         "/var/log/pods/batch_indexer-0_0b8f-11/compactor/0.log"),
        ("/data/pods", KUBELET_LABELS, "07", "/data/pods/batch_indexer-0_0b8f-11/compactor/7.log"),
        ("/var/log/pods", KUBELET_LABELS, None, ""),  # no restart count
        ("/var/log/pods", KUBELET_LABELS, "-1", ""),
        ("/var/log/pods", KUBELET_LABELS, "١", ""),  # a non-ASCII digit
        ("/var/log/pods", KUBELET_LABELS, "", ""),
        ("/var/log/pods", {**KUBELET_LABELS, "io.kubernetes.pod.uid": ""}, "1", ""),
        ("/var/log/pods", {**KUBELET_LABELS, "io.kubernetes.container.name": ".."}, "1", ""),
        ("/var/log/pods", {**KUBELET_LABELS, "io.kubernetes.pod.name": "a/../../etc"}, "1", ""),
        ("/var/log/pods", {**KUBELET_LABELS, "io.kubernetes.pod.namespace": "a\0b"}, "1", ""),
        ("/var/log/pods", {}, "1", ""),  # not the kubelet's
    ],
)  # fmt: skip
def test_kubelet_log_path_from_labels(
    root: str, labels: dict[str, str], restarts: str | None, expected: str
) -> None:
    """The kubelet's layout `<podLogsDir>/<ns>_<pod>_<uid>/<container>/<restartCount>.log`,
    or "" when the labels cannot name a path the kubelet would write."""
    assert kubelet_log_path(root, _labelled(labels, restarts)) == expected


def test_legacy_symlink_name_is_cut_to_251() -> None:
    name = legacy_symlink_name("p" * 200, "ns", "c" * 60, "0123456789abcdef")
    assert len(name) == 255 and name.endswith(".log")


def test_log_outside_pod_logs_dir_is_left(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/passwd").write_text("root:x:0:0")
    roots = LogRoots(tmp_path, "/var/log/pods")
    c = owner("a", "/var/log/pods/default_web_u1/app/0.log")
    freed, note = remove_container_logs(roots, c, "/etc/passwd", MountTable(frozenset()))
    assert freed == 0 and "is not where the kubelet puts this container's" in note
    assert (tmp_path / "etc/passwd").exists()


def test_symlinked_dir_escaping_the_root_is_left(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "0.log").write_text("precious")
    pods = tmp_path / "root/var/log/pods/default_web_u1"
    pods.mkdir(parents=True)
    (pods / "app").symlink_to(outside)
    roots = LogRoots(tmp_path / "root", "/var/log/pods")
    path = "/var/log/pods/default_web_u1/app/0.log"
    freed, note = remove_container_logs(roots, owner("a", path), path, MountTable(frozenset()))
    assert freed == 0 and note == f"/var/log/pods/default_web_u1/app is a symlink; log {path} left"
    assert (outside / "0.log").read_text() == "precious"


def test_log_that_is_a_mount_point_is_left(tmp_path: Path) -> None:
    log_path, d = make_logs(tmp_path)
    mounted = os.path.realpath(d / "0.log")
    rotated = disk(d / "0.log.20261129-101010", d / "0.log.20261128-101010.gz")
    freed, note = remove_container_logs(
        LogRoots(tmp_path, "/var/log/pods"),
        owner("a", log_path),
        log_path,
        MountTable(frozenset({mounted})),
    )
    assert "mount point" in note
    assert (d / "0.log").exists()
    assert freed == rotated  # the rotated siblings went


def test_logs_are_left_when_the_mount_table_cannot_be_read(tmp_path: Path) -> None:
    """F1 for container logs (gc containers, gc all): a mount table that could not be read
    means any log file may be a mount point; none is removed or counted, the note says why."""
    log_path, d = make_logs(tmp_path)
    unknown = MountTable.read(tmp_path / "no-proc/self/mountinfo")
    roots = LogRoots(tmp_path, "/var/log/pods")
    assert log_bytes(roots, log_path, unknown) == 0
    freed, note = remove_container_logs(roots, owner("a", log_path), log_path, unknown)
    assert freed == 0 and "cannot read the mount table" in note
    assert sorted(os.listdir(d)) == [
        "0.log", "0.log.20261128-101010.gz", "0.log.20261129-101010", "1.log",
    ]  # fmt: skip


def test_log_symlink_is_unlinked_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "target.log"
    target.write_text("keep me")
    d = tmp_path / "var/log/pods/default_web_u1/app"
    d.mkdir(parents=True)
    (d / "0.log").symlink_to(target)
    path = "/var/log/pods/default_web_u1/app/0.log"
    freed, _ = remove_container_logs(
        LogRoots(tmp_path, "/var/log/pods"), owner("a", path), path, MountTable(frozenset())
    )
    assert freed == 0
    assert not os.path.lexists(d / "0.log")
    assert target.read_text() == "keep me"


def test_legacy_entry_that_is_not_a_symlink_is_left(tmp_path: Path) -> None:
    c = ctr("abcdef", uid="u1", pod="web", name="app")
    links = tmp_path / "var/log/containers"
    links.mkdir(parents=True)
    f = links / legacy_symlink_name("web", "default", "app", c.id)
    f.write_text("a real file")
    _, note = remove_container_logs(
        LogRoots(tmp_path, "/var/log/pods"), c, "", MountTable(frozenset())
    )
    assert "not a symlink" in note and f.exists()


def test_unremovable_log_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log_path, _ = make_logs(tmp_path)

    def refuse(path: str, *, dir_fd: int | None = None) -> None:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(os, "unlink", refuse)
    with pytest.raises(LogRemovalError, match="Permission denied"):
        remove_container_logs(
            LogRoots(tmp_path, "/var/log/pods"),
            owner("a", log_path),
            log_path,
            MountTable(frozenset()),
        )


def test_kubelet_config(tmp_path: Path) -> None:
    assert load_kubelet_config(None, tmp_path).pod_logs_dir == "/var/log/pods"
    cfg = tmp_path / "var/lib/kubelet/config.yaml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        "podLogsDir: /data/pod-logs/\n"
    )
    got = load_kubelet_config(None, tmp_path)
    assert got.pod_logs_dir == "/data/pod-logs" and got.source == str(cfg)
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Pod\n")
    with pytest.raises(BadInput, match="KubeletConfiguration"):
        load_kubelet_config(bad, tmp_path)
    with pytest.raises(BadInput, match="cannot read"):
        load_kubelet_config(tmp_path / "missing.yaml", tmp_path)


@pytest.mark.parametrize(
    ("doc", "error"),
    [
        ({"kind": "KubeletConfiguration", "apiVersion": "kubelet.config.k8s.io/v1beta1"}, None),
        ({"apiVersion": "kubelet.config.k8s.io/v1"}, None),
        ({"podLogsDir": "/logs"}, None),
        ({"kind": "Pod"}, 'kind is "Pod", expected KubeletConfiguration'),
        ({"apiVersion": "kubelet.config.k8s.io/v9"}, 'apiVersion is "kubelet.config.k8s.io/v9"'),
        ({"apiVersion": "kubeproxy.config.k8s.io/v1alpha1"}, 'apiVersion is "kubeproxy'),
        ({"apiVersion": 1}, "apiVersion is 1, expected kubelet.config.k8s.io/v1beta1 or"),
        (["podLogsDir"], "not a KubeletConfiguration"),
    ],
)
def test_kubelet_config_kind_and_version(doc: object, error: str | None) -> None:
    """A file the kubelet would not decode as a KubeletConfiguration is bad input, naming the
    file and the field; `kind` and `apiVersion` may be left out."""
    from kubegc_cli.node.host.kubelet import parse_kubelet_config

    if error is None:
        assert parse_kubelet_config(doc, source="k.yaml").source == "k.yaml"
        return
    with pytest.raises(BadInput) as exc:
        parse_kubelet_config(doc, source="k.yaml")
    assert str(exc.value).startswith("k.yaml: ") and error in str(exc.value)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("/", "podLogsDir '/' would let kubegc delete anywhere; refusing"),
        ("//", "podLogsDir '//' must be a clean ASCII path"),
        ("//var/log/pods", "podLogsDir '//var/log/pods' must be a clean ASCII path"),
        ("/var/log/../pods", "must be a clean ASCII path"),
        ("/var/log/pöds", "must be a clean ASCII path"),
        ("var/log/pods", "must be an absolute path"),
    ],
)
def test_a_pod_logs_dir_the_kubelet_would_refuse_is_bad_input(value: str, message: str) -> None:
    """podLogsDir as the kubelet validates it (absolute, `filepath.Clean` of itself, ASCII),
    and never the root itself."""
    from kubegc_cli.node.host.kubelet import validate_pod_logs_dir

    with pytest.raises(BadInput) as exc:
        validate_pod_logs_dir(value, source="podLogsDir")
    assert message in str(exc.value)


def test_pods_file(tmp_path: Path) -> None:
    f = tmp_path / "pods.json"
    f.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "List",
                "items": [
                    {
                        "kind": "Pod",
                        "metadata": {"name": "web", "namespace": "default", "uid": "u1"},
                        "status": {"phase": "Running"},
                    },
                    {"metadata": {"name": "job", "namespace": "ci", "uid": "u2"},
                     "status": {"phase": "Succeeded"}},
                ],
            }
        )
    )  # fmt: skip
    inv = load_pods_file(f)
    assert inv.known and not inv.is_deleted("u1") and inv.is_deleted("u3")
    assert inv.is_terminated("u2") and not inv.is_terminated("u1")
    assert not inv.is_deleted("")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"kind": "PodList"}', "not a PodList"),
        ('{"kind": "NodeList", "items": []}', "expected kind PodList"),
        ('{"items": [{"metadata": {"name": "x"}}]}', "no metadata.uid"),
    ],
)
def test_bad_pods_file(tmp_path: Path, content: str, message: str) -> None:
    f = tmp_path / "pods.json"
    f.write_text(content)
    with pytest.raises(BadInput) as err:
        load_pods_file(f)
    assert message in str(err.value) and str(f) in str(err.value)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.mkdir(), "is a directory"),
        (lambda p: p.write_bytes(b"\xff\xfe\x00garbage"), "not UTF-8"),
        (lambda p: p.symlink_to("/dev/zero"), "not a regular file or pipe"),
    ],
)
def test_odd_input_files_are_bad_input(tmp_path: Path, make: Any, message: str) -> None:
    f = tmp_path / "pods.json"
    make(f)
    with pytest.raises(BadInput) as err:
        load_pods_file(f)
    assert message in str(err.value) and str(f) in str(err.value)


def test_pods_file_from_a_pipe(tmp_path: Path) -> None:
    """`--pods-file <(kubectl get pods -o json)` hands kubegc a pipe."""
    import threading

    fifo = tmp_path / "pods.fifo"
    os.mkfifo(fifo)
    doc = json.dumps({"kind": "PodList", "items": [{"metadata": {"uid": "u1"}}]})

    def writer() -> None:
        with open(fifo, "w") as w:
            w.write(doc)

    t = threading.Thread(target=writer)
    t.start()
    inv = load_pods_file(fifo)
    t.join()
    assert set(inv.pods) == {"u1"}


def test_kubelet_config_image_gc_fields(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "kind: KubeletConfiguration\nimageGCHighThresholdPercent: 90\nimageMaximumGCAge: 168h\n"
    )
    got = load_kubelet_config(cfg, tmp_path)
    assert got.image_gc == {"image_gc_high_threshold": 90, "image_maximum_gc_age": 168 * 3600}
    cfg.write_text("kind: KubeletConfiguration\nimageGCLowThresholdPercent: eighty\n")
    with pytest.raises(BadInput, match="imageGCLowThresholdPercent"):
        load_kubelet_config(cfg, tmp_path)


def _log_tree(tmp_path: Path) -> tuple[Path, Path]:
    """A podLogsDir of every shape `LogSizer` must measure; (host root, the plain container
    log directory ns_p_u1/app)."""
    host = tmp_path / "host"
    pods = host / "var/log/pods"
    outside = host / "elsewhere"
    (outside / "c").mkdir(parents=True)
    (outside / "c/0.log").write_bytes(b"x" * 7)
    ok = pods / "ns_p_u1/app"
    ok.mkdir(parents=True)
    (ok / "0.log").write_bytes(b"a" * 10)
    (ok / "0.log.20261130-010101").write_bytes(b"b" * 20)
    (ok / "0.log.20261130-010101.gz").write_bytes(b"c" * 30)
    (ok / "0.logger").write_bytes(b"d" * 40)  # not a sibling
    (ok / "1.log").mkdir()  # a directory named like a log
    (ok / "2.log").symlink_to("/elsewhere/c/0.log")  # (links name host paths)
    (ok / "3.log").write_bytes(b"e" * 50)  # made a mount point below
    (pods / "ns_p_u2").symlink_to("/elsewhere")  # a pod dir leading out of podLogsDir
    (pods / "ns_p_u3").mkdir()
    (pods / "ns_p_u3/app").symlink_to("/var/log/pods/ns_p_u1/app")  # leading inside
    (pods / "ns_p_u4").write_text("a file, not a directory")
    return host, ok


# Log paths of every shape in `_log_tree`, as the kubelet (or a stranger) would name them.
_TREE_LOGS = [
        "/var/log/pods/ns_p_u1/app/0.log", "/var/log/pods/ns_p_u1/app/1.log",
        "/var/log/pods/ns_p_u1/app/2.log", "/var/log/pods/ns_p_u1/app/3.log",
        "/var/log/pods/ns_p_u1/app/9.log", "/var/log/pods/ns_p_u1/gone/0.log",
        "/var/log/pods/ns_p_u2/c/0.log", "/var/log/pods/ns_p_u3/app/0.log",
        "/var/log/pods/ns_p_u4/app/0.log", "/var/log/pods/missing/app/0.log",
        "/var/log/pods/ns_p_u1/app/../app/0.log", "/var/log/pods/ns_p_u1/0.log",
]  # fmt: skip


def test_log_sizer_agrees_with_log_bytes(tmp_path: Path) -> None:
    """`LogSizer.bytes_of` gives `log_bytes`' answer for every shape of path: plain logs with
    rotated siblings, symlinked pod and container directories (inside and outside podLogsDir),
    a log that is a symlink or a directory, a mount point, missing parts, foreign paths."""
    host, ok = _log_tree(tmp_path)
    roots = LogRoots(host, "/var/log/pods")
    paths = [*_TREE_LOGS, "/elsewhere/c/0.log", ""]
    for mounts in (
        MountTable(frozenset({"/", str(ok / "3.log")})),
        MountTable(frozenset({"/"})),
        MountTable(frozenset({"/", str(ok)})),  # a mounted container directory
        MountTable.unreadable("no mount table"),
    ):
        sizer = LogSizer(roots, mounts)
        got = {p: sizer.bytes_of(p) for p in paths}
        assert got == {p: log_bytes(roots, p, mounts) for p in paths}
    sizer = LogSizer(roots, MountTable(frozenset({"/", str(ok / "3.log")})))
    three = disk(ok / "0.log", ok / "0.log.20261130-010101", ok / "0.log.20261130-010101.gz")
    assert sizer.bytes_of("/var/log/pods/ns_p_u1/app/0.log") == three  # the log + 2 rotated
    assert sizer.bytes_of("/var/log/pods/ns_p_u3/app/0.log") == 0  # through a link, inside
    assert sizer.bytes_of("/var/log/pods/ns_p_u2/c/0.log") == 0  # a link out: nothing counts
    assert sizer.bytes_of("/var/log/pods/ns_p_u1/app/3.log") == 0  # a mount point
    assert sizer.bytes_of("") is None


def _deletable_lexically(
    roots: LogRoots, log_path: str, mounts: MountTable
) -> tuple[str, list[str]]:
    """The rule of `deletable_log_files` spelled out path by path: ("layout", []) when the log
    path is not `<podLogsDir as written>/<pod dir>/<container dir>/<file>`; ("outside", [])
    when podLogsDir resolves to the host's `/`; ("unopened", []) when it is no directory;
    ("table", []) without a mount table;
    ("mounted", []) when the pod or container directory (below the real podLogsDir) is a mount
    point; ("link", []) when either is a symlink or not a directory; else ("", the files —
    the log and its rotated siblings in `<real podLogsDir>/<pod dir>/<container dir>` — that
    are regular files or symlinks and not mount points)."""
    host = roots.host_root
    prefix = os.path.normpath(roots.pod_logs_dir).rstrip("/") + "/"
    rest = log_path[len(prefix) :].split("/") if log_path.startswith(prefix) else []
    if len(rest) != 3 or any(p in ("", ".", "..") for p in rest):
        return "layout", []
    root = resolve_on_host(host, roots.pod_logs_dir).rstrip("/")
    if root == os.path.realpath(host):
        return "outside", []
    if not os.path.isdir(root):
        return "unopened", []
    if not mounts.known:
        return "table", []
    here = root
    for part in rest[:2]:
        here = f"{here}/{part}"
        if mounts.is_mount_point(here):
            return "mounted", []
        if os.path.lexists(here) and (os.path.islink(here) or not os.path.isdir(here)):
            return "link", []
    keep = [p for p, _ in log_files(f"{here}/{rest[2]}") if not mounts.is_mount_point(p)]
    return "", keep


def test_deletable_log_files_follow_the_lexical_rule(tmp_path: Path) -> None:
    """`deletable_log_files` reads a log only in the kubelet's lexical directory below the held
    podLogsDir; its answer is the rule's for every shape: symlinked pod and container
    directories (in and out), a podLogsDir that is itself a symlink (relative, host-absolute,
    to the host's `/`, or to a directory outside the host root), a log that is a symlink, a
    mounted pod or container directory, a mount point, missing parts, foreign paths, `..`."""
    host, ok = _log_tree(tmp_path)
    (host / "logs").symlink_to("var/log/pods")
    (host / "abs-logs").symlink_to("/var/log/pods")
    (host / "to-root").symlink_to("/")
    victim = tmp_path / "victim/pods/ns_p_u1/app"  # outside the host root
    victim.mkdir(parents=True)
    (victim / "0.log").write_bytes(b"v" * 9)
    (host / "away").symlink_to(tmp_path / "victim/pods")  # (on the host: a missing path)
    outside_log = str(host / "elsewhere/c/0.log")
    paths = [
        *_TREE_LOGS, "/var/log/pods/0.log", "/elsewhere/c/0.log", "/logs/ns_p_u1/app/0.log",
        "/logs/ns_p_u3/app/0.log", "/logs/ns_p_u2/c/0.log", "/abs-logs/ns_p_u1/app/0.log",
        "/away/ns_p_u1/app/0.log", "/to-root/var/log/pods/ns_p_u1/app/0.log",
        "/../../var/log/pods/ns_p_u1/app/0.log", f"/away/../{victim}/0.log",
        "/to-root/ns_p_u1/app/0.log",
    ]  # fmt: skip
    seen = set()
    for pod_logs_dir in ("/var/log/pods", "/var/log/pods/", "/logs", "/abs-logs", "/var/log",
                         "/to-root", "/away"):  # fmt: skip
        for mounts in (
            MountTable(frozenset({"/", str(ok / "3.log")})),
            MountTable(frozenset({"/", outside_log, str(ok / "0.log")})),
            MountTable(frozenset({"/", str(ok)})),
            MountTable(frozenset({"/", str(host / "var/log/pods/ns_p_u1")})),
            MountTable.unreadable("no mount table"),
        ):
            roots = LogRoots(host, pod_logs_dir)
            for path in paths:
                files, notes = deletable_log_files(roots, path, mounts)
                why, expected = _deletable_lexically(roots, path, mounts)
                where = (pod_logs_dir, path, mounts)
                assert [p for p, _ in files] == expected, where
                said = {
                    "layout": "the path is not of the kubelet's layout below podLogsDir",
                    "outside": "outside podLogsDir",
                    "unopened": "could not be opened when planned",
                    "table": "no mount table",
                    "mounted": f"is a mount point; log {path} left",
                    "link": f"; log {path} left",
                }
                if why:
                    assert len(notes) == 1 and said[why] in notes[0], where
                if why == "link":
                    assert " is a symlink; " in notes[0] or " is not a directory; " in notes[0]
                seen.add((why, len(files)))
    assert seen >= {
        ("layout", 0), ("outside", 0), ("table", 0), ("mounted", 0), ("link", 0),
        ("", 0), ("", 1), ("", 2), ("", 3),
    }  # fmt: skip
    assert (victim / "0.log").exists()
    roots = LogRoots(host, "/logs")
    mounted = MountTable(frozenset({"/", outside_log, str(ok / "0.log")}))
    files, notes = deletable_log_files(roots, "/logs/ns_p_u1/app/0.log", mounted)
    assert [os.path.basename(p) for p, _ in files] == [
        "0.log.20261130-010101", "0.log.20261130-010101.gz",
    ]  # fmt: skip
    shown = f"/{ok.relative_to(host)}"  # as the host names it
    assert notes == [f"{shown}/0.log is a mount point; left"]
    files, notes = deletable_log_files(roots, "/logs/ns_p_u1/app/2.log", mounted)
    assert [os.path.basename(p) for p, _ in files] == ["2.log"] and notes == []  # a link


def test_a_symlink_loop_on_a_logs_way_leaves_it_without_an_error(tmp_path: Path) -> None:
    """A container log directory that is a symlink to itself, or a podLogsDir in a loop, under
    `--host-root`: nothing is deletable, and the note says which (a link, or outside)."""
    host = tmp_path / "host"
    pods = host / "var/log/pods/ns_p_u1"
    pods.mkdir(parents=True)
    (pods / "app").symlink_to("app")
    (host / "loop").symlink_to("loop")
    none = MountTable(frozenset({"/"}))
    for root, path in (("/var/log/pods", "/var/log/pods/ns_p_u1/app/0.log"),
                       ("/loop", "/loop/ns_p_u1/app/0.log")):  # fmt: skip
        files, notes = deletable_log_files(LogRoots(host, root), path, none)
        assert files == [] and notes == [
            f"podLogsDir /loop resolves to the host's / or loops: the log is outside "
            f"podLogsDir; log {path} left" if root == "/loop"
            else f"/var/log/pods/ns_p_u1/app is a symlink; log {path} left"
        ]  # fmt: skip


def test_no_log_is_deleted_outside_the_host_root_or_through_a_mounted_directory(
    tmp_path: Path,
) -> None:
    """`remove_container_logs` under `--host-root`: a podLogsDir that is an absolute symlink
    is followed on the host (never to this process's path of the same name), one that
    resolves to the host's `/` holds nothing, and a bind-mounted container directory is left
    whole (its files may belong anywhere)."""
    victim = tmp_path / "victim/pods/ns_p_u1/app"
    victim.mkdir(parents=True)
    (victim / "0.log").write_bytes(b"v" * 9)
    host = tmp_path / "host"
    (host / "var/log").mkdir(parents=True)
    (host / "var/log/pods").symlink_to(tmp_path / "victim/pods")  # absolute, as on the host
    decoy = host / str(victim).lstrip("/")  # where that link leads on the host
    decoy.mkdir(parents=True)
    (decoy / "0.log").write_bytes(b"d" * 4)
    c = owner("a", "/var/log/pods/ns_p_u1/app/0.log")
    none = MountTable(frozenset({"/"}))
    roots = LogRoots(host, "/var/log/pods")
    decoy_blocks = disk(decoy / "0.log")
    freed, note = remove_container_logs(roots, c, "/var/log/pods/ns_p_u1/app/0.log", none)
    assert (freed, note) == (decoy_blocks, "") and not (decoy / "0.log").exists()
    assert (victim / "0.log").read_bytes() == b"v" * 9
    (host / "to-root").symlink_to("/")
    (decoy / "0.log").write_bytes(b"d" * 4)
    (host / "ns_p_u1/app").mkdir(parents=True)  # the host's /ns_p_u1/app/0.log
    (host / "ns_p_u1/app/0.log").write_bytes(b"r" * 3)
    freed, note = remove_container_logs(
        LogRoots(host, "/to-root"), c, "/to-root/ns_p_u1/app/0.log", none
    )
    assert freed == 0 and "outside podLogsDir" in note and (host / "ns_p_u1/app/0.log").exists()
    freed, note = remove_container_logs(
        roots, c, "/var/log/pods/ns_p_u1/app/0.log", MountTable(frozenset({"/", str(decoy)}))
    )
    assert freed == 0 and note == (
        f"/{decoy.relative_to(host)} is a mount point; log /var/log/pods/ns_p_u1/app/0.log left"
    )
    assert (decoy / "0.log").exists() and (victim / "0.log").exists()


def test_layout_logs_are_each_containers_path_and_size(tmp_path: Path) -> None:
    """`LogSizer.fill_layout_logs` gives every container `kubelet_log_path` and that path's
    `bytes_of`, and leaves one the layout cannot name as it was: attempts sharing one labels
    object, equal labels in another object, every shape of directory, bad labels and bad
    restart counts."""
    from dataclasses import replace

    host, ok = _log_tree(tmp_path)
    (ok / "12.log").write_bytes(b"f" * 3)
    (ok / "12.log.1").write_bytes(b"g" * 4)
    (ok / "1.log.x").write_bytes(b"h" * 5)  # next to a directory named 1.log

    def labels(ns: str, pod: str, uid: str, name: str) -> dict[str, str]:
        return {"io.kubernetes.pod.namespace": ns, "io.kubernetes.pod.name": pod,
                "io.kubernetes.pod.uid": uid, "io.kubernetes.container.name": name}  # fmt: skip

    app = labels("ns", "p", "u1", "app")
    containers = [
        _labelled(app, r) for r in ("0", "1", "2", "3", "9", "12", "012", "x", "", None)
    ] + [
        _labelled(dict(app), "0"),
        _labelled(labels("ns", "p", "u1", "gone"), "0"),
        _labelled(labels("ns", "p", "u2", "c"), "0"),
        _labelled(labels("ns", "p", "u3", "app"), "0"),
        _labelled(labels("ns", "p", "u4", "app"), "0"),
        _labelled(labels("ns", "p", "u1", ".."), "0"),
        _labelled(labels("ns", "p/../..", "u1", "app"), "0"),
        _labelled({}, "0"),
    ]
    roots = LogRoots(host, "/var/log/pods/")
    for mounts in (
        MountTable(frozenset({"/", str(ok / "3.log")})),
        MountTable.unreadable("no mount table"),
    ):
        expect = []
        for c in containers:
            path = kubelet_log_path("/var/log/pods", c)
            size = LogSizer(roots, mounts).bytes_of(path) if path else None
            assert size == log_bytes(roots, path, mounts)
            expect.append((path, size))
        filled = [replace(c) for c in containers]
        LogSizer(roots, mounts).fill_layout_logs(iter(filled))
        assert [(c.log_path, c.log_bytes) for c in filled] == expect
    assert expect[0] == ("/var/log/pods/ns_p_u1/app/0.log", 0)  # (no mount table: 0 bytes)
    assert [size for _, size in expect[:10]] == [0] * 7 + [None] * 3
    sizes = {}
    sizer = LogSizer(roots, MountTable(frozenset({"/", str(ok / "3.log")})))
    for c in containers[:7]:
        sizes[c.annotations["io.kubernetes.container.restartCount"]] = sizer.bytes_of(
            kubelet_log_path("/var/log/pods", c)
        )
    zero = disk(ok / "0.log", ok / "0.log.20261130-010101", ok / "0.log.20261130-010101.gz")
    twelve = disk(ok / "12.log", ok / "12.log.1")
    assert sizes == {"0": zero, "1": disk(ok / "1.log.x"), "2": 0, "3": 0, "9": 0,
                     "12": twelve, "012": twelve}  # fmt: skip


@pytest.mark.parametrize(
    ("doc", "error"),
    [
        ({"imageGCHighThresholdPercent": True}, "imageGCHighThresholdPercent true must be"),
        ({"imageGCLowThresholdPercent": None}, "imageGCLowThresholdPercent null must be"),
        ({"imageMinimumGCAge": 120}, "imageMinimumGCAge 120 must be a duration"),
        ({"imageMaximumGCAge": True}, "imageMaximumGCAge true must be a duration"),
        ({"imageMinimumGCAge": "2x"}, "'2x'"),
    ],
)
def test_kubelet_config_field_errors_show_the_value_as_written(doc: object, error: str) -> None:
    """A field of the wrong type is named with its value as YAML has it (`true`, `null`), and a
    duration must be a string as in a KubeletConfiguration (`metav1.Duration`)."""
    from kubegc_cli.node.host.kubelet import parse_kubelet_config

    with pytest.raises(BadInput) as exc:
        parse_kubelet_config(doc, source="k.yaml")
    assert error in str(exc.value)


@pytest.mark.parametrize(
    "path",
    [
        "/var/log/pods/shop_frontend_u2/nginx/0.log",  # another pod's log (a running one)
        "/var/log/pods/default_web_u1/sidecar/0.log",  # another container of the same pod
        "/var/log/pods/default_web_u1/app/1.log",  # another attempt's log
        "/var/log/pods/default_web_u1/app/../app/0.log",  # its own, but not as written
        "/var/log/pods/default_web_u1/app/0.log.20261129-101010",
    ],
)
def test_a_log_path_that_is_not_the_containers_own_is_never_deleted(
    tmp_path: Path, path: str
) -> None:
    """The runtime reports a container's log path; kubegc deletes logs only at the path the
    kubelet gives that container (`<ns>_<pod>_<uid>/<container>/<restartCount>.log`), so a
    path pointing at another pod's, container's or attempt's log frees and removes nothing."""
    for d in ("shop_frontend_u2/nginx", "default_web_u1/sidecar", "default_web_u1/app"):
        for name in ("0.log", "1.log", "0.log.20261129-101010"):
            put = tmp_path / "var/log/pods" / d / name
            put.parent.mkdir(parents=True, exist_ok=True)
            put.write_text("keep")
    roots = LogRoots(tmp_path, "/var/log/pods")
    c = owner("dead", "/var/log/pods/default_web_u1/app/0.log")
    assert LogSizer(roots, MountTable(frozenset())).bytes_of(path, c) == 0
    freed, note = remove_container_logs(roots, c, path, MountTable(frozenset()))
    assert freed == 0 and f"log {path} is not where the kubelet puts this container's" in note
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert len(left) == 9
    own = "/var/log/pods/default_web_u1/app/0.log"
    app = tmp_path / "var/log/pods/default_web_u1/app"
    want = disk(app / "0.log", app / "0.log.20261129-101010")  # 0.log + rotated
    assert LogSizer(roots, MountTable(frozenset())).bytes_of(own, c) == want


@pytest.mark.parametrize(
    ("link", "target", "named"),
    [
        ("ns_p_u1/app", "/var/log/pods/ns_live_u9/app", "/var/log/pods/ns_p_u1/app"),
        ("ns_p_u1/app", "../ns_live_u9/app", "/var/log/pods/ns_p_u1/app"),
        ("ns_p_u1", "ns_live_u9", "/var/log/pods/ns_p_u1"),
        ("ns_p_u1", "/var/log/pods/ns_live_u9", "/var/log/pods/ns_p_u1"),
    ],
)
def test_a_log_dir_linked_to_another_pods_inside_pod_logs_dir_is_never_followed(
    tmp_path: Path, link: str, target: str, named: str
) -> None:
    """The pod or container directory of a log is opened one component at a time from the
    held podLogsDir, never through a link: one that is a link to another (live) pod's log
    directory inside podLogsDir counts 0 bytes, removes nothing there, and a note names it."""
    from dataclasses import replace

    pods = tmp_path / "var/log/pods"
    live = pods / "ns_live_u9/app"
    live.mkdir(parents=True)
    for name in ("0.log", "0.log.20261129-101010", "3.log"):
        (live / name).write_bytes(b"L" * 11)
    (pods / link).parent.mkdir(parents=True, exist_ok=True)
    (pods / link).symlink_to(target)
    path = "/var/log/pods/ns_p_u1/app/0.log"
    c = owner("dead", path)
    roots = LogRoots(tmp_path, "/var/log/pods")
    mounts = MountTable(frozenset({"/"}))
    assert log_bytes(roots, path, mounts) == 0
    sizer = LogSizer(roots, mounts)
    assert sizer.bytes_of(path, c) == 0
    filled = replace(c, log_path="", log_bytes=None)
    sizer.fill_layout_logs([filled])
    assert (filled.log_path, filled.log_bytes) == (path, 0)
    assert sizer.note_for(path) == f"{named} is a symlink; log {path} left"
    files, notes = deletable_log_files(roots, path, mounts)
    assert files == [] and notes == [f"{named} is a symlink; log {path} left"]
    freed, note = remove_container_logs(roots, c, path, mounts)
    assert freed == 0 and note == f"{named} is a symlink; log {path} left"
    assert sorted(p.name for p in live.iterdir()) == ["0.log", "0.log.20261129-101010", "3.log"]
    assert os.path.islink(pods / link)


def test_a_log_dir_that_is_not_a_directory_leaves_the_log_with_a_note(tmp_path: Path) -> None:
    pods = tmp_path / "var/log/pods"
    (pods / "ns_p_u1").mkdir(parents=True)
    (pods / "ns_p_u1/app").write_text("a file")
    path = "/var/log/pods/ns_p_u1/app/0.log"
    roots = LogRoots(tmp_path, "/var/log/pods")
    freed, note = remove_container_logs(roots, owner("dead", path), path, MountTable(frozenset()))
    assert freed == 0 and note == f"/var/log/pods/ns_p_u1/app is not a directory; log {path} left"
    assert (pods / "ns_p_u1/app").read_text() == "a file"

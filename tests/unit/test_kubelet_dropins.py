"""The kubelet's drop-in configuration (`--config-dir`) as the kubelet merges it.

Rules from cmd/kubelet/app/server.go: `mergeKubeletConfigurations` (a `filepath.WalkDir` over
the directory, every non-directory whose `filepath.Ext` is exactly `.conf`, each applied onto
the configuration so far with `jsonpatch.MergePatch`, RFC 7386), `loadConfigFile` (the base
file's `evictionHard` is the defaults when unset, and gets the unlisted defaults when
`mergeDefaultEvictionSettings` is true — before any drop-in is merged), and
`kubeletConfigFlagPrecedence` (the command line is parsed again over the merged result).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.core.errors import BadInput
from kubegc_cli.node.host.kubelet import (
    dropin_files,
    env_file_value,
    kubelet_file_flags,
    kubelet_pod_infra_image,
    load_kubelet_config,
    load_kubelet_files,
    merge_patch,
)
from kubegc_cli.policy.eviction.thresholds import (
    DEFAULT_EVICTION_HARD,
    SOURCE_DEFAULT,
    SOURCE_MERGED_DEFAULT,
    kubelet_base_for_dropins,
    raw_from_kubelet_cmdline,
    raw_from_kubelet_config,
    resolve,
)
from tests.unit.test_evict_check import by_signal, v1_node

KIND = "kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\n"


def put(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# --- which files, in which order ------------------------------------------------------------


def test_dropin_files_walk_order_and_the_conf_match(tmp_path: Path) -> None:
    """WalkDir order: each directory's names in byte order, a subdirectory read where its
    name sorts (so `a/` before `a-b.conf`, although the path `a-b.conf` < `a/z.conf` byte for
    byte); `10-a.conf` before `9-b.conf`; `.conf` exactly and case-sensitively, as the last
    extension; a file named `.conf` counts (its Ext is `.conf`)."""
    d = tmp_path / "conf.d"
    for rel in ("9-b.conf", "10-a.conf", "a/z.conf", "a-b.conf", "sub/deeper/x.conf",
                "A.CONF", "b.Conf", "c.conf.bak", "d.conf~", "README", ".conf",
                "dir.conf/inside.conf"):  # fmt: skip
        put(d, rel, KIND)
    got = [str(p.relative_to(d)) for p in dropin_files(d)]
    assert got == [
        ".conf",
        "10-a.conf",
        "9-b.conf",
        "a/z.conf",
        "a-b.conf",
        "dir.conf/inside.conf",  # a directory named *.conf is walked, not read
        "sub/deeper/x.conf",
    ]


def test_dropin_dir_that_cannot_be_read_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match=r"cannot read kubelet config dir .*missing"):
        dropin_files(tmp_path / "missing")


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        (["kubelet"], (None, None)),
        (["kubelet", "--config=/a.yaml", "--config-dir", "/d"], ("/a.yaml", "/d")),
        (["kubelet", "--config_dir=/d1", "--config-dir=/d2"], (None, "/d2")),  # last wins
        (["kubelet", "--config=", "--config-dir="], (None, None)),  # empty: unset
        (["kubelet", "--", "--config=/x"], (None, None)),  # parsing stops at --
        (["kubelet", "--config"], (None, None)),  # no value
    ],
)
def test_kubelet_file_flags(argv: list[str], want: tuple[str | None, str | None]) -> None:
    assert kubelet_file_flags(argv) == want


# --- the merge (RFC 7386) -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "base", "patches", "want", "provenance"),
    [
        ("maps merge key by key", {"evictionHard": {"a": "1", "b": "2"}},
         [("x.conf", {"evictionHard": {"b": "3", "c": "4"}})],
         {"evictionHard": {"a": "1", "b": "3", "c": "4"}},
         {("evictionHard", "b"): "x.conf", ("evictionHard", "c"): "x.conf"}),
        ("lists are replaced whole", {"clusterDNS": ["1.1.1.1", "2.2.2.2"]},
         [("x.conf", {"clusterDNS": ["3.3.3.3"]})], {"clusterDNS": ["3.3.3.3"]},
         {("clusterDNS",): "x.conf"}),
        ("a later drop-in wins", {},
         [("10.conf", {"maxPods": 10}), ("20.conf", {"maxPods": 20})], {"maxPods": 20},
         {("maxPods",): "20.conf"}),
        ("null removes the key (the default applies again)",
         {"evictionHard": {"a": "1", "b": "2"}, "podLogsDir": "/x"},
         [("x.conf", {"evictionHard": {"a": None}, "podLogsDir": None})],
         {"evictionHard": {"b": "2"}}, {}),
        ("nested maps merge", {"authorization": {"mode": "Webhook", "webhook": {"t": "5m"}}},
         [("x.conf", {"authorization": {"webhook": {"u": "30s"}}})],
         {"authorization": {"mode": "Webhook", "webhook": {"t": "5m", "u": "30s"}}},
         {("authorization", "webhook", "u"): "x.conf"}),
        ("a scalar replaces a map, and its sources go", {"evictionHard": {"a": "1"}},
         [("x.conf", {"evictionHard": {"b": "2"}}), ("y.conf", {"evictionHard": "oops"})],
         {"evictionHard": "oops"}, {("evictionHard",): "y.conf"}),
    ],
)  # fmt: skip
def test_merge_patch(
    name: str,
    base: dict[str, Any],
    patches: list[tuple[str, dict[str, Any]]],
    want: dict[str, Any],
    provenance: dict[tuple[str, ...], str],
) -> None:
    prov: dict[tuple[str, ...], str] = {}
    for source, patch in patches:
        merge_patch(base, patch, source, prov)
    assert base == want, name
    assert prov == provenance, name


# --- loading: base file, drop-ins, the running kubelet -------------------------------------


def test_running_kubelets_config_and_config_dir_are_read_under_host_root(tmp_path: Path) -> None:
    """The running kubelet's `--config` and `--config-dir` (host paths) are read under
    --host-root; a drop-in's value names the drop-in, the base file's the base file."""
    base = put(tmp_path, "etc/k/kubelet.yaml", KIND + "imageGCHighThresholdPercent: 70\n"
               "imageGCLowThresholdPercent: 60\npodLogsDir: /data/pods\n")  # fmt: skip
    drop = put(tmp_path, "etc/k/conf.d/50-gc.conf", KIND + "imageGCHighThresholdPercent: 90\n")
    put(tmp_path, "var/lib/kubelet/config.yaml", KIND + "imageGCHighThresholdPercent: 1\n")
    argv = ["/usr/bin/kubelet", "--config=/etc/k/kubelet.yaml", "--config-dir", "/etc/k/conf.d"]
    kcfg = load_kubelet_config(None, tmp_path, running=(4242, argv))
    assert kcfg.image_gc == {"image_gc_high_threshold": 90, "image_gc_low_threshold": 60}
    assert kcfg.sources == {
        "image_gc_high_threshold": str(drop),
        "image_gc_low_threshold": str(base),
        "pod_logs_dir": str(base),
    }
    assert kcfg.pod_logs_dir == "/data/pods" and kcfg.source == str(base)
    assert kcfg.files is not None and kcfg.files.running == "pid 4242"
    # --kubelet-config-dir (as given) replaces the running kubelet's --config-dir
    other = put(tmp_path, "other/1.conf", KIND + "imageGCHighThresholdPercent: 80\n")
    kcfg = load_kubelet_config(None, tmp_path, other.parent, running=(4242, argv))
    assert kcfg.image_gc["image_gc_high_threshold"] == 80
    assert kcfg.sources["image_gc_high_threshold"] == str(other)


def test_dropins_without_a_base_file(tmp_path: Path) -> None:
    drop = put(tmp_path, "d/1.conf", KIND + "podLogsDir: /srv/logs\n")
    kcfg = load_kubelet_config(None, tmp_path, drop.parent, running=None)
    assert kcfg.pod_logs_dir == "/srv/logs" and kcfg.sources["pod_logs_dir"] == str(drop)
    assert kcfg.source == "defaults"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kind: [\n", "is not valid YAML"),
        ("", "is empty"),
        ("kind: KubeletConfig\n", "kind is .KubeletConfig., expected KubeletConfiguration"),
        ("apiVersion: v1\n", "apiVersion is .v1."),
        ("- a\n", "not a KubeletConfiguration"),
        (KIND + "imageGCHighThresholdPercent: high\n", "must be an integer"),
    ],
)
def test_a_bad_dropin_is_bad_input_naming_the_file(tmp_path: Path, text: str, message: str) -> None:
    put(tmp_path, "d/10-good.conf", KIND)
    bad = put(tmp_path, "d/20-bad.conf", text)
    with pytest.raises(BadInput, match=message) as exc:
        load_kubelet_config(None, tmp_path, bad.parent, running=None)
    assert str(bad) in str(exc.value) and "\n" not in str(exc.value)


# --- eviction: the base file's fix-up, then the drop-ins, then the flags -----------------------


def evictions(
    base: dict[str, Any], dropins: list[dict[str, Any]], argv: list[str] | None = None
) -> dict[str, tuple[str, str]]:
    """signal → (threshold text, source) of the hard thresholds in force (but the copy of
    memory.available as allocatableMemory.available)."""
    raw_base = raw_from_kubelet_config(base, "base.yaml")
    doc, prov = kubelet_base_for_dropins(base, merge_defaults=bool(raw_base.merge_defaults))
    for i, d in enumerate(dropins):
        merge_patch(doc, d, f"{i}.conf", prov)
    raw = raw_from_kubelet_config(doc, "base.yaml", provenance=prov)
    raw.merge_defaults, raw.defaults_applied = raw_base.merge_defaults, True
    layers = [raw]
    if argv:
        layers.insert(0, raw_from_kubelet_cmdline(argv, "cmdline")[0])
    cfg = resolve(layers)
    return {
        t.signal: (t.text, t.source)
        for t in cfg.thresholds
        if t.hard and t.signal != "allocatableMemory.available"  # the kubelet's copy
    }


DEFAULTS = {s: (v, SOURCE_DEFAULT) for s, v in DEFAULT_EVICTION_HARD.items()}


@pytest.mark.parametrize(
    ("name", "base", "dropins", "argv", "want"),
    [
        ("base unset: a drop-in's key merges onto the defaults", {},
         [{"evictionHard": {"memory.available": "500Mi"}}], None,
         {**DEFAULTS, "memory.available": ("500Mi", "0.conf: evictionHard")}),
        ("base set without merge: the defaults are gone, the drop-in adds a key",
         {"evictionHard": {"memory.available": "1Gi"}},
         [{"evictionHard": {"nodefs.available": "20%"}}], None,
         {"memory.available": ("1Gi", "base.yaml: evictionHard"),
          "nodefs.available": ("20%", "0.conf: evictionHard")}),
        ("base set with mergeDefaultEvictionSettings: the defaults are added first",
         {"evictionHard": {"memory.available": "1Gi"}, "mergeDefaultEvictionSettings": True},
         [{"evictionHard": {"nodefs.available": "20%"}}], None,
         {**{s: (v, SOURCE_MERGED_DEFAULT) for s, v in DEFAULT_EVICTION_HARD.items()},
          "memory.available": ("1Gi", "base.yaml: evictionHard"),
          "nodefs.available": ("20%", "0.conf: evictionHard")}),
        ("mergeDefaultEvictionSettings in a drop-in counts for nothing",
         {"evictionHard": {"memory.available": "1Gi"}},
         [{"mergeDefaultEvictionSettings": True}], None,
         {"memory.available": ("1Gi", "base.yaml: evictionHard")}),
        ("a drop-in's null removes a default", {},
         [{"evictionHard": {"imagefs.inodesFree": None}}], None,
         {s: v for s, v in DEFAULTS.items() if s != "imagefs.inodesFree"}),
        ("the command line replaces the merged map", {},
         [{"evictionHard": {"memory.available": "500Mi"}}],
         ["kubelet", "--eviction-hard=memory.available<300Mi"],
         {"memory.available": ("300Mi", "cmdline: --eviction-hard")}),
    ],
)  # fmt: skip
def test_eviction_thresholds_with_dropins(
    name: str,
    base: dict[str, Any],
    dropins: list[dict[str, Any]],
    argv: list[str] | None,
    want: dict[str, tuple[str, str]],
) -> None:
    assert evictions(base, dropins, argv) == want, name


# --- every command that reads the kubelet config reads the drop-ins --------------------------

ENV = {"PATH": "/usr/bin:/bin", "HOME": "/"}
NO_RUNTIME = ["-r", "unix:///nonexistent/kubegc-test.sock"]


def kubegc(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubegc_cli", "--host-root", str(root), *NO_RUNTIME, *args],
        capture_output=True, text=True, timeout=60, env=ENV,
    )  # fmt: skip


@pytest.mark.parametrize(
    "command",
    [
        ["gc", "containers", "--dry-run"],
        ["gc", "logs", "--dry-run"],
        ["gc", "images", "--dry-run"],
        ["evict", "check"],
        ["df"],
        ["residue", "scan"],
    ],
)
def test_every_command_reads_the_dropins(tmp_path: Path, command: list[str]) -> None:
    """A drop-in the kubelet would refuse is exit 2 naming it, before anything else runs:
    each of these commands reads the kubelet config through the one loader."""
    put(tmp_path, "var/lib/kubelet/config.yaml", KIND)
    bad = put(tmp_path, "etc/kubelet.conf.d/sub/99-bad.conf", "kind: [\n")
    res = kubegc(tmp_path, "--kubelet-config-dir", str(bad.parent.parent), *command)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0]


def test_evict_check_names_the_dropin_per_threshold(tmp_path: Path) -> None:
    v1_node(tmp_path, available_mib=900)
    put(tmp_path, "var/lib/kubelet/config.yaml", KIND)
    drop = put(tmp_path, "etc/kubelet.conf.d/50-memory.conf",
               KIND + "evictionHard:\n  memory.available: 950Mi\n")  # fmt: skip
    res = kubegc(tmp_path, "--kubelet-config-dir", str(drop.parent), "-v",
                 "evict", "check", "--root-dir", "/var/lib/kubelet", "-o", "json")  # fmt: skip
    doc = json.loads(res.stdout)
    rows = by_signal(doc)
    assert rows["memory.available"]["source"] == f"{drop}: evictionHard"
    assert rows["memory.available"]["met"] is True and res.returncode == 5, res.stderr
    assert rows["nodefs.available"]["source"] == SOURCE_DEFAULT  # still in force
    assert f"kubelet config drop-in: {drop}" in res.stderr


def test_config_view_and_gc_images_name_the_file_that_set_each_value(
    tmp_path: Path,
) -> None:
    text = KIND + "imageGCLowThresholdPercent: 60\nimageGCHighThresholdPercent: 70\n"
    base = put(tmp_path, "var/lib/kubelet/config.yaml", text)
    drop = put(tmp_path, "d/1.conf", KIND + "imageGCHighThresholdPercent: 90\n")
    res = kubegc(tmp_path, "--kubelet-config-dir", str(drop.parent),
                 "config", "view", "gc", "images", "-o", "json")  # fmt: skip
    assert res.returncode == 0, res.stderr
    rows = {r["key"]: r for r in json.loads(res.stdout)["values"]}
    high = rows["gc.images.image-gc-high-threshold"]
    assert (
        high["value"] == 90
        and high["source"] == f"kubelet config {drop}: imageGCHighThresholdPercent"
    )
    low = rows["gc.images.image-gc-low-threshold"]
    assert (
        low["value"] == 60 and low["source"] == f"kubelet config {base}: imageGCLowThresholdPercent"
    )
    res = kubegc(tmp_path, "--kubelet-config-dir", str(drop.parent), "-v", "gc", "images")
    assert res.returncode == 3  # the settings are valid; the runtime is what is missing
    assert f"image_gc_high_threshold = 90 (from {drop})" in res.stderr
    assert f"image_gc_low_threshold = 60 (from {base})" in res.stderr


def config_rows(res: subprocess.CompletedProcess[str]) -> dict[str, list[tuple[Any, str]]]:
    """`config view -o json`'s rows as key → [(value, source)], one per row of that key."""
    assert res.returncode == 0, res.stderr
    rows: dict[str, list[tuple[Any, str]]] = {}
    for r in json.loads(res.stdout)["values"]:
        rows.setdefault(r["key"], []).append((r["value"], r["source"]))
    return rows


def test_config_view_of_evict_check_names_the_file_drop_in_or_default_of_each_threshold(
    tmp_path: Path,
) -> None:
    """The base file sets evictionHard (the unlisted defaults go, as on the kubelet), a
    drop-in sets one more key of it and the soft thresholds: each key names what set it."""
    base = put(tmp_path, "var/lib/kubelet/config.yaml",
               KIND + "evictionHard:\n  memory.available: 500Mi\n")  # fmt: skip
    res = kubegc(tmp_path, "-o", "json", "config", "view", "evict", "check")
    rows = config_rows(res)
    assert rows["evict.check.eviction-hard"] == [
        (["memory.available<500Mi"], f"kubelet config {base}: evictionHard")]  # fmt: skip
    assert rows["evict.check.eviction-soft"] == [([], "default")]
    drop = put(tmp_path, "etc/kubelet.conf.d/50-eviction.conf", KIND
               + "evictionHard:\n  nodefs.available: 5%\n"
               "evictionSoft:\n  memory.available: 1Gi\n"
               "evictionSoftGracePeriod:\n  memory.available: 1m30s\n")  # fmt: skip
    res = kubegc(tmp_path, "--kubelet-config-dir", str(drop.parent), "-o", "json",
                 "config", "view", "evict", "check", "--eviction-minimum-reclaim",
                 "memory.available=100Mi")  # fmt: skip
    rows = config_rows(res)
    assert rows["evict.check.eviction-hard"] == [
        (["memory.available<500Mi"], f"kubelet config {base}: evictionHard"),
        (["nodefs.available<5%"], f"kubelet config {drop}: evictionHard"),
    ]
    assert rows["evict.check.eviction-soft"] == [
        (["memory.available<1Gi"], f"kubelet config {drop}: evictionSoft")]  # fmt: skip
    grace = (["memory.available=1m30s"], f"kubelet config {drop}: evictionSoftGracePeriod")
    assert rows["evict.check.eviction-soft-grace-period"] == [grace]
    assert rows["evict.check.eviction-minimum-reclaim"] == [(["memory.available=100Mi"], "flag")]
    # no evictionHard in the base file: a drop-in's key merges onto the kubelet's defaults
    base.write_text(KIND)
    res = kubegc(tmp_path, "--kubelet-config-dir", str(drop.parent), "-o", "json",
                 "config", "view", "evict", "check")  # fmt: skip
    rows = config_rows(res)
    defaults = ["memory.available<100Mi", "nodefs.inodesFree<5%", "imagefs.available<15%",
                "imagefs.inodesFree<5%"]  # fmt: skip
    assert rows["evict.check.eviction-hard"] == [
        (defaults, SOURCE_DEFAULT),
        (["nodefs.available<5%"], f"kubelet config {drop}: evictionHard"),
    ]
    res = kubegc(tmp_path, "--kubelet-config-dir", str(drop.parent), "config", "view", "evict",
                 "check")  # fmt: skip
    assert res.returncode == 0, res.stderr
    [hard] = [r for r in res.stdout.splitlines() if "nodefs.available<5%" in r]
    assert hard.split()[0] == "evict.check.eviction-hard" and hard.endswith(
        f"kubelet config {drop}: evictionHard"), res.stdout  # fmt: skip


def test_config_view_shows_the_pod_log_root_and_log_rotation_where_they_come_from(
    tmp_path: Path,
) -> None:
    """podLogsDir unset in every file is the kubelet's default, not the base file's; a
    drop-in's containerLogMaxSize is shown, named after the drop-in, beside the default
    containerLogMaxFiles, for the commands that judge log rotation by them."""
    put(tmp_path, "var/lib/kubelet/config.yaml", KIND + "imageGCHighThresholdPercent: 90\n")
    drop = put(tmp_path, "etc/kubelet.conf.d/10-logs.conf", KIND + "containerLogMaxSize: 20Mi\n")
    res = kubegc(tmp_path, "--kubelet-config-dir", str(drop.parent), "-o", "json",
                 "config", "view", "residue", "scan")  # fmt: skip
    rows = config_rows(res)
    assert rows["residue.scan.pod-logs-dir"] == [("/var/log/pods", SOURCE_DEFAULT)]
    assert rows["kubelet.containerLogMaxSize"] == [
        (20 * 2**20, f"kubelet config {drop}: containerLogMaxSize")]  # fmt: skip
    assert rows["kubelet.containerLogMaxFiles"] == [(5, SOURCE_DEFAULT)]
    drop.write_text(KIND + "podLogsDir: /srv/pod-logs\n")
    res = kubegc(tmp_path, "--kubelet-config-dir", str(drop.parent), "-o", "json",
                 "config", "view", "gc", "logs")  # fmt: skip
    rows = config_rows(res)
    assert rows["gc.logs.pod-logs-dir"] == [
        ("/srv/pod-logs", f"kubelet config {drop}: podLogsDir")]  # fmt: skip
    assert "kubelet.containerLogMaxSize" not in rows  # gc logs does not judge rotation


def test_kubelet_files_records_what_was_read(tmp_path: Path) -> None:
    base = put(tmp_path, "var/lib/kubelet/config.yaml", KIND + "maxPods: 10\n")
    a = put(tmp_path, "d/10-a.conf", KIND + "maxPods: 20\n")
    b = put(tmp_path, "d/9-b.conf", KIND + "maxPods: 30\n")
    files = load_kubelet_files(None, tmp_path, a.parent, running=None)
    assert files.base == base and [p for p, _ in files.dropins] == [a, b]
    assert files.doc["maxPods"] == 30 and files.source_of("maxPods") == str(b)
    assert files.source_of("podLogsDir") == "defaults"


def test_the_running_kubelets_flags_override_the_dropins(tmp_path: Path) -> None:
    """kubeletConfigFlagPrecedence: the command line is parsed again over the merged files."""
    put(tmp_path, "etc/k/kubelet.yaml", KIND + "imageGCLowThresholdPercent: 60\n")
    put(tmp_path, "etc/k/conf.d/50-gc.conf", KIND + "imageGCHighThresholdPercent: 90\n"
        "imageMinimumGCAge: 5m\n")  # fmt: skip
    argv = ["kubelet", "--config", "/etc/k/kubelet.yaml", "--config-dir=/etc/k/conf.d",
            "--image-gc-high-threshold=75", "--minimum_image_ttl_duration", "1m"]  # fmt: skip
    kcfg = load_kubelet_config(None, tmp_path, running=(7, argv))
    assert kcfg.image_gc == {
        "image_gc_high_threshold": 75,
        "image_gc_low_threshold": 60,
        "minimum_image_ttl_duration": 60,
    }
    flag = "kubelet command line (pid 7): --image-gc-high-threshold"
    assert kcfg.sources["image_gc_high_threshold"] == flag
    bad = [*argv, "--image-gc-low-threshold=lots"]
    with pytest.raises(BadInput, match="--image-gc-low-threshold: 'lots' must be an integer"):
        load_kubelet_config(None, tmp_path, running=(7, bad))


def test_gc_containers_takes_the_pod_log_root_from_a_dropin_and_says_so(tmp_path: Path) -> None:
    from tests.unit.memorycri import MemoryCri, run_cli, use_runtime

    base = put(tmp_path, "var/lib/kubelet/config.yaml", KIND)
    drop = put(tmp_path, "etc/kubelet.conf.d/10-logs.conf", KIND + "podLogsDir: /srv/pod-logs\n")
    (tmp_path / "srv/pod-logs").mkdir(parents=True)
    pods = put(tmp_path, "pods.json", '{"kind": "PodList", "items": []}')
    with use_runtime(MemoryCri({}, {})):
        code, _, err = run_cli(["--host-root", str(tmp_path), "--pods-file", str(pods), "-v",
                                "--kubelet-config-dir", str(drop.parent),
                                "--state-dir", str(tmp_path / "state"),
                                "gc", "containers", "--dry-run"])  # fmt: skip
    assert f"kubelet config {base} + 1 drop-in in {drop.parent} " in err, err
    assert f"(podLogsDir /srv/pod-logs from {drop})" in err and code == 0, err


def test_a_multi_kind_command_reads_the_kubelet_config_once(tmp_path: Path) -> None:
    """Within `kubelet_config_once` (`reclaim`, `gc all`) the kubelet's configuration is read
    once per run's settings and every later call gets that reading, even after the file
    changed; outside it (the agent's cycles, single commands) each call reads the file anew;
    other settings get a reading of their own."""
    from kubegc_cli.core.settings import Settings
    from kubegc_cli.node.host.kubelet import kubelet_config_for, kubelet_config_once

    config = tmp_path / "config.yaml"
    config.write_text("kind: KubeletConfiguration\npodLogsDir: /logs/one\n")
    s = Settings(kubelet_config=config, host_root=tmp_path)
    other = Settings(kubelet_config=config, host_root=tmp_path)
    with kubelet_config_once():
        assert kubelet_config_for(s).pod_logs_dir == "/logs/one"
        config.write_text("kind: KubeletConfiguration\npodLogsDir: /logs/two\n")
        assert kubelet_config_for(s).pod_logs_dir == "/logs/one"  # the run's one reading
        assert kubelet_config_for(other).pod_logs_dir == "/logs/two"
    assert kubelet_config_for(s).pod_logs_dir == "/logs/two"  # outside: read anew


# --- the kubelet's --pod-infra-container-image -----------------------------------------------


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ('KUBELET_KUBEADM_ARGS="--a=1 --b"\n', "--a=1 --b"),
        ("KUBELET_KUBEADM_ARGS='--a'\n", "--a"),
        ("KUBELET_KUBEADM_ARGS=--a\nKUBELET_KUBEADM_ARGS=--b\n", "--b"),
        ("# KUBELET_KUBEADM_ARGS=--a\n; KUBELET_KUBEADM_ARGS=--b\n", None),
        ("OTHER=--a\n", None),
        (' KUBELET_KUBEADM_ARGS = "--a" \n', "--a"),
    ],
)
def test_env_file_value(text: str, want: str | None) -> None:
    assert env_file_value(text, "KUBELET_KUBEADM_ARGS") == want


def flags_file(host: Path, path: str, text: str) -> None:
    f = host / path.lstrip("/")
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(text)


def test_the_pod_infra_image_is_read_where_kubeadms_drop_in_reads_the_kubelets_flags(
    tmp_path: Path,
) -> None:
    """kubeadm-flags.env, then /etc/default/kubelet (later on the command line: it wins);
    none given: None; the running kubelet's command line, when seen, is what is in force."""
    host = tmp_path / "host"
    host.mkdir()
    assert kubelet_pod_infra_image(host, running=None) is None
    flags_file(host, "/var/lib/kubelet/kubeadm-flags.env",
               'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///x.sock '
               '--pod-infra-container-image=registry.k8s.io/pause:3.6"\n')  # fmt: skip
    assert kubelet_pod_infra_image(host, running=None) == (
        "registry.k8s.io/pause:3.6",
        "/var/lib/kubelet/kubeadm-flags.env: KUBELET_KUBEADM_ARGS",
    )
    flags_file(
        host,
        "/etc/default/kubelet",
        "KUBELET_EXTRA_ARGS=--pod-infra-container-image example.com/pause:1\n",
    )
    assert kubelet_pod_infra_image(host, running=None) == (
        "example.com/pause:1", "/etc/default/kubelet: KUBELET_EXTRA_ARGS"
    )  # fmt: skip
    argv = ["/usr/bin/kubelet", "--pod-infra-container-image=registry.k8s.io/pause:3.9"]
    assert kubelet_pod_infra_image(host, running=(42, argv)) == (
        "registry.k8s.io/pause:3.9", "the kubelet's command line (pid 42)"
    )  # fmt: skip
    assert kubelet_pod_infra_image(host, running=(42, ["/usr/bin/kubelet"])) is None


def test_a_flags_file_that_cannot_be_read_is_passed_over(tmp_path: Path) -> None:
    host = tmp_path / "host"
    (host / "var/lib/kubelet/kubeadm-flags.env").mkdir(parents=True)  # a directory
    flags_file(host, "/etc/sysconfig/kubelet",
               "KUBELET_EXTRA_ARGS=--pod-infra-container-image=a/pause:1\n")  # fmt: skip
    assert kubelet_pod_infra_image(host, running=None) == (
        "a/pause:1", "/etc/sysconfig/kubelet: KUBELET_EXTRA_ARGS"
    )  # fmt: skip

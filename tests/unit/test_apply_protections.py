"""`kubegc apply FILE` keeps what kubegc's safety rules and the node's protections keep,
whatever the plan file says: the newest records and the sandbox of a terminated pod that still
exists, the config file's `gc.images.keep`, images that cannot be pulled again; what each
takes is `apply`'s own command line. And a plan file is read only up to its bound."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from kubegc_cli.cli.common import apply_command
from kubegc_cli.core.model import Image, Sandbox, SandboxState
from kubegc_cli.core.settings import Settings
from kubegc_cli.node import planfile
from kubegc_cli.node.planfile import MAX_PLAN_YAML_BYTES
from kubegc_cli.policy.containers import TERMINATED_GUARD_REASON
from tests.unit.factories import NOW, S, ctr
from tests.unit.memorycri import MemoryCri, run_cli, use_runtime

DIGEST = "sha256:" + "d" * 64


@pytest.fixture
def work(tmp_path: Path) -> Iterator[Path]:
    """A scratch directory (empty host root) with no runtime or kubeconfig from the caller."""
    (tmp_path / "host").mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("CONTAINER_RUNTIME_ENDPOINT", "KUBECONFIG", "KUBEGC_CONFIG")}  # fmt: skip
    with mock.patch.dict(os.environ, env, clear=True):
        yield tmp_path


def base(work: Path) -> list[str]:
    return ["--host-root", str(work / "host"), "--state-dir", str(work / "state"), "--now",
            "2027-01-15T08:00:00Z"]  # fmt: skip


def results(out: str) -> dict[str, tuple[str, str]]:
    return {a["id"]: (a["result"], a.get("error") or "") for a in json.loads(out)["actions"]}


# -- 1: the newest record of a pod that still exists ---------------------------------------


def terminated_node() -> MemoryCri:
    """A running pod `uid-live`, and a Succeeded pod `uid-t` that still exists: two dead
    attempts of its container (`t1` the newest, its record) and its NOTREADY sandbox."""
    cs = [
        ctr("live", uid="uid-live", state="RUNNING", age_s=2000),
        ctr("t0", uid="uid-t", attempt=0, age_s=900),
        ctr("t1", uid="uid-t", attempt=1, age_s=600),
    ]
    sbs = [
        Sandbox("sb-uid-live", "pod-uid-live", "default", "uid-live", 0, SandboxState.READY,
                NOW - 2000 * S),
        Sandbox("sb-uid-t", "pod-uid-t", "default", "uid-t", 0, SandboxState.NOTREADY,
                NOW - 1000 * S),
    ]  # fmt: skip
    return MemoryCri({c.id: c for c in cs}, {sb.id: sb for sb in sbs})


def pods_file(work: Path) -> Path:
    """The pod source: the running pod and the Succeeded one, neither deleted."""
    doc = {"kind": "List", "items": [
        {"kind": "Pod", "metadata": {"uid": "uid-live", "name": "pod-uid-live",
                                     "namespace": "default"},
         "status": {"phase": "Running", "containerStatuses": [{"state": {"running": {}}}]}},
        {"kind": "Pod", "metadata": {"uid": "uid-t", "name": "pod-uid-t", "namespace": "default"},
         "status": {"phase": "Succeeded"}},
    ]}  # fmt: skip
    f = work / "pods.json"
    f.write_text(json.dumps(doc))
    return f


def saved_terminated_plan(work: Path, cri: MemoryCri) -> Path:
    """`gc all --include-terminated-pods --plan-out`, then the file edited to say the flag was
    not given (`include_terminated_pods: false`): the plan still removes both records of the
    Succeeded pod and its sandbox."""
    f = work / "plan.json"
    with use_runtime(cri):
        code, _, err = run_cli([*base(work), "--pods-file", str(pods_file(work)), "gc", "all",
                                "--include-terminated-pods", "--plan-out", str(f)])  # fmt: skip
    assert code == 0, err
    doc = json.loads(f.read_text())
    assert {(a["id"], a["rule"]) for a in doc["actions"]} == {
        ("t0", "terminated-pod"), ("t1", "terminated-pod"), ("sb-uid-t", "terminated-pod"),
    }  # fmt: skip
    doc["policy"]["containers"]["include_terminated_pods"] = False
    doc["policy"]["sandboxes"]["include_terminated_pods"] = False
    f.write_text(json.dumps(doc))
    return f


def test_apply_keeps_a_terminated_pods_newest_record_and_sandbox_without_its_own_flag(
    work: Path,
) -> None:
    """The pod object exists: without `apply --include-terminated-pods` its newest dead
    container (its record) and its sandbox stay, whatever the file says; the older attempt
    goes (as `crictl rm` would: it is no record)."""
    cri = terminated_node()
    f = saved_terminated_plan(work, cri)
    with use_runtime(cri):
        code, out, err = run_cli([*base(work), "--pods-file", str(work / "pods.json"), "-o",
                                  "json", "apply", str(f), "--yes"])  # fmt: skip
    assert code == 0, err
    got = results(out)
    assert got["t0"][0] == "removed"
    assert got["t1"] == ("skipped", TERMINATED_GUARD_REASON)
    assert got["sb-uid-t"][0] == "skipped" and "--include-terminated-pods" in got["sb-uid-t"][1]
    assert cri.removed == ["t0"]


@pytest.mark.parametrize(
    ("flags", "gone"),
    [
        (["--include-terminated-pods"], {"t0", "t1", "sb-uid-t"}),
        (["--match-kubelet"], {"t0", "t1"}),  # the guard only: the sandbox still stays
    ],
)
def test_apply_takes_a_terminated_pods_records_with_the_flag_on_its_command_line(
    work: Path, flags: list[str], gone: set[str]
) -> None:
    cri = terminated_node()
    f = saved_terminated_plan(work, cri)
    with use_runtime(cri):
        code, _, err = run_cli([*base(work), "--pods-file", str(work / "pods.json"), "apply",
                                str(f), "--yes", *flags])  # fmt: skip
    assert code == 0, err
    assert set(cri.removed) == gone


def test_apply_keeps_a_terminated_pods_record_the_kept_one_of_which_vanished(
    work: Path,
) -> None:
    """Right before removing, the guard is re-applied to a fresh list: when the older attempt
    vanishes between the re-check and the removals, the one left is the record and stays."""
    cri = terminated_node()
    f = saved_terminated_plan(work, cri)
    doc = json.loads(f.read_text())
    doc["actions"] = [a for a in doc["actions"] if a["id"] == "t0"]  # only the older one
    f.write_text(json.dumps(doc))
    real = cri.list_containers
    calls = 0

    def listing(*args: Any, **kw: Any) -> Any:  # fault injection: t1 vanishes after observe
        nonlocal calls
        calls += 1
        if calls > 1:
            cri.containers.pop("t1", None)
        return real(*args, **kw)

    with use_runtime(cri), mock.patch.object(cri, "list_containers", listing):
        code, out, err = run_cli([*base(work), "--pods-file", str(work / "pods.json"), "-o",
                                  "json", "apply", str(f), "--yes"])  # fmt: skip
    assert code == 0, err
    assert results(out)["t0"] == ("skipped", TERMINATED_GUARD_REASON)
    assert cri.removed == []


# -- 2 and 3: gc.images.keep, and images that cannot be pulled again ------------------------


def image_node() -> MemoryCri:
    return MemoryCri(containers={}, sandboxes={}, images={
        "sha256:kept": Image("sha256:kept", ("registry.k8s.io/kept:1",),
                             (f"registry.k8s.io/kept@{DIGEST}",), size=100),
        "sha256:local": Image("sha256:local", ("localhost/built:1",),
                              (f"localhost/built@{DIGEST}",), size=200),
        "sha256:tar": Image("sha256:tar", ("docker.io/library/preloaded:1",), size=300),
        "sha256:app": Image("sha256:app", ("docker.io/library/app:1",),
                            (f"docker.io/library/app@{DIGEST}",), size=400),
    })  # fmt: skip


def tampered_image_plan(work: Path, cri: MemoryCri) -> Path:
    """An image plan saved without the config file's keep (so `sha256:kept` is planned) and
    with `--allow-unpullable`, then edited to say `keep: []` and `allow_unpullable: false`."""
    f = work / "images.json"
    with use_runtime(cri):
        code, _, err = run_cli([*base(work), "gc", "images", "--prune-unused",
                                "--minimum-image-ttl-duration", "0s", "--allow-unpullable",
                                "--plan-out", str(f)])  # fmt: skip
    assert code == 0, err
    doc = json.loads(f.read_text())
    assert {a["id"] for a in doc["actions"]} == set(cri.images)
    doc["policy"]["keep"], doc["policy"]["allow_unpullable"] = [], False
    f.write_text(json.dumps(doc))
    return f


def test_apply_keeps_images_of_the_config_files_keep_and_unpullable_ones(work: Path) -> None:
    cri = image_node()
    f = tampered_image_plan(work, cri)
    cfg = work / "kubegc.yaml"
    cfg.write_text("gc:\n  images:\n    keep: ['registry.k8s.io/*']\n")
    with use_runtime(cri):
        code, out, err = run_cli([*base(work), "--config", str(cfg), "-o", "json", "apply",
                                  str(f), "--yes"])  # fmt: skip
    assert code == 0, err
    got = results(out)
    assert got["sha256:kept"] == ("skipped", "matches the config file's gc.images.keep")
    for unpullable in ("sha256:local", "sha256:tar"):
        result, why = got[unpullable]
        assert result == "skipped" and "cannot be pulled again" in why, why
        assert "--allow-unpullable" in why
    assert got["sha256:app"][0] == "removed"
    assert sorted(cri.images) == ["sha256:kept", "sha256:local", "sha256:tar"]


def test_apply_allow_unpullable_on_its_command_line_lets_them_go(work: Path) -> None:
    cri = image_node()
    f = tampered_image_plan(work, cri)
    with use_runtime(cri):
        code, _, err = run_cli([*base(work), "apply", str(f), "--yes", "--allow-unpullable"])
    assert code == 0, err
    assert cri.images == {}  # no config file: nothing keeps registry.k8s.io/kept


def test_apply_keeps_an_image_that_gained_a_name_since_the_plan(work: Path) -> None:
    """The plan showed `app:1`; since, the same image was tagged `prod:7`: removing it would
    take a name nobody saw in the plan, so it is skipped as changed."""
    cri = image_node()
    f = tampered_image_plan(work, cri)
    app = cri.images["sha256:app"]
    cri.images["sha256:app"] = Image(app.id, (*app.repo_tags, "docker.io/library/prod:7"),
                                     app.repo_digests, size=app.size)  # fmt: skip
    with use_runtime(cri):
        code, out, err = run_cli([*base(work), "-o", "json", "apply", str(f), "--yes",
                                  "--allow-unpullable"])  # fmt: skip
    assert code == 0, err
    assert results(out)["sha256:app"] == (
        "skipped",
        "changed since the plan: now also named docker.io/library/prod:7",
    )
    assert "sha256:app" in cri.images and "sha256:kept" not in cri.images


# -- 4: the hint names every option the plan's protections came from -------------------------


def test_plan_out_hint_names_the_config_file_and_the_opt_ins(work: Path) -> None:
    cri = image_node()
    cfg = work / "kubegc.yaml"
    cfg.write_text("gc:\n  images:\n    keep: ['registry.k8s.io/*']\n")
    f = work / "images.json"
    with use_runtime(cri):
        code, _, err = run_cli([*base(work), "--config", str(cfg), "gc", "images",
                                "--prune-unused", "--minimum-image-ttl-duration", "0s",
                                "--allow-unpullable", "--plan-out", str(f)])  # fmt: skip
    assert code == 0, err
    hint = err.rstrip().splitlines()[-1].split("carry it out with: ")[1]
    assert hint.startswith(f"kubegc --config {cfg} ")
    assert hint.endswith(f"apply {f} --yes --allow-unpullable")


def test_apply_command_takes_the_opt_ins_of_a_gc_all_plan() -> None:
    policy = {"containers": {"match_kubelet": True, "include_terminated_pods": True},
              "sandboxes": {"include_terminated_pods": True}}  # fmt: skip
    got = apply_command(Settings(), "p.json", policy, Path("/etc/k.yaml"), "/srv/pods")
    assert got == (
        "kubegc --config /etc/k.yaml apply p.json --yes --pod-logs-dir /srv/pods "
        "--match-kubelet --include-terminated-pods"
    )


# -- 5: a plan file is read only up to its bound --------------------------------------------


def test_a_yaml_plan_past_its_bound_is_refused_before_it_is_parsed(work: Path) -> None:
    f = work / "big.yaml"
    f.write_text("# " + "x" * MAX_PLAN_YAML_BYTES + "\nkind: GCPlan\n")
    with mock.patch.object(planfile, "parse_yaml", side_effect=AssertionError("parsed")):
        code, out, err = run_cli([*base(work), "apply", str(f), "--yes"])
    assert (code, out) == (2, "")
    assert err == f"kubegc: error: cannot read plan file {f}: larger than 4 MiB\n"


def test_a_json_plan_past_its_bound_is_refused_from_its_size(work: Path) -> None:
    f = work / "big.json"
    with open(f, "wb") as out:
        out.truncate(planfile.MAX_PLAN_JSON_BYTES + 1)  # sparse: nothing to read
    with mock.patch("builtins.open", side_effect=AssertionError("read")):
        code, _, err = run_cli([*base(work), "apply", str(f), "--yes"])
    assert code == 2
    assert err == f"kubegc: error: cannot read plan file {f}: larger than 512 MiB\n"


def test_a_never_ending_pipe_is_read_only_up_to_the_bound(work: Path) -> None:
    """A FIFO whose writer never stops: apply stops reading one byte past the JSON bound
    (smaller here, to keep the test quick) and refuses it, holding no more than that."""
    fifo = work / "plan-pipe"
    os.mkfifo(fifo)
    written = 0
    stop = threading.Event()

    def writer() -> None:
        nonlocal written
        chunk = b"{" + b" " * (1 << 16)
        try:
            with open(fifo, "wb") as w:
                while not stop.is_set():
                    w.write(chunk)
                    written += len(chunk)
        except (BrokenPipeError, OSError):
            pass

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    limit = 8 << 20
    try:
        with mock.patch.object(planfile, "MAX_PLAN_JSON_BYTES", limit):
            code, _, err = run_cli([*base(work), "apply", str(fifo), "--yes"])
    finally:
        stop.set()
        t.join(5)
    assert code == 2 and err == f"kubegc: error: cannot read plan file {fifo}: larger than 8 MiB\n"
    assert written < limit + (4 << 20)  # the reader stopped; the pipe's buffer holds the rest


def test_a_yaml_plan_too_large_for_apply_is_not_written(work: Path, monkeypatch: Any) -> None:
    cri = image_node()
    f = work / "images.yaml"
    monkeypatch.setattr(planfile, "MAX_PLAN_YAML_BYTES", 100)
    with use_runtime(cri):
        code, _, err = run_cli([*base(work), "gc", "images", "--prune-unused",
                                "--plan-out", str(f)])  # fmt: skip
    assert code == 2 and "save it under a .json name" in err, err
    assert not f.exists()


def test_apply_keeps_a_pod_log_directory_written_to_since_the_plan(tmp_path: Path) -> None:
    """A deleted pod's log directory saved at what it held then (its containers' logs aside)
    is skipped when it holds more now: something wrote to it since the plan; one that holds
    the same goes, at what it holds now."""
    from kubegc_cli.commands.apply import recheck_saved_plan
    from kubegc_cli.core.model import NodeSnapshot
    from kubegc_cli.core.plan import LogAction, Plan, Result
    from kubegc_cli.core.pods import inventory_of
    from kubegc_cli.node.host.podlogs import pod_log_dir_usage

    logs = tmp_path / "var/log/pods"
    actions = []
    for name in ("same", "grown"):
        d = logs / f"ns_{name}_uid-{name}" / "c"
        d.mkdir(parents=True)
        (d / "0.log").write_bytes(b"x" * 5000)
        size = pod_log_dir_usage(str(d.parent)).bytes
        assert size
        actions.append(LogAction("pod-log-dir", f"/var/log/pods/{d.parent.name}", "", f"uid-{name}",
                                 "deleted-pod", "gone", bytes=size))  # fmt: skip
    (logs / "ns_grown_uid-grown/c/1.log").write_bytes(b"y" * 100_000)  # since the plan
    plan: Plan[Any] = Plan(kind="LogGCPlan", policy={}, now=NOW, actions=actions)
    recheck_saved_plan(plan, NodeSnapshot(captured_at=NOW), inventory_of([]),
                       host_root=tmp_path, pod_logs_root="/var/log/pods")  # fmt: skip
    got = {a.pod_uid: (a.result, a.error) for a in plan.actions}
    assert got["uid-same"] == (Result.PLANNED, "")
    result, why = got["uid-grown"]
    assert result is Result.SKIPPED and why.startswith("changed since the plan: "), why

    # a line appended after the plan observed the node: the same blocks, a later write
    import copy
    import time

    planned_at = time.time_ns()
    time.sleep(0.02)
    with (logs / "ns_same_uid-same/c/0.log").open("ab") as f:
        f.write(b"a late line\n")
    again: Plan[Any] = Plan(kind="LogGCPlan", policy={}, now=planned_at,
                            actions=[copy.copy(actions[0])])  # fmt: skip
    again.actions[0].result, again.actions[0].error = Result.PLANNED, ""
    recheck_saved_plan(again, NodeSnapshot(captured_at=planned_at), inventory_of([]),
                       host_root=tmp_path, pod_logs_root="/var/log/pods")  # fmt: skip
    [late] = again.actions
    assert late.result is Result.SKIPPED and "written to at" in late.error, late.error

"""deploy/: the Kubernetes manifests against the API schemas, their RBAC against the API calls
kubegc really makes (the manifests' own command lines run against the recorded API server),
the systemd units with `systemd-analyze verify`, and the Dockerfile."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from kubegc_cli import __version__
from kubegc_cli.cli.main import main
from tests.unit.hostfixtures import (
    MOUNTINFO_V1,
    V1_ROOT,
    put,
    write_meminfo,
    write_mountinfo,
    write_pid_files,
    write_v1_cgroup,
)
from tests.unit.recorded_api import RecordedApi, api_pod, serve_recorded_api

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "kubernetes"
SYSTEMD = ROOT / "deploy" / "systemd"
K8S_VERSION = "1.30"  # the oldest Kubernetes release the manifests are checked against
MANIFESTS = ["crd-nodegcreport.yaml", "namespace.yaml", "rbac.yaml", "daemonset.yaml",
             "cronjob-gc-node.yaml", "cronjob-evict-prune.yaml"]  # fmt: skip
MiB = 1 << 20
NODE = "node-a"
ORPHAN_UID = "0c7a1a52-5d1e-4b8b-9a51-2f0e7d0b1c9e"


def docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((K8S / name).read_text()) if d]


def all_docs() -> list[dict[str, Any]]:
    return [d for name in MANIFESTS for d in docs(name)]


def find(kind: str, name: str) -> dict[str, Any]:
    [doc] = [d for d in all_docs() if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


def pod_spec(workload: dict[str, Any]) -> dict[str, Any]:
    spec = workload["spec"]
    if workload["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    spec = spec["template"]["spec"]
    assert isinstance(spec, dict)
    return spec


def workloads() -> list[dict[str, Any]]:
    return [d for d in all_docs() if d["kind"] in ("DaemonSet", "CronJob")]


def containers(workload: dict[str, Any]) -> list[dict[str, Any]]:
    spec = pod_spec(workload)
    return [*spec.get("initContainers", []), *spec["containers"]]


# --- schemas --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", MANIFESTS)
def test_manifests_are_valid_against_the_kubernetes_schemas(name: str) -> None:
    found = docs(name)
    assert found
    for doc in found:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_kustomization_lists_the_cluster_wide_manifests() -> None:
    kust = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert sorted(kust["resources"]) == sorted(set(MANIFESTS) - {"cronjob-gc-node.yaml"})
    assert {p.name for p in K8S.glob("*.yaml")} == {*MANIFESTS, "kustomization.yaml"}


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is needed for node-cronjobs.sh")
def test_node_cronjobs_render_one_valid_cronjob_per_node() -> None:
    long = "ip-10-0-12-34.eu-central-1.compute.internal.very-long-example-name"
    out = subprocess.run(["bash", str(K8S / "node-cronjobs.sh"), NODE, long],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    rendered = [d for d in yaml.safe_load_all(out) if d]
    assert [pod_spec(d)["nodeName"] for d in rendered] == [NODE, long]
    for d in rendered:
        kubernetes_validate.validate(d, K8S_VERSION, strict=True)
        name = d["metadata"]["name"]
        assert len(name) <= 52 and re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name), name
        assert "NODE_NAME_HERE" not in yaml.safe_dump(d)
    assert rendered[0]["metadata"]["name"] == f"kubegc-gc-{NODE}"


# --- what the workloads are given -----------------------------------------------------------


def test_node_workloads_have_host_mounts_tolerations_priority_and_resources() -> None:
    priority = {d["metadata"]["name"] for d in all_docs() if d["kind"] == "PriorityClass"}
    node_workloads = [w for w in workloads() if w["metadata"]["name"] != "kubegc-evict-prune"]
    assert {w["kind"] for w in node_workloads} == {"DaemonSet", "CronJob"}
    for w in node_workloads:
        spec = pod_spec(w)
        assert {"operator": "Exists"} in spec["tolerations"]  # every taint
        assert spec["priorityClassName"] in priority
        host_paths = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"] if "hostPath" in v}
        assert {"/", "/var/lib/kubelet", "/var/log", "/run/containerd"} <= set(host_paths.values())
        for c in containers(w):
            args = c["args"]
            assert args[0] == "kubegc" and "--host-root=/host" in args
            mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
            assert host_paths[mounts["/host"]["name"]] == "/" and mounts["/host"]["readOnly"]
            for path in ("/host/var/lib/kubelet", "/host/var/log", "/host/run/containerd"):
                assert path in mounts, (w["metadata"]["name"], path)
            assert c["resources"]["requests"] and c["resources"]["limits"]["memory"]
            sc = c["securityContext"]
            assert sc["privileged"] is False and sc["allowPrivilegeEscalation"] is False
            assert sc["capabilities"]["drop"] == ["ALL"]
            if any("$(NODE_NAME)" in a for a in args):
                env = {e["name"]: e for e in c["env"]}
                assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"


def test_the_image_is_this_version_and_the_dockerfile_builds_it_from_source() -> None:
    for w in workloads():
        for c in containers(w):
            assert c["image"] == f"kubegc:{__version__}"
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim$", dockerfile, re.M)
    assert "pip install ." in dockerfile
    for src in re.findall(r"^COPY (.+) \S+$", dockerfile, re.M):
        for part in src.split():
            assert (ROOT / part).exists(), part


# --- RBAC against the calls -----------------------------------------------------------------

VERBS = {"POST": "create", "DELETE": "delete", "PATCH": "patch", "PUT": "update"}


def rbac_request(method: str, path: str) -> tuple[str, str, str | None]:
    """(verb, resource, namespace) of an API call, as the RBAC authorizer sees it (namespace
    None for a cluster-scoped object or a list across all namespaces)."""
    parts = path.strip("/").split("/")
    assert parts[:2] == ["api", "v1"], path  # the core group is all kubegc uses
    rest, namespace = parts[2:], None
    if rest[0] == "namespaces" and len(rest) > 2:
        namespace, rest = rest[1], rest[2:]
    resource, named = rest[0], len(rest) > 1
    verb = ("get" if named else "list") if method == "GET" else VERBS[method]
    return verb, resource, namespace


def granted(service_account: str) -> set[tuple[str, str, str | None]]:
    """What the manifests grant `service_account` (in namespace kubegc): (verb, resource,
    namespace) — namespace None means every namespace and cluster scope."""
    out: set[tuple[str, str, str | None]] = set()
    everything = all_docs()
    for binding in everything:
        if binding["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        subject = {"kind": "ServiceAccount", "name": service_account, "namespace": "kubegc"}
        if subject not in binding["subjects"]:
            continue
        ref = binding["roleRef"]
        scope = (
            None if binding["kind"] == "ClusterRoleBinding" else binding["metadata"]["namespace"]
        )
        [role] = [
            d for d in everything
            if (d["kind"], d["metadata"]["name"]) == (ref["kind"], ref["name"])
            and (ref["kind"] == "ClusterRole" or d["metadata"]["namespace"] == scope)
        ]  # fmt: skip
        for rule in role["rules"]:
            assert rule["apiGroups"] == [""] and "resourceNames" not in rule
            assert "*" not in rule["verbs"] and "*" not in rule["resources"]
            out |= {(v, r, scope) for v in rule["verbs"] for r in rule["resources"]}
    return out


def allowed(grants: set[tuple[str, str, str | None]], req: tuple[str, str, str | None]) -> bool:
    verb, resource, namespace = req
    return (verb, resource, None) in grants or (
        namespace is not None and (verb, resource, namespace) in grants
    )


def _host(root: Path) -> Path:
    """A node's host tree: memory.available 50Mi of 1Gi (below the kubelet's default 100Mi),
    an orphaned pod directory, no CRI runtime socket."""
    write_mountinfo(root, MOUNTINFO_V1)
    write_meminfo(root, 1_048_576, mem_available_kb=50 * 1024)
    write_v1_cgroup(root, V1_ROOT, usage=984 * MiB, inactive_file=10 * MiB)
    write_pid_files(root, pid_max=32768, threads_max=100_000, loadavg="0.1 0.2 0.3 2/1000 42")
    put(root, f"/var/lib/kubelet/pods/{ORPHAN_UID}/etc-hosts", "127.0.0.1 localhost\n")
    (root / "var/log/pods").mkdir(parents=True)
    return root


def local_args(args: list[str], tmp: Path, host: Path, kubeconfig: Path) -> list[str]:
    """A manifest's command line, made to run here: /host → the fixture tree, the hostPath
    directories → tmp, $(NODE_NAME) → node-a, in-cluster credentials → the recorded API."""
    assert args[0] == "kubegc"
    out = []
    for a in args[1:]:
        a = a.replace("$(NODE_NAME)", NODE).replace("--host-root=/host", f"--host-root={host}")
        a = a.replace("=/textfile/", f"={tmp}/").replace("=/var/lib/kubegc", f"={tmp}/state")
        a = a.replace("=/dev/shm/kubegc-state", f"={tmp}/shm-state")
        out.append(a)
    return ["--kubeconfig", str(kubeconfig), *out]


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    _, err = capsys.readouterr()
    return int(exc.value.code or 0), err


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[RecordedApi, Path]]:
    with serve_recorded_api(tmp_path) as (recorded, kubeconfig):
        recorded.honor_selectors = True
        recorded.pages = [[api_pod("web-1", phase="Running", reason=""), api_pod("old-1")]]
        recorded.nodes[NODE] = {"kind": "Node", "apiVersion": "v1", "metadata": {"name": NODE},
                                "status": {"allocatable": {"memory": "900Mi"}}}  # fmt: skip
        yield recorded, kubeconfig


#: Commands an operator runs by hand in the DaemonSet's pod (`kubectl exec`), as its account.
BY_HAND = [["kubegc", "--host-root=/host", "--node-name=$(NODE_NAME)", "memory", "available"]]


def test_rbac_rules_are_exactly_the_calls_each_account_makes(
    api: tuple[RecordedApi, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each workload's own command lines run against the recorded API; every call must be
    allowed to its ServiceAccount, and every rule granted must be used by some call."""
    recorded, kubeconfig = api
    host = _host(tmp_path / "host")
    calls: dict[str, set[tuple[str, str, str | None]]] = {}
    codes: dict[str, int] = {}
    runs = [(pod_spec(w)["serviceAccountName"], c["args"]) for w in workloads()
            for c in containers(w)]  # fmt: skip
    runs += [("kubegc", args) for args in BY_HAND]
    for account, args in runs:
        recorded.calls.clear()
        code, _ = run_cli(local_args(args, tmp_path, host, kubeconfig), capsys)
        start = next(i for i, a in enumerate(args) if a in ("gc", "evict", "residue", "memory"))
        command = " ".join(args[start : start + 2])
        codes[command] = code
        assert recorded.unexpected == [], (command, recorded.unexpected)
        made = {rbac_request(m, p) for m, p in recorded.calls}
        denied = [r for r in made if not allowed(granted(account), r)]
        assert not denied, f"{command} as {account} needs {denied}: add them to rbac.yaml"
        calls.setdefault(account, set()).update(made)
    # what ran, and how it ended: the runtime is missing here, so gc and residue scan stop at 3
    assert codes == {"evict check": 1, "gc all": 3, "residue scan": 3, "memory available": 0,
                     "evict prune": 0}, codes  # fmt: skip
    for account, made in calls.items():
        unused = [g for g in granted(account) if not any(allowed({g}, r) for r in made)]
        assert not unused, f"{account} is granted {unused}, which no kubegc call uses"
    assert calls["kubegc"] == {("list", "pods", None), ("get", "nodes", None),
                               ("create", "events", "default")}  # fmt: skip
    assert calls["kubegc-prune"] == {("list", "pods", None), ("delete", "pods", "default")}
    reasons = sorted(e["reason"] for e in recorded.events)
    assert reasons == ["EvictionThresholdMet", "ResidueFound"]


def test_a_missing_permission_would_be_caught() -> None:
    grants = granted("kubegc")
    assert not allowed(grants, ("delete", "pods", "default"))
    assert not allowed(grants, ("create", "events", "kube-system"))
    assert allowed(grants, ("create", "events", "default"))
    assert rbac_request("GET", "/api/v1/pods") == ("list", "pods", None)
    assert rbac_request("GET", "/api/v1/nodes/n") == ("get", "nodes", None)
    assert rbac_request("POST", "/api/v1/namespaces/default/events") == (
        "create", "events", "default")  # fmt: skip


# --- systemd --------------------------------------------------------------------------------


SERVICES = ("kubegc-gc.service", "kubegc-residue.service")


def exec_lines(unit: str) -> list[list[str]]:
    lines = re.findall(r"^ExecStart=-?(.+)$", (SYSTEMD / unit).read_text(), re.M)
    return [line.split() for line in lines]


def entries(unit: str, key: str) -> list[str]:
    """The values of `key=` in `unit`, split on spaces."""
    text = (SYSTEMD / unit).read_text()
    return [v for line in re.findall(rf"^{key}=(.*)$", text, re.M) for v in line.split()]


def test_the_residue_report_runs_whatever_the_cleanup_did() -> None:
    """A oneshot unit stops at its first failing ExecStart, so `gc all` and `residue scan` are
    two units: the timer starts the cleanup, which pulls the report in with Wants= (Requires=,
    Requisite=, BindsTo= would cancel it on a failure) and the report is ordered after it.
    Each runs one command without `-`, so a failure stays its own unit's, visible."""
    assert [ln[-3:] for ln in exec_lines("kubegc-gc.service")] == [["gc", "all", "--yes"]]
    assert [ln[-2:] for ln in exec_lines("kubegc-residue.service")] == [["residue", "scan"]]
    for unit in SERVICES:
        assert not re.search(r"^ExecStart=-", (SYSTEMD / unit).read_text(), re.M), unit
        assert entries(unit, "Type") == ["oneshot"]
        for strong in ("Requires", "Requisite", "BindsTo", "PartOf", "OnFailure"):
            assert entries(unit, strong) == [], (unit, strong)
    assert entries("kubegc-gc.service", "Wants") == ["kubegc-residue.service"]
    assert "kubegc-gc.service" in entries("kubegc-residue.service", "After")
    assert entries("kubegc-gc.timer", "Unit") in ([], ["kubegc-gc.service"])


def test_systemd_units_verify(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed (apt-get install systemd)")
    kubegc = shutil.which("kubegc") or str(Path(__file__).resolve().parents[2] / ".venv/bin/kubegc")
    units = (*SERVICES, "kubegc-gc.timer")
    for unit in units:
        text = (SYSTEMD / unit).read_text().replace("/usr/local/bin/kubegc", kubegc)
        (tmp_path / unit).write_text(text)
    res = subprocess.run(
        [analyze, "verify", "--man=no", *(str(tmp_path / u) for u in units)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    # verify warns (unknown keys, bad values) on stderr but still exits 0
    assert [ln for ln in res.stderr.splitlines() if "kubegc-" in ln] == []


def test_systemd_command_lines_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The unit's kubegc command lines, on a fixture host without a runtime: every option is
    accepted (exit 3 is the missing runtime), and the metrics reach the textfile."""
    host = _host(tmp_path / "host")
    lines = [ln for unit in SERVICES for ln in exec_lines(unit)]
    assert [ln[0] for ln in lines] == ["/usr/local/bin/kubegc"] * 2
    prom = tmp_path / "kubegc.prom"
    for line in lines:
        args = [a.replace("/var/lib/node_exporter/textfile_collector/kubegc.prom", str(prom))
                for a in line[1:]]  # fmt: skip
        here = ["--host-root", str(host), "-r", "unix:///nonexistent/kubegc.sock",
                "--state-dir", str(tmp_path / "state"), "--pod-source", "none"]  # fmt: skip
        code, err = run_cli([*here, *args], capsys)
        assert code == 3, err
        assert "nonexistent/kubegc.sock" in err
    text = prom.read_text()
    assert 'kubegc_last_run_exit_code{command="gc all"} 3' in text
    assert 'kubegc_last_run_exit_code{command="residue scan"} 3' in text

"""deploy/: the Kubernetes manifests (the overlay and the CRD included) against the API
schemas of the last five Kubernetes minor releases kubernetes-validate ships, what the
workloads are given (host mounts, capabilities, priority, probes), the RBAC rules against
the list of calls they are for, the policy ConfigMap as a kubegc config file, the systemd
units with `systemd-analyze verify`, and the Containerfile. That the API server accepts and
admits them, and that each identity may make exactly its calls, is tests/api/test_rbac.py."""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import all_versions, major_minor

from kubegc_cli import __version__
from kubegc_cli.cli.main import main
from kubegc_cli.core.fleet import (
    Category,
    EvictCandidate,
    LastApply,
    NodeReport,
    SignalMargin,
    lease_name,
)
from tests.unit.hostfixtures import (
    MOUNTINFO_V1,
    V1_ROOT,
    put,
    write_meminfo,
    write_mountinfo,
    write_pid_files,
    write_v1_cgroup,
)

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "kubernetes"
APPLY_MODE = ROOT / "deploy" / "kubernetes-apply-mode"
SYSTEMD = ROOT / "deploy" / "systemd"
#: the last five Kubernetes minor releases whose schemas kubernetes-validate ships
K8S_VERSIONS = sorted({major_minor(v) for v in all_versions()},
                      key=lambda v: tuple(map(int, v.split("."))))[-5:]  # fmt: skip
MiB = 1 << 20
ORPHAN_UID = "0c7a1a52-5d1e-4b8b-9a51-2f0e7d0b1c9e"


def kustomization(directory: Path) -> dict[str, Any]:
    doc = yaml.safe_load((directory / "kustomization.yaml").read_text())
    assert isinstance(doc, dict)
    return doc


def manifest_files() -> list[Path]:
    """Every Kubernetes object file of deploy/kubernetes and its overlay (not the
    kustomizations, not the overlay's JSON patch)."""
    files = [*K8S.glob("*.yaml"), *APPLY_MODE.glob("*.yaml")]
    patches = {APPLY_MODE / p["path"] for p in kustomization(APPLY_MODE)["patches"]}
    return sorted(f for f in files if f.name != "kustomization.yaml" and f not in patches)


def docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def all_docs() -> list[dict[str, Any]]:
    return [d for path in manifest_files() for d in docs(path)]


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


def test_five_recent_kubernetes_releases_are_checked() -> None:
    assert len(K8S_VERSIONS) == 5 and K8S_VERSIONS[0] >= "1.33", K8S_VERSIONS


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("path", manifest_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_manifests_are_valid_against_the_kubernetes_schemas(path: Path, version: str) -> None:
    """Strict: an unknown field fails, as `kubectl apply --validate=strict` would."""
    found = docs(path)
    assert found
    for doc in found:
        kubernetes_validate.validate(doc, version, strict=True)


def test_a_wrong_field_would_be_caught() -> None:
    ds = find("DaemonSet", "kubegc-agent")
    bad = {**ds, "spec": {**ds["spec"], "updateStrategie": {}}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K8S_VERSIONS[-1], strict=True)


def test_the_kustomizations_list_every_manifest_and_the_crd_first() -> None:
    base = kustomization(K8S)["resources"]
    assert base[0] == "crd-nodegcreport.yaml"  # the agents write reports as soon as they start
    assert sorted(base) == sorted(
        p.name for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml"
    )
    overlay = kustomization(APPLY_MODE)
    assert overlay["resources"] == ["../kubernetes", "rbac-breaker.yaml"]
    [patch] = overlay["patches"]
    assert patch["target"]["kind"] == "DaemonSet" and (APPLY_MODE / patch["path"]).is_file()


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is needed for kustomize")
@pytest.mark.parametrize("directory", [K8S, APPLY_MODE], ids=["report", "apply"])
def test_kustomize_builds_valid_manifests(directory: Path) -> None:
    """What `kubectl apply -k` sends: built by kustomize (the overlay's JSON patch applied,
    its `test` operations holding), every object valid."""
    out = subprocess.run(["kubectl", "kustomize", str(directory)],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode == 0, out.stderr
    built = [d for d in yaml.safe_load_all(out.stdout) if d]
    [ds] = [d for d in built if d["kind"] == "DaemonSet"]
    mode = "--mode=report" if directory == K8S else "--mode=apply"
    assert mode in ds["spec"]["template"]["spec"]["containers"][0]["args"]
    for doc in built:
        for version in K8S_VERSIONS:
            kubernetes_validate.validate(doc, version, strict=True)


# --- what the workloads are given -----------------------------------------------------------

#: host path → (mounted read-only in report mode, the reason) — daemonset-agent.yaml says why
HOST_PATHS = {
    "/run/containerd": True,
    "/var/lib/kubelet": True,
    "/var/log/pods": True,
    "/var/log/containers": True,
    "/sys/fs/cgroup": True,
    "/proc": True,
    "/var/lib/cni": True,
    "/run/netns": True,
    "/run/kubegc": False,
    "/var/lib/kubegc": False,
}


def test_the_agent_runs_critical_in_kube_system_on_every_node() -> None:
    ds = find("DaemonSet", "kubegc-agent")
    spec = pod_spec(ds)
    assert ds["metadata"]["namespace"] == "kube-system"
    assert spec["priorityClassName"] == "system-node-critical"
    assert spec["tolerations"] == [{"operator": "Exists"}]  # every taint, every effect
    assert spec["serviceAccountName"] == "kubegc-agent"
    [c] = containers(ds)
    assert c["args"][0] == "kubegc"
    agent = c["args"][c["args"].index("agent") :]
    assert agent == ["agent", "--mode=report", "--interval=5m", "--listen=:9808"]
    assert "--node-name=$(NODE_NAME)" in c["args"] and "--host-root=/host" in c["args"]
    assert "--config=/etc/kubegc/policy/config.yaml" in c["args"]
    env = {e["name"]: e for e in c["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    assert env["NODE_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.hostIP"
    # the node's pods from its own kubelet, its certificate verified
    assert "--kubelet-url=https://$(NODE_IP):10250" in c["args"]
    assert "--kubelet-server-name=$(NODE_NAME)" in c["args"]
    assert "--kubelet-ca=/host/var/lib/kubelet/pki/kubelet.crt" in c["args"]
    assert "--pod-source=api" not in c["args"] and "--insecure" not in " ".join(c["args"])
    [port] = c["ports"]
    assert port["containerPort"] == 9808
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": port["name"]}
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": port["name"]}
    assert c["resources"]["requests"].keys() == c["resources"]["limits"].keys() == {"cpu", "memory"}


@pytest.mark.parametrize("mode", ["report", "apply"])
def test_the_agent_command_line_is_one_kubegc_accepts(mode: str) -> None:
    """The DaemonSet's arguments (and the apply-mode patch's) parsed by kubegc's own command
    tree: every global option and every `agent` flag exists and takes the value given."""
    from kubegc_cli.cli.main import cli
    from kubegc_cli.cli.options import collected

    [c] = containers(find("DaemonSet", "kubegc-agent"))
    args = list(c["args"][1:])
    if mode == "apply":
        ops = yaml.safe_load((APPLY_MODE / "daemonset-apply.yaml").read_text())
        for op in ops:
            index = op["path"].rpartition("/args/")[2]
            if op["op"] == "replace" and index.isdigit():
                assert args[int(index) - 1] == "--mode=report"  # what its test op checks
                args[int(index) - 1] = op["value"]
            elif op["op"] == "add" and op["path"].endswith("/args/-"):
                args.append(op["value"])
    split = args.index("agent")
    ctx = cli.make_context("kubegc", args[:split])
    agent = cli.get_command(ctx, "agent")
    assert agent is not None
    sub = agent.make_context("agent", args[split + 1 :], parent=ctx)
    assert sub.params["mode"] == mode and sub.params["listen"] == ":9808"
    given = collected(sub)
    assert given["config"] == "/etc/kubegc/policy/config.yaml" and given["events"] is True
    assert (given["host_root"], given["node_name"]) == ("/host", "$(NODE_NAME)")
    sa_ca = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
    assert given["kubelet_ca"] == ("/host/var/lib/kubelet/pki/kubelet.crt", sa_ca)
    if mode == "apply":
        assert sub.params["apply_slots"] == 1


def test_the_agent_mounts_only_what_it_reads_and_drops_every_capability() -> None:
    ds = find("DaemonSet", "kubegc-agent")
    spec = pod_spec(ds)
    [c] = containers(ds)
    host = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"] if "hostPath" in v}
    assert "/" not in host.values()
    assert sorted(host.values()) == sorted(HOST_PATHS)
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    for name, path in host.items():
        m = mounts[name]
        expected = "/var/lib/kubegc" if path == "/var/lib/kubegc" else f"/host{path}"
        assert m["mountPath"] == expected, name
        assert bool(m.get("readOnly")) is HOST_PATHS[path], path
    [policy] = [v for v in spec["volumes"] if "configMap" in v]
    assert policy["configMap"]["name"] == "kubegc-policy"
    assert mounts[policy["name"]]["mountPath"] == "/etc/kubegc/policy"
    sc = c["securityContext"]
    assert sc["capabilities"] == {"drop": ["ALL"]}  # none added
    assert sc["privileged"] is False and sc["allowPrivilegeEscalation"] is False
    assert sc["readOnlyRootFilesystem"] is True and sc["seccompProfile"]["type"] == "RuntimeDefault"


def test_the_prune_cronjob_needs_no_host_and_no_root() -> None:
    cron = find("CronJob", "kubegc-evict-prune")
    spec = pod_spec(cron)
    assert "volumes" not in spec and spec["securityContext"]["runAsNonRoot"] is True
    [c] = containers(cron)
    assert c["args"][c["args"].index("evict") :] == [
        "evict", "prune", "--all-nodes", "--older-than=1h", "--yes"]  # fmt: skip
    assert c["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    ns = find("Namespace", cron["metadata"]["namespace"])
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    _, err = capsys.readouterr()
    return int(exc.value.code or 0), err


def test_the_policy_configmap_is_a_kubegc_config_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its config.yaml is read as kubegc reads --config (a key kubegc does not know would be
    exit 2, naming it)."""
    text = find("ConfigMap", "kubegc-policy")["data"]["config.yaml"]
    good = tmp_path / "config.yaml"
    good.write_text(text)
    code, err = run_cli(["--config", str(good), "config", "view"], capsys)
    assert code == 0, err
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("max-delete: 500", "max-deletes: 500", 1))
    code, err = run_cli(["--config", str(bad), "config", "view"], capsys)
    assert code == 2 and "max-deletes" in err, err


def test_the_image_is_this_version_and_the_containerfile_builds_it_from_source() -> None:
    for w in workloads():
        for c in containers(w):
            assert c["image"] == f"kubegc:{__version__}"
    assert not (ROOT / "Dockerfile").exists()
    containerfile = (ROOT / "Containerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim$", containerfile, re.M)
    assert "pip install ." in containerfile and "registry is yours" in containerfile
    assert re.search(r"^EXPOSE 9808$", containerfile, re.M)
    ignored = [ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines()
               if ln.strip() and not ln.startswith("#")]  # fmt: skip
    for src in re.findall(r"^COPY (.+) \S+$", containerfile, re.M):
        for part in src.split():
            assert (ROOT / part).exists(), part
            # the build context (podman reads .dockerignore too) keeps what is copied
            assert not any(fnmatch.fnmatch(part, pattern) for pattern in ignored), part


# --- RBAC -----------------------------------------------------------------------------------

Rule = tuple[str, str, str, str | None, tuple[str, ...]]  # verb, group, resource, ns, names

#: Every (verb, API group, resource, namespace or None for cluster-wide, resourceNames) each
#: ServiceAccount is granted — rbac.yaml's comment says what each is for, tests/api/test_rbac.py
#: makes each call for real.
SLOTS = tuple(lease_name(i) for i in range(10))
GRANTS: dict[tuple[str, str], set[Rule]] = {
    ("kube-system", "kubegc-agent"): {
        ("get", "", "nodes", None, ()),
        ("get", "", "nodes/pods", None, ()),
        ("get", "", "nodes/configz", None, ()),
        *{(v, "kubegc.io", "nodegcreports", None, ()) for v in ("get", "create", "update")},
        ("update", "kubegc.io", "nodegcreports/status", None, ()),
        ("list", "kubegc.io", "nodegcreports", None, ()),  # apply mode: the breaker
        ("create", "", "events", "default", ()),
        ("get", "coordination.k8s.io", "leases", "kubegc", SLOTS),
        ("update", "coordination.k8s.io", "leases", "kubegc", SLOTS),
        ("create", "coordination.k8s.io", "leases", "kubegc", ()),
    },
    ("kubegc", "kubegc-prune"): {
        ("list", "", "pods", None, ()),
        ("delete", "", "pods", None, ()),
    },
}


def granted(namespace: str, service_account: str) -> set[Rule]:
    """What the manifests (and the overlay) grant the ServiceAccount."""
    out: set[Rule] = set()
    everything = all_docs()
    subject = {"kind": "ServiceAccount", "name": service_account, "namespace": namespace}
    for binding in everything:
        if (
            binding["kind"] not in ("ClusterRoleBinding", "RoleBinding")
            or subject not in binding["subjects"]
        ):
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
            assert "*" not in rule["verbs"] and "*" not in rule["resources"], rule
            names = tuple(rule.get("resourceNames", ()))
            out |= {(v, g, r, scope, names) for v in rule["verbs"] for g in rule["apiGroups"]
                    for r in rule["resources"]}  # fmt: skip
    return out


@pytest.mark.parametrize("account", list(GRANTS), ids=lambda a: a[1])
def test_rbac_grants_exactly_the_calls_each_account_makes(account: tuple[str, str]) -> None:
    assert granted(*account) == GRANTS[account]


def test_no_service_account_is_bound_that_no_workload_uses() -> None:
    used = {(w["metadata"]["namespace"], pod_spec(w)["serviceAccountName"]) for w in workloads()}
    accounts = {(d["metadata"]["namespace"], d["metadata"]["name"]) for d in all_docs()
                if d["kind"] == "ServiceAccount"}  # fmt: skip
    assert used == accounts == set(GRANTS)


def host_tree(root: Path) -> Path:
    """A node's host tree: memory.available 50Mi of 1Gi (below the kubelet's default 100Mi),
    an orphaned pod directory, no CRI runtime socket."""
    write_mountinfo(root, MOUNTINFO_V1)
    write_meminfo(root, 1_048_576, mem_available_kb=50 * 1024)
    write_v1_cgroup(root, V1_ROOT, usage=984 * MiB, inactive_file=10 * MiB)
    write_pid_files(root, pid_max=32768, threads_max=100_000, loadavg="0.1 0.2 0.3 2/1000 42")
    put(root, f"/var/lib/kubelet/pods/{ORPHAN_UID}/etc-hosts", "127.0.0.1 localhost\n")
    (root / "var/log/pods").mkdir(parents=True)
    return root


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


def test_the_units_start_on_a_node_without_node_exporters_directory() -> None:
    """systemd refuses to start a unit whose ReadWritePaths= names a missing path unless the
    path is marked "-": the textfile directory is (tests/node/test_unattended.py runs the
    command lines without it: exit 0, one warning)."""
    for unit in SERVICES:
        textfile = [p for p in entries(unit, "ReadWritePaths") if "textfile_collector" in p]
        assert textfile == ["-/var/lib/node_exporter/textfile_collector"], unit
        [line] = exec_lines(unit)
        assert "/var/lib/node_exporter/textfile_collector/kubegc.prom" in line, unit


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
    host = host_tree(tmp_path / "host")
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


def _outside(value: Any, schema: dict[str, Any], where: str = "status") -> list[str]:
    """Where `value` breaks `schema`'s bounds (maxLength, maxItems, maxProperties), recursively;
    and every string the schema leaves unbounded (a string without maxLength or enum)."""
    bad = []
    if schema.get("type") == "string" and "enum" not in schema and "maxLength" not in schema:
        bad.append(f"{where}: a string without maxLength")
    if isinstance(value, str) and len(value) > schema.get("maxLength", len(value)):
        bad.append(f"{where}: {len(value)} characters, more than {schema['maxLength']}")
    if isinstance(value, list):
        if len(value) > schema.get("maxItems", len(value)):
            bad.append(f"{where}: {len(value)} items, more than {schema['maxItems']}")
        bad += [
            x for i, v in enumerate(value) for x in _outside(v, schema["items"], f"{where}[{i}]")
        ]
    if isinstance(value, dict):
        if len(value) > schema.get("maxProperties", len(value)):
            bad.append(f"{where}: {len(value)} keys, more than {schema['maxProperties']}")
        for k, v in value.items():
            sub = schema.get("properties", {}).get(k) or schema.get("additionalProperties")
            assert isinstance(sub, dict), f"{where}.{k} is not in the schema"
            bad += _outside(v, sub, f"{where}.{k}")
    return bad


def test_a_report_of_any_size_is_cut_to_what_the_crd_accepts() -> None:
    crd = docs(K8S / "crd-nodegcreport.yaml")[0]
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    long = "x" * 100_000
    huge = NodeReport(
        node=long, observed_at=long, mode="apply", version=long,
        categories=tuple(Category(long + str(i), 1, 1) for i in range(100)), reclaimable=1,
        signals=tuple(SignalMargin(long, long, 1, 1, False) for _ in range(100)),
        conditions=(long,) * 100, evict_first=(EvictCandidate(long, long, long),) * 100,
        residue={f"{long}{i}": i for i in range(100)},
        last_apply=LastApply(long, (long,) * 100, 1, 1, 1, long), error=long, paused=long,
    )  # fmt: skip
    status = huge.to_status()
    assert _outside(status, schema) == []
    assert status["error"].endswith("…") and len(status["error"]) == 1024
    assert NodeReport.from_status(huge.node, status).same_as(huge)  # no write just for the cut

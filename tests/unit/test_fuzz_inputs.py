"""Bad input never gives a traceback: every parser, fuzzed through the command line.

Each input reaches kubegc the way a user gives it — a flag value or a file named by a flag —
through `kubegc_cli.cli.main.main`, against an in-memory runtime holding dead containers,
with `--yes`. Whatever hypothesis makes up, the answer is either a normal run or exactly one
line on stderr naming the bad value (or the file holding it), exit 2, and nothing removed.

The nastiest inputs found are kept as explicit cases at the end (`CORPUS`, and the files in
`tests/unit/corpus/`), so they stay fixed whatever hypothesis draws next time.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest import mock

import click
import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kubegc_cli.core.inputs import MAX_NESTING
from kubegc_cli.core.model import FilesystemUsage, Image, NodeSnapshot, Sandbox, SandboxState
from tests.unit.factories import NOW, S, ctr
from tests.unit.memorycri import MemoryCri, no_runtime, run_cli, use_runtime

CORPUS_DIR = Path(__file__).parent / "corpus"
#: Examples per property; `KUBEGC_FUZZ_EXAMPLES=5000 pytest tests/unit/test_fuzz_inputs.py`
#: searches harder.
FUZZ = settings(
    max_examples=int(os.environ.get("KUBEGC_FUZZ_EXAMPLES", "150")),
    deadline=None,
    # the same examples on every CI run (a run is judged on the code, not on the draw); a
    # run by hand searches afresh
    derandomize=os.environ.get("CI", "").lower() in ("1", "true", "yes"),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def node() -> MemoryCri:
    """A runtime with garbage: three dead attempts of one container and a running one, whose
    pod (`uid-p`) a pods file must list."""
    cs = [
        ctr("dead0000", age_s=900),
        ctr("dead0001", attempt=1, age_s=600),
        ctr("dead0002", attempt=2, age_s=300),
        ctr("live0000", name="web", state="RUNNING", age_s=1000),
    ]
    sb = Sandbox("sb-uid-p", "pod-uid-p", "default", "uid-p", 0, SandboxState.READY, NOW - 1000 * S)
    return MemoryCri({c.id: c for c in cs}, {sb.id: sb})


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A scratch directory: the host root (empty: no kubelet, no crictl.yaml), the state
    dir and the input files of the examples."""
    root = tmp_path_factory.mktemp("fuzz")
    (root / "host").mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("CONTAINER_RUNTIME_ENDPOINT",
                                                            "KUBECONFIG")}  # fmt: skip
    with mock.patch.dict(os.environ, env, clear=True):
        yield root


def base(work: Path) -> list[str]:
    """Global options every run gets: an empty host root, a scratch state dir, no pod source."""
    return ["--host-root", str(work / "host"), "--state-dir", str(work / "state"), "--now",
            "2027-01-15T08:00:00Z"]  # fmt: skip


def check(
    result: tuple[int, str, str],
    names: list[str],
    cri: MemoryCri | None = None,
    ok: tuple[int, ...] = (0,),
) -> int:
    """A normal run (`ok` exit codes), or bad input: exit 2, one line naming one of `names`,
    nothing on stdout, nothing removed. Never a traceback. Returns the exit code."""
    code, out, err = result
    assert "Traceback" not in err and "Traceback" not in out
    if code == 2:
        assert err.startswith("kubegc: error: ") and err.count("\n") == 1, err
        assert any(n in err for n in names), f"{err!r} names none of {names!r}"
        assert out == ""
        assert cri is None or cri.removed == [], "bad input, yet something was removed"
    else:
        assert code in ok, (code, err)
    return code


def named(value: str, flag: str) -> list[str]:
    """How a message may name a flag value: as Python writes it, or stripped; an empty or
    blank value by the flag (the message then says the value is empty)."""
    if not value.strip():
        return [flag]
    return [repr(value), repr(value.strip()), value.strip()]


# ---- flag values ----

DURATION_TEXT = st.one_of(
    st.text(max_size=20),
    st.from_regex(r"\A[-+ ]?[0-9.]{0,8}(ns|us|µs|ms|s|m|h|d|x|)[0-9.]{0,4}(s|m|h|)\Z"),
    st.sampled_from(["5x", "1d", "", " ", "0", "-0", "+1s", "1e3s", "٣s", "9" * 400 + "h",
                     "2562048h", ".s", "1..5s", "1h-2m", "\x00", "1s\n", "nan", "inf"]),
)  # fmt: skip


@FUZZ
@given(flag=st.sampled_from(["--minimum-container-ttl-duration", "--older-than"]),
       value=DURATION_TEXT)  # fmt: skip
@example(flag="--minimum-container-ttl-duration", value="5x")
def test_durations(work: Path, flag: str, value: str) -> None:
    cri = node()
    with use_runtime(cri):
        result = run_cli([*base(work), "gc", "containers", f"{flag}={value}", "--yes"])
    check(result, named(value, flag), cri)


@FUZZ
@given(value=DURATION_TEXT)
@example(value="+5µs")
def test_timeout(work: Path, value: str) -> None:
    """A valid `--timeout` too short for a filesystem call (`5µs`) fails the removals whose
    logs it cannot reach in time (exit 1: the containers are kept, as the kubelet keeps one
    whose log it cannot remove), or the reading of a file the run needs (exit 3, naming it,
    nothing removed); bad input is exit 2; never a traceback."""
    cri = node()
    with use_runtime(cri):
        result = run_cli([*base(work), f"--timeout={value}", "gc", "containers", "--yes"])
    if result[0] in (2, 3) and "no answer within" in result[2]:
        # a valid deadline too short to read a file the run needs (the kubelet config: exit
        # 2, as any file kubegc cannot read): one line naming the file, nothing removed
        assert result[2].count("\n") == 1 and "Traceback" not in result[2], result
        assert cri.removed == [], result
        return
    if check(result, named(value, "--timeout"), cri, ok=(0, 1)) == 1:
        assert "removal(s) failed" in result[2], result


QUANTITY_TEXT = st.one_of(
    st.text(max_size=20),
    st.from_regex(r"\A[-+]?[0-9.]{0,8}([eE][-+]?[0-9]{0,5}|Ki|Mi|Gi|Ei|k|m|n|E|x|)\Z"),
    st.sampled_from(["1e400", "1E9999", "8Ei", "2Gi", "-1", "0", "0.5", "1e-9", "NaN", "Infinity",
                     "1_000", "١٠٠Mi", "1 Mi", "Mi"]),
)  # fmt: skip


@FUZZ
@given(value=QUANTITY_TEXT)
@example(value="3Gi")
def test_quantities(work: Path, value: str) -> None:
    cri = node()
    with use_runtime(cri):
        result = run_cli([*base(work), f"--max-recv-size={value}", "gc", "containers", "--yes"])
    check(result, named(value, "--max-recv-size"), cri)


@FUZZ
@given(value=QUANTITY_TEXT)
def test_allocatable_quantity(work: Path, value: str) -> None:
    with no_runtime():
        result = run_cli([*base(work), "evict", "check", f"--allocatable={value}", "-o", "json"])
    check(result, named(value, "--allocatable"), ok=(0, 1, 3))


@FUZZ
@given(
    high=st.one_of(st.integers(-1000, 1000).map(str), st.text(max_size=8)),
    low=st.one_of(st.integers(-1000, 1000).map(str), st.text(max_size=8)),
)
def test_image_gc_percentages(work: Path, high: str, low: str) -> None:
    """The thresholds are checked before the runtime is asked (here: unreachable, exit 3)."""
    with no_runtime():
        result = run_cli([*base(work), "gc", "images", f"--image-gc-high-threshold={high}",
                          f"--image-gc-low-threshold={low}", "--yes"])  # fmt: skip
    names = [*named(high, "--image-gc-high-threshold"), *named(low, "--image-gc-low-threshold")]
    code = check(result, names, ok=(3,))
    if code == 3:
        assert 0 <= int(low) < int(high) <= 100


SIGNALS = ["memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available",
           "imagefs.inodesFree", "containerfs.available", "pid.available",
           "allocatableMemory.available", "memory.Available", "x", ""]  # fmt: skip
AMOUNTS = st.one_of(
    QUANTITY_TEXT,
    st.from_regex(r"\A[-+]?[0-9.]{0,6}%?\Z"),
    st.sampled_from(["0%", "100%", "100.0001%", "-0%", "1e3%", "NaN%", "%", "10%%", "0", "1m30s"]),
)


@st.composite
def eviction_maps(draw: st.DrawFn, sep: str) -> str:
    """A kubelet map flag value: `signal<value,...` (or `signal=value,...`), sometimes broken."""
    parts = []
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from([sep, sep, sep, "<=", ">", "=", "", "<<"]))
        parts.append(f"{draw(st.sampled_from(SIGNALS))}{op}{draw(AMOUNTS)}")
    joined = draw(st.sampled_from([",", ",", ", ", ",,", ";"])).join(parts)
    return draw(st.one_of(st.just(joined), st.text(max_size=30)))


@FUZZ
@given(
    flag=st.sampled_from(["--eviction-hard", "--eviction-soft", "--eviction-soft-grace-period",
                          "--eviction-minimum-reclaim"]),
    value=st.data(),
)  # fmt: skip
def test_eviction_threshold_expressions(work: Path, flag: str, value: st.DataObject) -> None:
    text = value.draw(eviction_maps("=" if flag.endswith(("period", "reclaim")) else "<"))
    with no_runtime():
        result = run_cli([*base(work), "evict", "check", f"{flag}={text}", "-o", "json"])
    check(result, [flag], ok=(0, 1, 3))


# ---- files ----

JSON_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False),
    st.text(max_size=12),
)  # fmt: skip
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=8,
)  # fmt: skip


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON document: the key or index path of each value."""
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*prefix, i))
    return out


def _mutate(draw: st.DrawFn, doc: Any) -> Any:
    """`doc` with one to three values, anywhere, replaced by arbitrary JSON or removed."""
    doc = json.loads(json.dumps(doc))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(doc)))
        if not path:
            return draw(JSON_VALUES)
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        if draw(st.integers(0, 4)) == 0:
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(JSON_VALUES)
    return doc


def pods_doc() -> dict[str, Any]:
    """A valid List (`kubectl get pods,nodes -o json`) holding the node's running pod (so it
    covers the node), an evicted pod, a pod being deleted with its containers stopped, and
    the Node."""
    stopped = {"state": {"terminated": {"exitCode": 0}}}
    return {
        "kind": "List",
        "items": [
            {"kind": "Pod", "metadata": {"uid": "uid-p", "name": "pod-uid-p",
                                          "namespace": "default"},
             "status": {"phase": "Running", "containerStatuses": [{"state": {"running": {}}}]}},
            {"kind": "Pod", "metadata": {"uid": "uid-e", "name": "e", "namespace": "default"},
             "status": {"phase": "Failed", "reason": "Evicted"}},
            {"kind": "Pod", "metadata": {"uid": "uid-d", "name": "d", "namespace": "default",
                                          "deletionTimestamp": "2027-01-15T07:00:00Z"},
             "status": {"phase": "Running", "containerStatuses": [stopped],
                        "initContainerStatuses": [stopped]}},
            {"kind": "Node", "metadata": {"name": "node-a"},
             "status": {"allocatable": {"memory": "8Gi"}}},
        ],
    }  # fmt: skip


@st.composite
def mutated(draw: st.DrawFn, make: Any) -> str:
    """A valid document of `make()`, mutated, as JSON text; or cut short; or text."""
    text = json.dumps(_mutate(draw, make()), allow_nan=True)
    return draw(st.one_of(st.just(text), st.just(text[: draw(st.integers(0, len(text)))]),
                          st.text(max_size=40)))  # fmt: skip


@FUZZ
@given(text=mutated(pods_doc))
@example(text='{"kind": "PodList", "items": null}')
def test_pods_file(work: Path, text: str) -> None:
    f = work / "pods.json"
    f.write_text(text, encoding="utf-8", errors="surrogatepass")
    cri = node()
    with use_runtime(cri):
        result = run_cli([*base(work), "--pods-file", str(f), "gc", "containers", "--yes"])
    check(result, [str(f)], cri)


def snapshot_doc() -> dict[str, Any]:
    """A valid snapshot of `node()`."""
    cri = node()
    containers = [
        replace(c, finished_at=c.created_at + S, log_path="/var/log/pods/x/app/0.log",
                log_bytes=12, image_id="sha256:aa")
        for c in cri.containers.values()
    ]  # fmt: skip
    snap = NodeSnapshot(
        captured_at=NOW,
        containers=tuple(containers),
        sandboxes=tuple(cri.sandboxes.values()),
        images=(Image("sha256:aa", ("busybox:1",), ("busybox@sha256:bb",), 10, False),),
        image_filesystems=(FilesystemUsage("/var/lib/containerd", 10, 1, NOW),),
    )
    return snap.to_dict()


@FUZZ
@given(text=mutated(snapshot_doc), command=st.sampled_from(["containers", "sandboxes"]))
def test_snapshot_file(work: Path, text: str, command: str) -> None:
    f = work / "snap.json"
    f.write_text(text, encoding="utf-8", errors="surrogatepass")
    with no_runtime():
        result = run_cli([*base(work), "--pod-source", "none", "--snapshot", str(f), "gc", command])
    check(result, [str(f)])


KUBELET_KEYS = ["kind", "apiVersion", "podLogsDir", "imageGCHighThresholdPercent",
                "imageGCLowThresholdPercent", "imageMinimumGCAge", "imageMaximumGCAge",
                "evictionHard", "evictionSoft", "evictionSoftGracePeriod",
                "evictionMinimumReclaim", "evictionPressureTransitionPeriod",
                "mergeDefaultEvictionSettings", "evictionMaxPodGracePeriod"]  # fmt: skip
KUBELET_VALUES = st.one_of(
    JSON_VALUES,
    st.sampled_from(["KubeletConfiguration", "/var/log/pods", "/", "relative", "/a/../b", 85, 101,
                     -1, True, "2m", "5x", "0s", {"memory.available": "100Mi"},
                     {"nodefs.available": "10%%"}, {"x": 1}, {"memory.available": None}]),
)  # fmt: skip


KUBELET_TEMPLATE: dict[str, Any] = {
    "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
    "podLogsDir": "/var/log/pods", "imageGCHighThresholdPercent": 85,
    "imageGCLowThresholdPercent": 80, "imageMinimumGCAge": "2m0s", "imageMaximumGCAge": "0s",
    "evictionHard": {"memory.available": "100Mi", "nodefs.available": "10%"},
    "evictionSoft": {"memory.available": "200Mi"},
    "evictionSoftGracePeriod": {"memory.available": "1m30s"},
    "evictionMinimumReclaim": {"nodefs.available": "500Mi"},
    "mergeDefaultEvictionSettings": False,
}  # fmt: skip


@st.composite
def kubelet_configs(draw: st.DrawFn) -> str:
    """KubeletConfiguration YAML with the keys kubegc reads, values of every type; or text."""
    doc = draw(
        st.one_of(
            st.dictionaries(st.sampled_from(KUBELET_KEYS), KUBELET_VALUES, max_size=5),
            st.just(KUBELET_TEMPLATE),
        )
    )
    text = yaml.safe_dump(_mutate(draw, doc), allow_unicode=True)
    tail = draw(st.text(max_size=20))
    return draw(
        st.one_of(
            st.just(text), st.text(max_size=40), st.just(f"kind: KubeletConfiguration\n{tail}")
        )
    )


@FUZZ
@given(text=kubelet_configs(), command=st.sampled_from(["containers", "images", "evict"]))
def test_kubelet_config(work: Path, text: str, command: str) -> None:
    f = work / "config.yaml"
    f.write_text(text, encoding="utf-8", errors="surrogatepass")
    cri = node()
    args = [*base(work), "--kubelet-config", str(f)]
    if command == "containers":
        with use_runtime(cri):
            check(run_cli([*args, "gc", "containers", "--yes"]), [str(f)], cri)
    elif command == "images":
        with no_runtime():
            check(run_cli([*args, "gc", "images", "--yes"]), [str(f)], ok=(3,))
    else:
        with no_runtime():
            check(run_cli([*args, "evict", "check", "-o", "json"]), [str(f)], ok=(0, 1, 3))


@st.composite
def crictl_configs(draw: st.DrawFn) -> str:
    """crictl.yaml with a runtime-endpoint of any shape; or text."""
    endpoint = draw(st.one_of(
        JSON_VALUES,
        st.sampled_from(["unix:///run/x.sock", "/run/x.sock", "tcp://1.2.3.4:5", "unix://",
                         "unix:///" + "x" * 200, "npipe:////./pipe/x", "/", "", " "]),
    ))  # fmt: skip
    doc = draw(st.one_of(st.just({"runtime-endpoint": endpoint}), JSON_VALUES))
    return draw(st.one_of(st.just(yaml.safe_dump(doc)), st.text(max_size=40)))


@FUZZ
@given(text=crictl_configs())
def test_crictl_yaml_under_host_root(work: Path, text: str) -> None:
    """No -r, no CONTAINER_RUNTIME_ENDPOINT: the endpoint comes from the host's crictl.yaml
    (the real endpoint resolution and client; no socket answers, so a usable value is exit 3)."""
    host = work / "crictl-host"
    (host / "etc").mkdir(parents=True, exist_ok=True)
    f = host / "etc" / "crictl.yaml"
    f.write_text(text, encoding="utf-8", errors="surrogatepass")
    args = [*base(work), "--host-root", str(host), "--timeout", "1s"]
    result = run_cli([*args, "gc", "containers", "--dry-run"])
    check(result, [str(f), "runtime-endpoint"], ok=(3,))
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return
    endpoint = doc.get("runtime-endpoint") if isinstance(doc, dict) else None
    if endpoint is not None and not isinstance(endpoint, str):  # not a path to try: bad input
        assert result[0] == 2, result


@st.composite
def kubeconfigs(draw: st.DrawFn) -> str:
    """A kubeconfig of any shape pointing at a closed local port (never an exec plugin)."""
    server = draw(
        st.sampled_from(
            [
                "https://127.0.0.1:1",
                "127.0.0.1:1",
                "http://127.0.0.1:1",
                "",
                "not a url",
                "http://[::1",
                "ftp://127.0.0.1:1",
                "https://127.0.0.1:99999",
            ]
        )
    )
    cluster = draw(
        st.one_of(
            st.just({"server": server}),
            st.just({"server": server, "certificate-authority-data": "!!"}),
            st.just({"server": server, "certificate-authority": "/nonexistent/ca"}),
            JSON_VALUES,
        )
    )
    user = draw(
        st.one_of(
            st.just({"token": "t"}),
            st.just({"client-certificate-data": "Zm9v", "client-key-data": "x"}),
            st.just({"tokenFile": "/nonexistent"}),
            st.just({"username": "a", "password": 1}),
            JSON_VALUES,
        )
    )
    context = draw(st.sampled_from(["c", "", "z"]))
    doc: Any = {
        "apiVersion": "v1", "kind": "Config", "current-context": context,
        "clusters": [{"name": "k", "cluster": cluster}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }  # fmt: skip
    doc = _mutate(draw, doc)
    if isinstance(doc, dict) and isinstance(doc.get("users"), list):  # never run a program
        for u in doc["users"]:
            if isinstance(u, dict) and isinstance(u.get("user"), dict):
                u["user"].pop("exec", None)
                u["user"].pop("auth-provider", None)
    return draw(st.one_of(st.just(yaml.safe_dump(doc)), st.text(max_size=40)))


@FUZZ
@given(text=kubeconfigs())
def test_kubeconfig(work: Path, text: str) -> None:
    f = work / "kubeconfig"
    f.write_text(text, encoding="utf-8", errors="surrogatepass")
    cri = node()
    with use_runtime(cri):
        result = run_cli([*base(work), "--pod-source", "api", "--kubeconfig", str(f), "--timeout",
                          "1s", "gc", "containers", "--yes"])  # fmt: skip
    check(result, [str(f)], cri, ok=(3,))
    assert cri.removed == []  # the API is required and never answers: nothing removed


CONFIG_TEMPLATE: dict[str, Any] = {
    "timeout": "30s", "lock-timeout": "0s", "max-recv-size": "256Mi", "pod-source": "none",
    "gc": {
        "containers": {"maximum-dead-containers-per-container": 2, "max-delete": 100,
                       "minimum-container-ttl-duration": "1m", "namespace": ["a", "b"]},
        "images": {"image-gc-high-threshold": 80, "keep": ["registry.k8s.io/*"]},
    },
    "evict": {"check": {"top": 3, "eviction-hard": ["memory.available<100Mi"]}},
}  # fmt: skip


@FUZZ
@given(text=st.one_of(mutated(lambda: CONFIG_TEMPLATE), st.text(max_size=40)))
def test_config_file(work: Path, text: str) -> None:
    """kubegc's own config file (`--config`), as JSON (YAML's subset) or mutated text."""
    f = work / "kubegc.yaml"
    f.write_text(text, encoding="utf-8", errors="surrogatepass")
    cri = node()
    with use_runtime(cri):
        result = run_cli([*base(work), "--config", str(f), "gc", "containers", "--yes"])
    check(result, [str(f)], cri, ok=(0,))


# ---- the corpus: the nastiest inputs found, as fixed regression cases ----

CORPUS: list[tuple[list[str], str]] = [
    # issue case 1
    (["gc", "containers", "--minimum-container-ttl-duration", "5x", "--yes"], "'5x'"),
    (["gc", "containers", "--older-than", "٣s", "--yes"], "'٣s'"),
    (["gc", "containers", "--minimum-container-ttl-duration", "\x00", "--yes"], "'\\x00'"),
    (["gc", "containers", "--minimum-container-ttl-duration", "1h-2m", "--yes"], "'1h-2m'"),
    (["gc", "containers", "--minimum-container-ttl-duration", "-1s", "--yes"], "'-1s'"),
    (["--timeout", "0s", "gc", "containers", "--yes"], "'0s'"),
    (["--timeout", "0.0001ns", "gc", "containers", "--yes"], "'0.0001ns' must be above 0"),
    (["--timeout", "9" * 400 + "h", "gc", "containers", "--yes"], "too large"),
    (["--max-recv-size", "1E9999", "gc", "containers", "--yes"], "'1E9999'"),
    (["--max-recv-size", "-0", "gc", "containers", "--yes"], "'-0'"),
    (["--max-recv-size", "١٠٠Mi", "gc", "containers", "--yes"], "'١٠٠Mi'"),
    (["--max-recv-size", "0.5", "gc", "containers", "--yes"], "'0.5' is not a whole number"),
    (["--max-recv-size", "100m", "gc", "containers", "--yes"], "'100m' is not a whole number"),
    (["gc", "containers", "--maximum-dead-containers", "1e3", "--yes"], "'1e3'"),
    (["gc", "containers", "--maximum-dead-containers", "١٠", "--yes"], "'١٠' is not a whole"),
    (["gc", "containers", "--concurrency", "1_0", "--yes"], "'1_0' is not a whole number"),
    (["gc", "containers", "--max-delete", " 3", "--yes"], "' 3' is not a whole number"),
    (["gc", "containers", "--maximum-dead-containers", "3 ", "--yes"], "'3 ' is not a whole"),
    (["--limit", "٣", "gc", "containers", "--yes"], "'٣' is not a whole number"),
    (["gc", "containers", "--max-bytes", "9" * 5000, "--yes"], "(5000 digits) has too many"),
    (["--max-recv-size", "0." + "1" * 5000, "gc", "containers", "--yes"], "has too many digits"),
    (["gc", "containers", "--yes", "--exclude-namespace", ""], "'' is empty"),
    # integers beyond the kubelet's int64 flags
    (["gc", "containers", "--max-delete", "9" * 25, "--yes"], "is out of range (a 64-bit"),
    (["gc", "containers", "--maximum-dead-containers", "9" * 5000, "--yes"], "out of range"),
    (["gc", "containers", "--max-delete", "9223372036854775808", "--yes"], "out of range"),
    (["--limit", "0" * 30 + "9" * 20, "gc", "containers", "--yes"], "out of range"),
    # a pod log root the kubelet would refuse, or that would split a message in two
    (["gc", "logs", "--pod-logs-dir", "/var/log/po\nds", "--yes"], "must be a clean ASCII"),
    (["gc", "logs", "--pod-logs-dir", "/var/log/po\x7fds", "--yes"], "must be a clean ASCII"),
]


@pytest.mark.parametrize(("argv", "needle"), CORPUS)
def test_corpus_flags(work: Path, argv: list[str], needle: str) -> None:
    cri = node()
    with use_runtime(cri):
        code, out, err = run_cli([*base(work), *argv])
    assert code == 2 and needle in err, err
    check((code, out, err), [needle], cri)


def _corpus_files() -> list[Path]:
    return sorted(p for p in CORPUS_DIR.iterdir() if p.is_file() and p.suffix != ".expect")


@pytest.mark.parametrize("path", _corpus_files(), ids=lambda p: p.name)
def test_corpus_files(work: Path, path: Path) -> None:
    """`tests/unit/corpus/<kind>.<case>`: each file is bad input for the option its name
    starts with (`pods`, `snapshot`, `kubelet`, `kubeconfig`, `crictl`, `config`); first line of the
    expected message in `<file>.expect` when there is one."""
    kind = path.name.split(".", 1)[0]
    cri = node()
    argv = {
        "pods": ["--pods-file", str(path), "gc", "containers", "--yes"],
        "snapshot": ["--pod-source", "none", "--snapshot", str(path), "gc", "containers"],
        "kubelet": ["--kubelet-config", str(path), "gc", "containers", "--yes"],
        "kubeconfig": ["--pod-source", "api", "--kubeconfig", str(path), "gc", "containers",
                       "--yes"],
        "config": ["--config", str(path), "gc", "containers", "--yes"],
    }  # fmt: skip
    if kind == "crictl":
        host = work / f"corpus-{path.name}"
        (host / "etc").mkdir(parents=True, exist_ok=True)
        (host / "etc" / "crictl.yaml").write_bytes(path.read_bytes())
        code, out, err = run_cli([*base(work), "--host-root", str(host), "gc", "containers"])
        names = [str(host / "etc" / "crictl.yaml")]
    else:
        with use_runtime(cri):
            code, out, err = run_cli([*base(work), *argv[kind]])
        names = [str(path)]
    assert code == 2, err
    check((code, out, err), names, cri)
    expect = path.with_name(path.name + ".expect")
    if expect.exists():
        assert expect.read_text().strip() in err


def test_pod_list_with_null_items_is_a_clear_error(work: Path) -> None:
    """Issue case 2: `{"kind": "PodList", "items": null}` — exit 2 naming the file, no crash."""
    f = work / "null-items.json"
    f.write_text('{"kind": "PodList", "items": null}')
    cri = node()
    with use_runtime(cri):
        code, out, err = run_cli([*base(work), "--pods-file", str(f), "gc", "containers", "--yes"])
    assert (code, out) == (2, "") and cri.removed == []
    assert (
        err == f"kubegc: error: file:{f}: not a PodList (expected an object with an 'items' list)\n"
    )


def test_minimum_ttl_5x_removes_nothing(work: Path) -> None:
    """Issue case 1, and the same command with a valid value does remove (so "nothing removed"
    above is not just a runtime that never removes)."""
    cri = node()
    with use_runtime(cri):
        code, _, err = run_cli([*base(work), "gc", "containers",
                                "--minimum-container-ttl-duration", "5x", "--yes"])  # fmt: skip
    assert code == 2 and "'5x'" in err and cri.removed == []
    with use_runtime(cri):
        code, _, err = run_cli([*base(work), "--pod-source", "none", "gc", "containers",
                                "--minimum-container-ttl-duration", "5m", "--yes"])  # fmt: skip
    assert code == 0, err
    assert sorted(cri.removed) == ["dead0000", "dead0001"]


@pytest.mark.parametrize(
    "argv",
    [
        ["gc", "containers", "--minimum-container-ttl-duration", "5x", "--yes"],
        ["--pods-file", str(CORPUS_DIR / "pods.null-items.json"), "gc", "containers", "--yes"],
        ["--pods-file", str(CORPUS_DIR / "pods.status-not-a-list.json"), "gc", "containers"],
        ["--pod-source", "api", "--kubeconfig",
         str(CORPUS_DIR / "kubeconfig.server-without-scheme.yaml"), "gc", "containers", "--yes"],
        ["evict", "check", "--eviction-hard", "memory.available<1e400"],
    ],
)  # fmt: skip
def test_a_sample_in_a_real_process(work: Path, argv: list[str]) -> None:
    """A real `kubegc` process: exactly one line on stderr (no warnings, no traceback), exit 2."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "kubegc_cli", "-r", "unix:///nonexistent.sock", *base(work), *argv],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == "" and proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("kubegc: error: ")


@pytest.mark.parametrize("command", [["gc", "containers"], ["gc", "all"], ["gc", "logs"]])
def test_a_state_db_that_is_a_directory_stops_a_removing_run_before_it_acts(
    tmp_path: Path, command: list[str]
) -> None:
    """A run that removes needs somewhere to write its audit rows: a `state.db` that is not a
    regular file is exit 2 naming it before anything is removed (not a note after)."""
    state = tmp_path / "state"
    (state / "state.db").mkdir(parents=True)
    (tmp_path / "host").mkdir()
    cri = node()
    argv = ["--host-root", str(tmp_path / "host"), "--state-dir", str(state), "--now",
            "2027-01-15T08:00:00Z", "--pod-source", "none", *command, "--yes"]  # fmt: skip
    with use_runtime(cri):
        code, out, err = run_cli(argv)
    assert code == 2, err
    assert err == f"kubegc: error: state database {state / 'state.db'} is not a regular file\n"
    assert cri.removed == [] and out == ""


@pytest.mark.parametrize(
    "argv",
    [
        ["--snapshot", "", "gc", "containers", "--yes"],
        ["--state-dir", "", "gc", "containers", "--yes"],
        ["--config", "", "gc", "containers", "--yes"],
        ["--kubelet-config", "", "gc", "containers", "--yes"],
        ["--host-root", "", "gc", "containers", "--yes"],
        ["-r", "", "gc", "containers", "--yes"],
        ["--node-name", "", "gc", "containers", "--yes"],
        ["gc", "containers", "--yes", "--older-than", ""],
    ],
)
def test_an_empty_option_value_is_bad_input_not_the_option_left_out(
    work: Path, argv: list[str]
) -> None:
    """`--snapshot ''` (an unset shell variable) must not turn a snapshot dry run into a run
    against the live runtime, nor `--state-dir ''` put the lock in the working directory."""
    cri = node()
    with use_runtime(cri):
        code, out, err = run_cli([*base(work), *argv])
    flag = next(a for a in argv if a.startswith("-") and a != "--yes")
    assert code == 2 and "'' is empty" in err and flag in err, err
    check((code, out, err), [flag], cri)


def _pods_file(tmp_path: Path) -> Path:
    f = tmp_path / "pods.json"
    pod = {"metadata": {"uid": "uid-p", "namespace": "default", "name": "p"}, "status": {}}
    f.write_text(json.dumps({"kind": "PodList", "items": [pod]}))
    return f


def _gc_logs(tmp_path: Path, host: Path, pod_logs_dir: str) -> tuple[int, str, str]:
    cri = node()
    argv = ["--host-root", str(host), "--state-dir", str(tmp_path / "state"), "--now",
            "2027-01-15T08:00:00Z", "--pods-file", str(_pods_file(tmp_path)), "gc", "logs",
            "--pod-logs-dir", pod_logs_dir, "--yes", "-o", "json"]  # fmt: skip
    with use_runtime(cri):
        return run_cli(argv)


def test_gc_logs_never_looks_in_a_pod_log_root_that_resolves_to_the_hosts_root(
    tmp_path: Path,
) -> None:
    """podLogsDir a symlink to the host's `/` (relative or absolute): its entries (`usr`,
    `etc`) would all look like pod log directories of gone pods; exit 2, nothing removed."""
    host = tmp_path / "host"
    for d in ("usr/bin", "etc", "var/log"):
        (host / d).mkdir(parents=True)
    (host / "var/log/pods").symlink_to("../..")
    (host / "abs").symlink_to("/")
    for root in ("/var/log/pods", "/abs"):
        code, out, err = _gc_logs(tmp_path, host, root)
        assert code == 2 and "resolves to the host's /" in err and out == "", err
        assert (host / "usr/bin").is_dir() and (host / "etc").is_dir()


def test_gc_logs_follows_an_absolute_pod_log_root_symlink_on_the_host(tmp_path: Path) -> None:
    """Under `--host-root`, an absolute symlink is the host's: the pod log directories removed
    are those under the host's target, never this machine's directory of the same name."""
    gone = "default_q_66666666-2222-3333-4444-555555555555"
    victim = tmp_path / "victim"
    (victim / gone).mkdir(parents=True)
    host = tmp_path / "host"
    (host / "var/log").mkdir(parents=True)
    (host / "var/log/pods").symlink_to(victim)  # absolute
    on_host = host / str(victim).lstrip("/")
    (on_host / gone / "c").mkdir(parents=True)
    (on_host / gone / "c/0.log").write_bytes(b"x" * 5)
    code, out, err = _gc_logs(tmp_path, host, "/var/log/pods")
    assert code == 0, err
    assert [a["result"] for a in json.loads(out)["actions"]] == ["removed"]
    assert not (on_host / gone).exists() and (victim / gone).is_dir()


def test_gc_logs_sizes_a_pod_log_directory_thousands_of_levels_deep(tmp_path: Path) -> None:
    """No recursion limit in sizing a pod log directory, and no traceback removing it."""
    gone = "default_q_66666666-2222-3333-4444-555555555555"
    host = tmp_path / "host"
    deep = host / "var/log/pods" / gone
    deep.mkdir(parents=True)
    fd = os.open(deep, os.O_RDONLY)
    blocks = 0  # what the tree takes on disk: every directory's blocks and the log's
    try:
        for _ in range(1500):  # (relative to a directory fd: no path is longer than PATH_MAX)
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            blocks += os.fstat(fd).st_blocks
            os.close(fd)
            fd = inner
        with open(os.open("0.log", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "wb") as f:
            f.write(b"y" * 7)
            f.flush()
            blocks += os.fstat(f.fileno()).st_blocks
        blocks += os.fstat(fd).st_blocks
    finally:
        os.close(fd)
    try:
        code, out, err = _gc_logs(tmp_path, host, "/var/log/pods")
        left = deep.exists()
    finally:  # (coreutils' rm walks without recursion; pytest's own clean-up would not)
        subprocess.run(["rm", "-rf", str(deep)], check=True)
    assert "Traceback" not in err
    (action,) = json.loads(out)["actions"]
    assert action["bytes"] == blocks * 512  # sized to the bottom
    # removed, or (Python 3.11's rmtree recurses) one failed action with its reason: exit 1
    assert (action["result"], code) in (("removed", 0), ("failed", 1)), err
    assert (action["result"] == "removed") != left


# kubelet map flags: an empty value is an empty map (no thresholds of that kind), as on the kubelet
_EMPTY_MEANS_NONE = {"eviction_hard", "eviction_soft", "eviction_soft_grace_period",
                     "eviction_minimum_reclaim"}  # fmt: skip


def _valued_parameters() -> list[tuple[list[str], click.Parameter]]:
    """Every option or argument of every command that takes a text value, once: a command's
    own parameters where it is invoked, the global options at the root."""
    from kubegc_cli.cli.main import cli
    from kubegc_cli.cli.options import GLOBAL_NAMES

    out: list[tuple[list[str], click.Parameter]] = []

    def walk(cmd: click.Command, path: list[str]) -> None:
        for p in cmd.params:
            flag = isinstance(p, click.Option) and (p.is_flag or p.count)
            own = not path or p.name not in GLOBAL_NAMES
            if own and not flag and p.nargs == 1 and p.name not in _EMPTY_MEANS_NONE:
                out.append((path, p))
        if isinstance(cmd, click.Group):
            for name, sub in sorted(cmd.commands.items()):
                walk(sub, [*path, name])

    walk(cli, [])
    return out


@pytest.mark.parametrize(
    ("path", "param"),
    _valued_parameters(),
    ids=lambda v: " ".join(v) if isinstance(v, list) else v.name,
)
def test_every_empty_value_is_bad_input(work: Path, path: list[str], param: Any) -> None:
    """An empty value (an unset shell variable) is never the option left out: one line naming
    the option, exit 2, nothing removed — for every option of every command, so a new option
    cannot miss it."""
    command = path or ["gc", "containers"]
    params = _command(command).params
    # the command's other required arguments get a value (apply: a plan file that is absent)
    others = [str(work / "absent.json") for p in params
              if isinstance(p, click.Argument) and p.required and p is not param]  # fmt: skip
    value = [""] if isinstance(param, click.Argument) else [param.opts[-1], ""]
    where = [*command, *others, *value]
    takes_yes = any(p.name == "yes" for p in params)
    cri = node()
    with use_runtime(cri):
        code, out, err = run_cli([*base(work), *where, *(["--yes"] if takes_yes else [])])
    names = [*param.opts, param.human_readable_name]
    assert code == 2, (code, err)
    check((code, out, err), names, cri)


def _command(path: list[str]) -> click.Command:
    from kubegc_cli.cli.main import cli

    cmd: click.Command = cli
    for name in path:
        assert isinstance(cmd, click.Group)
        cmd = cmd.commands[name]
    return cmd


def test_apply_follows_absolute_log_root_symlinks_on_the_host(tmp_path: Path) -> None:
    """`apply` re-makes each log path as `gc logs` lists it: podLogsDir and the legacy link
    directory resolved as the host resolves them, never through this machine's directory of
    the same name."""
    gone = "default_q_66666666-2222-3333-4444-555555555555"
    link = "q_default_c-abcdef0123456789abcdef.log"
    victim = tmp_path / "victim"
    (victim / "pods" / gone).mkdir(parents=True)
    (victim / "links").mkdir()
    (victim / "links" / link).symlink_to("/nowhere")
    host = tmp_path / "host"
    (host / "var/log").mkdir(parents=True)
    (host / "var/log/pods").symlink_to(victim / "pods")  # absolute: the host's path
    (host / "var/log/containers").symlink_to(victim / "links")
    on_host = host / str(victim).lstrip("/")
    (on_host / "pods" / gone / "c").mkdir(parents=True)
    (on_host / "pods" / gone / "c/0.log").write_bytes(b"x" * 5)
    (on_host / "links").mkdir()
    (on_host / "links" / link).symlink_to("/nowhere")
    plan = tmp_path / "plan.json"
    argv = ["--host-root", str(host), "--state-dir", str(tmp_path / "state"), "--now",
            "2027-01-15T08:00:00Z", "--pods-file", str(_pods_file(tmp_path))]  # fmt: skip
    with use_runtime(node()):
        code, _, err = run_cli([*argv, "gc", "logs", "--pod-logs-dir", "/var/log/pods",
                                "--plan-out", str(plan)])  # fmt: skip
        assert code == 0, err
        code, out, err = run_cli([*argv, "apply", str(plan), "--pod-logs-dir", "/var/log/pods",
                                  "--yes", "-o", "json"])  # fmt: skip
    assert code == 0, err
    assert sorted(a["result"] for a in json.loads(out)["actions"]) == ["removed", "removed"]
    assert not (on_host / "pods" / gone).exists() and not (on_host / "links" / link).is_symlink()
    assert (victim / "pods" / gone).is_dir() and (victim / "links" / link).is_symlink()


def test_a_fifo_nothing_writes_to_is_bad_input_not_a_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pipes are read (`--pods-file <(kubectl get pods -o json)`), and a writer may come a
    little later; a FIFO nothing writes to within the wait is exit 2, naming it."""
    import threading

    from kubegc_cli.core import inputs
    from kubegc_cli.core.errors import BadInput

    monkeypatch.setattr(inputs, "PIPE_WAIT_SECONDS", 0.3)
    fifo = tmp_path / "pods.fifo"
    os.mkfifo(fifo)
    with pytest.raises(BadInput, match=f"cannot read pods file {fifo}: nothing was written"):
        inputs.read_text(fifo, "pods file")

    def late_writer() -> None:
        with open(fifo, "w") as f:  # blocks until the reader has opened the FIFO
            f.write('{"kind": "PodList", "items": []}')

    writer = threading.Thread(target=late_writer)
    writer.start()
    assert inputs.read_text(fifo, "pods file") == '{"kind": "PodList", "items": []}'
    writer.join()

    # a writer that stalls after its first bytes (a hung kubectl): exit 2 too, not a hang
    release = threading.Event()

    def stalled_writer() -> None:
        with open(fifo, "w") as f:
            f.write('{"items": [')
            f.flush()
            release.wait(10)

    writer = threading.Thread(target=stalled_writer)
    writer.start()
    try:
        with pytest.raises(BadInput, match=r"nothing more was written after 11 bytes for 0\.3 s"):
            inputs.read_text(fifo, "pods file")
    finally:
        release.set()
        writer.join()

    # a slow writer that keeps writing is read to its end
    def slow_writer() -> None:
        with open(fifo, "w") as f:
            for part in ('{"kind": ', '"PodList", ', '"items": []}'):
                f.write(part)
                f.flush()
                time.sleep(0.1)

    writer = threading.Thread(target=slow_writer)
    writer.start()
    assert inputs.read_text(fifo, "pods file") == '{"kind": "PodList", "items": []}'
    writer.join()

    # a writer that trickles (a byte just inside each wait) cannot hold a run forever
    monkeypatch.setattr(inputs, "PIPE_TOTAL_SECONDS", 1.0)
    stop = threading.Event()

    def trickling_writer() -> None:
        with contextlib.suppress(BrokenPipeError), open(fifo, "w") as f:
            while not stop.wait(0.2):  # (the reader gone: the pipe breaks)
                f.write(" ")
                f.flush()

    writer = threading.Thread(target=trickling_writer)
    writer.start()
    began = time.monotonic()
    try:
        with pytest.raises(BadInput, match=r"the writer was still writing after 1\.0 s"):
            inputs.read_text(fifo, "pods file")
    finally:
        stop.set()
    writer.join()
    assert time.monotonic() - began < 3


def test_yaml_aliases_that_share_a_value_are_read(tmp_path: Path) -> None:
    """Aliases are refused only when they expand past what kubegc reads, or loop: a writer's
    sharing (one anchor used a few times) is read as written."""
    from kubegc_cli.core.inputs import parse_yaml

    f = tmp_path / "c.yaml"
    text = "base: &b {a: 1, b: [x, y]}\none: *b\ntwo: *b\n"
    assert parse_yaml(text, f, "config file") == {"base": {"a": 1, "b": ["x", "y"]}} | {
        "one": {"a": 1, "b": ["x", "y"]},
        "two": {"a": 1, "b": ["x", "y"]},
    }


def test_gc_logs_removes_the_links_into_a_removed_directory_so_a_second_run_finds_nothing(
    tmp_path: Path,
) -> None:
    """Idempotence on the host: a gone pod's log directory and the legacy links into it (not
    dangling while its files are there) go in one run; the next run plans nothing."""
    host = tmp_path / "host"
    gone = "default_q_66666666-2222-3333-4444-555555555555"
    (host / f"var/log/pods/{gone}/app").mkdir(parents=True)
    (host / f"var/log/pods/{gone}/app/0.log").write_text("x")
    (host / "var/log/containers").mkdir(parents=True)
    for cid in ("aaaaaaaaaaaa", "bbbbbbbbbbbb"):
        link = host / f"var/log/containers/q_default_app-{cid}.log"
        link.symlink_to(f"/var/log/pods/{gone}/app/0.log")
    code, out, err = _gc_logs(tmp_path, host, "/var/log/pods")
    assert code == 0, err
    assert [(a["kind"], a["result"]) for a in json.loads(out)["actions"]] == [
        ("pod-log-dir", "removed"), ("log-symlink", "removed"), ("log-symlink", "removed"),
    ]  # fmt: skip
    assert list((host / "var/log/containers").iterdir()) == []
    code, out, err = _gc_logs(tmp_path, host, "/var/log/pods")
    assert code == 0 and json.loads(out)["actions"] == [], err


def test_gc_all_plans_a_link_without_a_container_id_as_gc_logs_does(tmp_path: Path) -> None:
    """`gc all` leaves to its container stage the links of the containers it removes; a link
    whose name carries no container ID belongs to none of them and is planned as `gc logs`
    plans it (else a second run would find it)."""
    host = tmp_path / "host"
    (host / "var/log/pods").mkdir(parents=True)
    (host / "var/log/containers").mkdir(parents=True)
    (host / "var/log/containers/stray_ns_x-ab.log").symlink_to("/nonexistent/x.log")
    argv = ["--host-root", str(host), "--state-dir", str(tmp_path / "state"), "--now",
            "2027-01-15T08:00:00Z", "--pods-file", str(_pods_file(tmp_path)), "gc", "all",
            "--pod-logs-dir", "/var/log/pods", "--dry-run", "-o", "json"]  # fmt: skip
    with use_runtime(node()):
        code, out, err = run_cli(argv)
    assert code == 0, err
    planned = [(a["kind"], a.get("rule")) for a in json.loads(out)["actions"]]
    assert ("container", "max-per-pod-container") in planned
    assert ("log-symlink", "unparsable-link") in planned


# ---- deep nesting: every reader of a document from outside kubegc ----
#
# Python's json and yaml recurse once per level: a document nested past the recursion limit
# (or one that parses, but that a later walk recurses through from deeper in the stack) must
# be a clear answer — bad input naming the file, an API that gave no usable answer, a damaged
# file in the state directory ignored and replaced, a runtime that did not say — never a
# RecursionError.

#: Around kubegc's nesting limit, around Python's recursion limit (1000), and far past it.
DEPTHS = st.one_of(
    st.integers(MAX_NESTING - 2, MAX_NESTING + 2),
    st.sampled_from([300, 900, 960, 990, 1000, 1010, 3000, 100_000]),
)
DEEP = settings(FUZZ, max_examples=min(FUZZ.max_examples, 25))
PLACE = '"@deep@"'


@st.composite
def deep_values(draw: st.DrawFn) -> str:
    """JSON text (also YAML flow text) of one value nested `DEPTHS` levels deep, in a drawn
    pattern of lists and objects."""
    depth = draw(DEPTHS)
    pattern = draw(st.lists(st.sampled_from(["[", '{"a":', "[1,", '{"k":"v","a":']),
                            min_size=1, max_size=3))  # fmt: skip
    opens = [pattern[i % len(pattern)] for i in range(depth)]
    closes = "".join("]" if o[0] == "[" else "}" for o in reversed(opens))
    return "".join(opens) + draw(st.sampled_from(["1", '"x"', "null", "[]", "{}"])) + closes


@st.composite
def deep_in(draw: st.DrawFn, make: Any) -> str:
    """`make()` as JSON text with one value anywhere (the whole document too) replaced by a
    deeply nested one."""
    doc = json.loads(json.dumps(make()))
    path = draw(st.sampled_from(_paths(doc)))
    if not path:
        return str(draw(deep_values()))
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = "@deep@"
    return json.dumps(doc).replace(PLACE, draw(deep_values()), 1)


@st.composite
def deep_block_yaml(draw: st.DrawFn) -> str:
    """YAML nested in block style (indentation, no brackets), around both limits."""
    depth = draw(st.one_of(st.integers(MAX_NESTING - 2, MAX_NESTING + 2),
                           st.sampled_from([400, 1000, 1500])))  # fmt: skip
    seq = draw(st.booleans())
    return (
        "".join(" " * i + ("- " if seq else "k:") + "\n" for i in range(depth))
        + " " * depth
        + "x\n"
    )


def _saved_plan(work: Path) -> dict[str, Any]:
    """A plan file `gc containers --plan-out` writes for `node()`."""
    f = work / "saved-plan.json"
    if not f.exists():
        with use_runtime(node()):
            code, _, err = run_cli([*base(work), "--pod-source", "none", "gc", "containers",
                                    "--plan-out", str(f)])  # fmt: skip
        assert code == 0, err
    doc: dict[str, Any] = json.loads(f.read_text())
    return doc


FILE_KINDS = ["pods", "snapshot", "snapshot-yaml", "plan", "config", "kubelet", "crictl",
              "kubeconfig"]  # fmt: skip


@DEEP
@given(kind=st.sampled_from(FILE_KINDS), data=st.data())
def test_deeply_nested_files_a_user_names_are_bad_input(
    work: Path, kind: str, data: st.DataObject
) -> None:
    """Every file kubegc reads from a flag: a normal run or one line naming the file, exit 2."""
    templates: dict[str, Any] = {
        "pods": pods_doc, "snapshot": snapshot_doc, "snapshot-yaml": snapshot_doc,
        "plan": lambda: _saved_plan(work), "config": lambda: CONFIG_TEMPLATE,
        "kubelet": lambda: KUBELET_TEMPLATE, "crictl": lambda: {"runtime-endpoint": "/x.sock"},
        "kubeconfig": lambda: yaml.safe_load(
            "{apiVersion: v1, kind: Config, current-context: c, clusters: [{name: k, cluster: "
            "{server: 'https://127.0.0.1:1'}}], users: [{name: u, user: {token: t}}], "
            "contexts: [{name: c, context: {cluster: k, user: u}}]}"),
    }  # fmt: skip
    yaml_kinds = ("snapshot-yaml", "config", "kubelet", "crictl", "kubeconfig")
    text = data.draw(
        st.one_of(deep_in(templates[kind]), deep_block_yaml())
        if kind in yaml_kinds
        else deep_in(templates[kind])
    )
    f = work / f"deep-{kind}"
    f.write_text(text)
    cri = node()
    argv = {
        "pods": ["--pods-file", str(f), "gc", "containers", "--yes"],
        "snapshot": ["--pod-source", "none", "--snapshot", str(f), "gc", "containers"],
        "snapshot-yaml": ["--pod-source", "none", "--snapshot", str(f), "gc", "sandboxes"],
        "plan": ["--pod-source", "none", "apply", str(f), "--yes"],
        "config": ["--config", str(f), "gc", "containers", "--yes"],
        "kubelet": ["--kubelet-config", str(f), "gc", "containers", "--yes"],
        "kubeconfig": ["--pod-source", "api", "--kubeconfig", str(f), "--timeout", "1s", "gc",
                       "containers", "--yes"],
    }  # fmt: skip
    if kind == "crictl":
        host = work / "deep-crictl-host"
        (host / "etc").mkdir(parents=True, exist_ok=True)
        (host / "etc" / "crictl.yaml").write_text(text)
        result = run_cli([*base(work), "--host-root", str(host), "--timeout", "1s", "gc",
                          "containers", "--dry-run"])  # fmt: skip
        check(result, [str(host / "etc" / "crictl.yaml")], ok=(3,))
        return
    with use_runtime(cri):
        result = run_cli([*base(work), *argv[kind]])
    check(result, [str(f)], cri, ok=(0, 3))


@DEEP
@given(text=deep_in(pods_doc))
def test_shell_completion_from_a_deeply_nested_pods_file_offers_nothing(
    work: Path, text: str
) -> None:
    """Completion reads `--pods-file` on every Tab: a file it cannot read offers nothing."""
    from kubegc_cli.cli.completion import known_pods
    from kubegc_cli.cli.main import cli

    f = work / "deep-complete.json"
    f.write_text(text)
    ctx = cli.make_context("kubegc", ["--pods-file", str(f), "gc"], resilient_parsing=True)
    found = known_pods(ctx)
    assert set(found) <= {("default", "pod-uid-p"), ("default", "e"), ("default", "d")}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Path]]:
    """One recorded API for the examples (its answers are set by each)."""
    from tests.unit.recorded_api import serve_recorded_api

    with serve_recorded_api(tmp_path_factory.mktemp("deep-api")) as served:
        yield served


def _api_answers(api: Any, path: str, text: str, status: int = 200) -> None:
    api.raw = {("GET", path): (status, text.encode())}
    api.pages, api.fail = [[]], {}


def _one_line(err: str, *needles: str) -> None:
    assert "Traceback" not in err and err.startswith("kubegc: error: "), err
    assert err.count("\n") == 1 and all(n in err for n in needles), err


@DEEP
@given(text=deep_in(lambda: {"kind": "PodList", "metadata": {"continue": ""},
                             "items": [pods_doc()["items"][0]]}))  # fmt: skip
def test_a_deeply_nested_pod_list_from_the_api_is_no_answer(
    work: Path, recorded: tuple[Any, Path], text: str
) -> None:
    """The API pod source: a reply it cannot read is an API that did not answer (exit 3),
    one line naming the API; nothing removed."""
    api, kubeconfig = recorded
    _api_answers(api, "/api/v1/pods", text)
    cri = node()
    with use_runtime(cri):
        code, out, err = run_cli([*base(work), "--pod-source", "api", "--kubeconfig",
                                  str(kubeconfig), "gc", "containers", "--yes"])  # fmt: skip
    assert cri.removed == [] or code == 0, err
    if code != 0:  # (a pod kubegc cannot read in a reply it can: bad input from the API)
        assert code in (2, 3) and out == ""
        _one_line(err, "127.0.0.1")


@DEEP
@given(text=deep_values(), status=st.sampled_from([200, 500]))
def test_a_deeply_nested_evict_prune_answer_is_no_answer(
    work: Path, recorded: tuple[Any, Path], text: str, status: int
) -> None:
    """`evict prune`: the list (or the API's refusal of it) nested too deeply — exit 3, one
    line, nothing deleted."""
    api, kubeconfig = recorded
    _api_answers(api, "/api/v1/pods", text, status)
    code, out, err = run_cli([*base(work), "--kubeconfig", str(kubeconfig), "--node-name",
                              "node-a", "evict", "prune", "--yes"])  # fmt: skip
    assert code == 3 and out == "", err
    _one_line(err, "Kubernetes API")
    assert api.deletes == []


@DEEP
@given(text=deep_values())
def test_a_deeply_nested_answer_to_a_deletion_still_counts_the_deletion(
    work: Path, recorded: tuple[Any, Path], text: str
) -> None:
    """The API deleted the pod (200) but its answer cannot be read: the pod is deleted, no
    note about finalizers, exit 0."""
    from tests.unit.recorded_api import api_pod

    api, kubeconfig = recorded
    api.raw, api.fail, api.honor_selectors = {}, {}, True
    api.pages = [[api_pod("web-1")]]
    api.raw[("DELETE", "/api/v1/namespaces/default/pods/web-1")] = (200, text.encode())
    code, out, err = run_cli([*base(work), "--kubeconfig", str(kubeconfig), "--node-name",
                              "node-a", "evict", "prune", "--yes", "-o", "json"])  # fmt: skip
    assert code == 0, err
    assert [a["result"] for a in json.loads(out)["actions"]] == ["removed"]


@DEEP
@given(text=deep_in(lambda: {"kind": "Node", "metadata": {"name": "node-a"},
                             "status": {"allocatable": {"memory": "8Gi"}}}))  # fmt: skip
def test_a_deeply_nested_node_from_the_api_is_no_answer(
    recorded: tuple[Any, Path], text: str
) -> None:
    from kubegc_cli.node.pods.api import ApiSource, ApiUnavailable, read_node

    api, kubeconfig = recorded
    _api_answers(api, "/api/v1/nodes/node-a", text)
    try:
        doc = read_node(ApiSource(str(kubeconfig), None, "node-a"), 5)
    except ApiUnavailable as exc:
        assert "node node-a" in str(exc) and "\n" not in str(exc)
    else:
        assert doc.get("kind") in (None, "Node")  # (a deep value kubegc could read)


@DEEP
@given(text=deep_values(), where=st.sampled_from(["answer", "state"]))
def test_deeply_nested_event_answers_and_rate_limit_files_are_warnings(
    work: Path, recorded: tuple[Any, Path], text: str, where: str
) -> None:
    """`--events`: the API's refusal nested too deeply is one warning; an `events.json` in the
    state directory nested too deeply is damaged — one warning, the Event posted, the file
    replaced."""
    from kubegc_cli.core.settings import Settings
    from kubegc_cli.report.events import STATE_FILE, record_events
    from tests.unit.test_events import GC_DONE

    api, kubeconfig = recorded
    api.raw, api.event_answer, api.events = {}, None, []
    state = work / f"deep-events-{where}"
    state.mkdir(exist_ok=True)
    (state / STATE_FILE).unlink(missing_ok=True)
    if where == "answer":
        api.raw[("POST", "/api/v1/namespaces/default/events")] = (500, text.encode())
    else:
        (state / STATE_FILE).write_text(text)
    s = Settings(kubeconfig=str(kubeconfig), node_name="node-a", state_dir=state, timeout=5,
                 env={})  # fmt: skip
    warnings: list[str] = []
    posted = record_events(s, "gc all", GC_DONE, 0, warn=warnings.append, now=1.8e9)
    assert len(warnings) == 1 and "\n" not in warnings[0], warnings
    if where == "answer":
        assert posted == [] and "not recorded: 500" in warnings[0]
    else:
        assert len(posted) == 1 and str(state / STATE_FILE) in warnings[0]
        assert json.loads((state / STATE_FILE).read_text())["last_posted"]


@pytest.fixture(scope="module")
def lying_runtime() -> Iterator[Any]:
    """A CRI runtime over gRPC whose verbose info each example sets (a runtime that lies is
    not one a real containerd can be made into)."""
    import tempfile

    from tests.unit.faultcri import FaultCri, Inventory, sandbox_pb

    inv = Inventory(sandboxes={"sb-1": sandbox_pb("sb-1", pod_uid="uid-1", pod_name="p")})
    with tempfile.TemporaryDirectory(prefix="kgc-") as d, FaultCri(Path(d) / "c.sock", inv) as cri:
        yield cri


@DEEP
@given(status=deep_in(lambda: {"sandboxImage": "registry.k8s.io/pause:3.10", "x": [1]}),
       sandbox=deep_in(lambda: {"runtimeSpec": {"linux": {"namespaces": [
           {"type": "network", "path": "/var/run/netns/cni-1"}]}}}))  # fmt: skip
def test_deeply_nested_verbose_info_from_the_runtime_says_nothing(
    work: Path, lying_runtime: Any, status: str, sandbox: str
) -> None:
    """The runtime's verbose `Status` config and `PodSandboxStatus` info nested too deeply:
    never a traceback. A network namespace it names so is unknown (as when it gives no verbose
    info); a sandbox image it names so is unknown too, and then `gc images` takes no image for
    unused on its word: exit 3 with one line saying so — unless the sandbox image is given with
    `--pod-infra-container-image` (a warning, and the run goes on)."""
    from kubegc_cli.core.errors import SandboxImageUnreadable
    from kubegc_cli.node.cri.client import CriClient
    from kubegc_cli.node.cri.endpoint import resolve_endpoint
    from kubegc_cli.node.sandboximages import sandbox_image_from_info

    lying_runtime.inventory.status_info = {"config": status}
    lying_runtime.inventory.sandbox_info = {"sb-1": {"info": sandbox}}
    client = CriClient(resolve_endpoint(lying_runtime.endpoint, {}, work), timeout=10)
    try:
        try:
            sandbox_image_from_info(client.status_info())  # named, or not said: both readable
            readable = True
        except SandboxImageUnreadable:
            readable = False
        [(sid, netns)] = list(client.sandbox_netns(["sb-1"]))
        assert sid == "sb-1" and netns in (None, "", "/var/run/netns/cni-1")
    finally:
        client.close()
    host = work / "images-host"
    (host / "var/lib/containerd").mkdir(parents=True, exist_ok=True)
    argv = ["--host-root", str(host), "--state-dir", str(work / "state"), "-r",
            lying_runtime.endpoint, "gc", "images", "--dry-run"]  # fmt: skip
    code, _, err = run_cli(argv)
    assert "Traceback" not in err, err
    if readable:
        assert code == 0, err
        return
    assert code == 3 and err.count("\n") == 1, err
    assert "the sandbox image the runtime protects is unknown" in err
    code, _, err = run_cli([*argv, "--pod-infra-container-image", "registry.k8s.io/pause:3.10"])
    assert code == 0 and "Traceback" not in err, err
    assert "the sandbox image protected is --pod-infra-container-image's" in err


def saved_plans(work: Path) -> list[dict[str, Any]]:
    """Plan files as `--plan-out` writes them, of every kind of action `apply` carries out:
    a `gc all` plan (container, sandbox, pod log directory held back, legacy link, a kept
    container) and a `gc images` plan."""
    from kubegc_cli.core.plan import (
        ContainerAction,
        ImageAction,
        LogAction,
        Plan,
        Result,
        SandboxAction,
    )
    from kubegc_cli.core.settings import Settings
    from kubegc_cli.node.planfile import saved_document

    cri = node()
    uid = "66666666-2222-3333-4444-555555555555"
    dead = Sandbox("sb-gone", "gone", "default", uid, 0, SandboxState.NOTREADY, NOW - 900 * S)
    everything: Plan[Any] = Plan(
        kind="GCPlan", policy={"containers": {"match_kubelet": False}}, now=NOW,
        actions=[
            ContainerAction(cri.containers["dead0000"], "max-per-pod-container", "r"),
            SandboxAction(dead, "deleted-pod", "pod gone", 0),
            LogAction("pod-log-dir", f"/var/log/pods/default_gone_{uid}", "", uid,
                      "deleted-pod", "pod gone", 10, Result.HELD_BACK, "held back by a cap"),
            LogAction("log-symlink", "/var/log/containers/gone_default_app-abcdef.log", "", "",
                      "container-gone", "dangling"),
        ],
        kept=[ContainerAction(cri.containers["dead0002"], "max-per-pod-container", "newest",
                              Result.KEPT)],
        notes=["a note"], source="memory",
    )  # fmt: skip
    image = Image("sha256:aa", ("busybox:1",), ("busybox@sha256:bb",), 10, False)
    images: Plan[Any] = Plan(
        kind="ImageGCPlan", policy={"keep": ["registry.k8s.io/*"], "sandbox_image": "pause"},
        now=NOW, actions=[ImageAction(image, NOW - 1000 * S, NOW - 100 * S, "max-age", "old")],
    )  # fmt: skip
    s = Settings(host_root=work / "host")
    return [json.loads(json.dumps(saved_document(p, s))) for p in (everything, images)]


#: How Python, not a plan file, would put it.
PYTHON_WORDS = (
    "object has no attribute", "' object", "subscriptable", "not iterable", "unhashable",
    "dictionary update", "invalid literal", "argument must be", "True", "False", "None",
)  # fmt: skip


@FUZZ
@given(which=st.sampled_from([0, 1]), data=st.data())
def test_plan_file(work: Path, which: int, data: st.DataObject) -> None:
    """`apply` of a plan file with values of any type anywhere: a normal run, or one line
    naming the file, in the file's terms (its fields and JSON's values), never Python's."""
    text = data.draw(mutated(lambda: saved_plans(work)[which]))
    f = work / "plan.json"
    f.write_text(text, encoding="utf-8", errors="surrogatepass")
    cri = node()
    with use_runtime(cri):
        result = run_cli([*base(work), "--pod-source", "none", "apply", str(f), "--dry-run"])
    if check(result, [str(f)], cri) == 2:
        said = result[2].replace(repr(str(f)), "").replace(str(f), "")
        # (a word the file itself holds, as a key or a string, may be quoted back)
        assert not any(w in said and w not in text for w in PYTHON_WORDS), result[2]


@pytest.mark.parametrize("form", ["json", "yaml-flow", "yaml-block", "json-objects"])
def test_the_nesting_limit_is_exact(form: str) -> None:
    """`MAX_NESTING` levels are read, one more is refused with the reason, whatever the
    recursion limit would have allowed."""
    from kubegc_cli.core.inputs import Malformed, decode_json, decode_yaml

    def text(levels: int) -> str:
        if form == "json-objects":
            return '{"a":' * levels + "1" + "}" * levels
        if form == "yaml-block":
            return "".join(" " * i + "- \n" for i in range(levels - 1)) + " " * levels + "- x\n"
        return "[" * levels + "1" + "]" * levels

    decode = decode_json if form.startswith("json") else decode_yaml
    assert decode(text(MAX_NESTING), "doc") is not None
    with pytest.raises(Malformed, match=f"doc is nested too deeply .*more than {MAX_NESTING}"):
        decode(text(MAX_NESTING + 1), "doc")


@DEEP
@given(text=deep_in(lambda: {"kind": "RuntimeFilesystems", "version": 1, "runtimes": {
    "unix:///run/containerd/containerd.sock": {"socket": [1, 2, 3],
                                               "image_filesystems": ["/var/lib/containerd"],
                                               "container_filesystems": []}}}))  # fmt: skip
def test_a_deeply_nested_runtime_fs_cache_is_damaged_warned_and_replaced(
    work: Path, text: str
) -> None:
    """`evict check`'s cache in the state dir: one warning naming it, no entry, and the
    next `remember` writes a good file over it."""
    from kubegc_cli.node.cri import fscache

    state = work / "deep-fscache"
    state.mkdir(exist_ok=True)
    fscache.cache_path(state).write_text(text)
    warned: list[str] = []
    endpoint = "unix:///run/containerd/containerd.sock"
    found, why = fscache.lookup(state, endpoint, (1, 2, 3), work / "host", warned.append)
    if found is None and why.endswith(fscache.DAMAGED):
        assert len(warned) == 1 and str(fscache.cache_path(state)) in warned[0], warned
    assert fscache.remember(state, endpoint, (1, 2, 3), ["/var/lib/containerd"], []) == ""
    again = json.loads(fscache.cache_path(state).read_text())
    assert again["runtimes"][endpoint]["image_filesystems"] == ["/var/lib/containerd"]

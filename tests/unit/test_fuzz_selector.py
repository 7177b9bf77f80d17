"""`-l/--selector` through the command line: whatever text it is given, a normal run or one
line naming the text, exit 2, and nothing removed; the nastiest texts kept as regression
cases (`CORPUS`); and what a valid selector removes (`gc containers`, `gc sandboxes`).

Runs in-process against an in-memory runtime (`tests.unit.memorycri`), with `--yes`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kubegc_cli.core.model import LABEL_POD_NAME, LABEL_POD_NAMESPACE, LABEL_POD_UID, Sandbox
from kubegc_cli.core.model import SandboxState as State
from tests.unit.factories import NOW, S, ctr
from tests.unit.memorycri import MemoryCri, run_cli, use_runtime

FUZZ = settings(
    max_examples=int(os.environ.get("KUBEGC_FUZZ_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def sandbox(uid: str, labels: dict[str, str], *, sid: str = "", age_s: int = 1000,
            state: State = State.READY) -> Sandbox:  # fmt: skip
    """A kubelet-made sandbox of pod `uid` carrying the pod's `labels`."""
    kubelet = {LABEL_POD_UID: uid, LABEL_POD_NAME: f"pod-{uid}", LABEL_POD_NAMESPACE: "default"}
    return Sandbox(sid or f"sb-{uid}", f"pod-{uid}", "default", uid, 0, state, NOW - age_s * S,
                   labels={**kubelet, **labels})  # fmt: skip


def node() -> MemoryCri:
    """Pods `a` (app=x) and `b` (app=y), each with three dead attempts of one container (the
    two oldest are garbage) and an older NOTREADY sandbox besides its READY one."""
    cs = [ctr(f"{u}{i}", uid=u, attempt=i, age_s=900 - 100 * i) for u in "ab" for i in range(3)]
    sbs = [
        sandbox("a", {"app": "x"}),
        sandbox("a", {"app": "x"}, sid="sb-a-old", age_s=5000, state=State.NOTREADY),
        sandbox("b", {"app": "y"}),
        sandbox("b", {"app": "y"}, sid="sb-b-old", age_s=5000, state=State.NOTREADY),
    ]
    return MemoryCri({c.id: c for c in cs}, {s.id: s for s in sbs})


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A scratch directory: the host root (empty) and the state dir."""
    root = tmp_path_factory.mktemp("fuzz-selector")
    (root / "host").mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("CONTAINER_RUNTIME_ENDPOINT",
                                                            "KUBECONFIG")}  # fmt: skip
    with mock.patch.dict(os.environ, env, clear=True):
        yield root


def base(work: Path) -> list[str]:
    return ["--host-root", str(work / "host"), "--state-dir", str(work / "state"), "--now",
            "2027-01-15T08:00:00Z", "--pod-source", "none"]  # fmt: skip


def check_bad(result: tuple[int, str, str], text: str, cri: MemoryCri) -> None:
    """Exit 2, one line on stderr naming `text`, nothing on stdout, nothing removed."""
    code, out, err = result
    assert "Traceback" not in err
    assert code == 2, (code, err)
    assert err.startswith("kubegc: error: ") and err.count("\n") == 1, err
    assert repr(text) in err
    assert out == "" and cri.removed == []


SELECTOR_TEXT = st.one_of(
    st.text(max_size=30),
    st.lists(st.sampled_from(["app", "x", "y", "=", "==", "!=", "!", ",", "(", ")", " ", "in",
                              "notin", "/", "-", "é", "\x00", ">"]), max_size=10).map("".join),
)  # fmt: skip


@FUZZ
@given(command=st.sampled_from(["containers", "sandboxes"]), text=SELECTOR_TEXT)
@example(command="containers", text="a in (b")
def test_any_selector_text(work: Path, command: str, text: str) -> None:
    cri = node()
    with use_runtime(cri):
        result = run_cli([*base(work), "gc", command, "-l", text, "--yes"])
    code, _, err = result
    if code == 2:
        check_bad(result, text, cri)
    else:
        assert code == 0, err
        assert "Traceback" not in err


# The nastiest texts found: each is bad input naming the text.
CORPUS = [
    "a in (b",
    "a in ()",
    "a in (b,(c))",
    "",
    " ",
    ",",
    "a=b,",
    "!",
    "!a=b",
    "a=b=c",
    "in",
    "in=x",
    "a>1",
    "app=x\napp=y",
    "a=b\x00",
    "é=x",
    "x=" + "v" * 64,
    "k" * 64,
    "p" * 254 + "/n",
    "Upper.Case/n",
    "a/b/c",
    "-a",
    "a in (" + "b," * 2000,
]


@pytest.mark.parametrize("text", CORPUS, ids=lambda t: repr(t)[:30])
@pytest.mark.parametrize("command", ["containers", "sandboxes", "all"])
def test_corpus(work: Path, command: str, text: str) -> None:
    cri = node()
    with use_runtime(cri):
        result = run_cli([*base(work), "gc", command, "-l", text, "--yes"])
    check_bad(result, text, cri)


def test_unclosed_set_exits_2_naming_the_text_and_removes_nothing(work: Path) -> None:
    """The same node with a valid selector does remove (so "nothing removed" is not just a
    runtime that never removes)."""
    cri = node()
    with use_runtime(cri):
        code, out, err = run_cli([*base(work), "gc", "containers", "-l", "a in (b", "--yes"])
    assert (code, out, cri.removed) == (2, "", [])
    assert err == (
        "kubegc: error: invalid label selector 'a in (b': expected ',' or ')' in a value list, "
        "at the end\n"
    )
    with use_runtime(cri):
        code, _, err = run_cli([*base(work), "gc", "containers", "-l", "app in (x)", "--yes"])
    assert code == 0, err
    assert sorted(cri.removed) == ["a0", "a1"]


def test_gc_containers_selects_pods_by_their_sandbox_labels(work: Path) -> None:
    cri = node()
    with use_runtime(cri):
        code, out, err = run_cli(
            [*base(work), "gc", "containers", "-l", "app==y", "--yes", "-o", "json"]
        )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["policy"]["scope"]["selector"] == "app=y"
    assert [(a["id"], a["result"]) for a in doc["actions"]] == [("b0", "removed"),
                                                                ("b1", "removed")]  # fmt: skip
    assert doc["summary"]["out_of_scope"] == 2  # pod a's two, planned by the rules, left
    assert sorted(cri.removed) == ["b0", "b1"]


def test_gc_containers_without_a_sandbox_removes_nothing(work: Path) -> None:
    """A container whose sandbox is gone matches no selector, not even `!app`."""
    cri = node()
    cri.sandboxes.clear()
    with use_runtime(cri):
        code, out, err = run_cli(
            [*base(work), "gc", "containers", "-l", "!app", "--yes", "-o", "json"]
        )
    assert code == 0, err
    assert json.loads(out)["summary"]["out_of_scope"] == 4 and cri.removed == []


def test_gc_sandboxes_selects_by_label(work: Path) -> None:
    cri = node()
    for c in list(cri.containers):  # no container left in any sandbox
        del cri.containers[c]
    with use_runtime(cri):
        code, out, err = run_cli(
            [*base(work), "gc", "sandboxes", "-l", "app!=x", "--yes", "-o", "json"]
        )
    assert code == 0, err
    doc = json.loads(out)
    assert [(a["id"], a["result"]) for a in doc["actions"]] == [("sb-b-old", "removed")]
    assert doc["summary"]["out_of_scope"] == 1 and doc["policy"]["scope"]["selector"] == "app!=x"
    assert cri.removed == ["sb-b-old"]

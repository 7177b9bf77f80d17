"""Large nodes through whole runs: runtime lists beyond gRPC's 4 MiB default, plans of
thousands, and tables that stay readable (at most `PLAN_ROWS` rows without -v, the summary
first, every action in JSON). Correctness only: the speed is measured by bench/scale.py.
"""

from __future__ import annotations

import io
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubegc_cli.core.plan import ContainerAction, Plan, Result
from kubegc_cli.node.cri.v1 import api_pb2
from kubegc_cli.render import plan as render
from kubegc_cli.render.plan import PLAN_ROWS, json_text, render_plan
from tests.unit.factories import NOW, ctr
from tests.unit.faultcri import FaultCri, synthetic_inventory
from tests.unit.memorycri import run_cli

FOUR_MIB = 4 * 1024 * 1024


@pytest.fixture(scope="module")
def big_node() -> Iterator[FaultCri]:
    """20,000 sandboxes of 4,000 pods (16,000 leaked older attempts), 3,000 containers."""
    inv = synthetic_inventory(3000, 20_000, 20, pods=4000)
    reply: object = api_pb2.ListPodSandboxResponse(items=list(inv.sandboxes.values()))
    assert reply.ByteSize() > FOUR_MIB  # type: ignore[attr-defined]
    with tempfile.TemporaryDirectory(prefix="kgc-") as d, FaultCri(Path(d) / "c.sock", inv) as cri:
        yield cri


def argv(cri: FaultCri, state: Path, *args: str) -> list[str]:
    """A `kubegc` command line against `cri`, with no pod source and a fixed now."""
    return ["-r", cri.endpoint, "--state-dir", str(state), "--pod-source", "none", "--now",
            "2027-01-15T08:00:00Z", *args]  # fmt: skip


def test_sandbox_list_beyond_4mib_is_read_and_planned(big_node: FaultCri, tmp_path: Path) -> None:
    code, out, err = run_cli(argv(big_node, tmp_path, "gc", "sandboxes", "--dry-run", "-o", "json"))
    assert code == 0, err
    doc = json.loads(out)
    leaked = {s.id for s in big_node.inventory.sandboxes.values() if s.metadata.attempt != 9}
    assert {a["id"] for a in doc["actions"]} == leaked and len(leaked) == 16_000
    assert {a["rule"] for a in doc["actions"]} == {"older-sandbox"}
    assert len(doc["kept"]) == 4000


def test_a_receive_limit_below_the_reply_is_one_clear_line(
    big_node: FaultCri, tmp_path: Path
) -> None:
    code, out, err = run_cli(
        argv(big_node, tmp_path, "--max-recv-size", "4Mi", "gc", "sandboxes", "--dry-run")
    )
    assert code == 3 and out == ""
    assert "ListPodSandbox" in err and "raise --max-recv-size" in err and err.count("\n") == 1


@pytest.mark.parametrize("command", ["sandboxes", "containers"])
def test_the_table_of_a_big_plan_stays_readable(
    big_node: FaultCri, tmp_path: Path, command: str
) -> None:
    code, table, err = run_cli(argv(big_node, tmp_path, "gc", command, "--dry-run"))
    assert code == 0, err
    code, out, _ = run_cli(argv(big_node, tmp_path, "gc", command, "--dry-run", "-o", "json"))
    total = len(json.loads(out)["actions"])
    assert total > 10 * PLAN_ROWS
    lines = table.splitlines()
    assert len(lines) < PLAN_ROWS + 30
    noun = {"sandboxes": "sandbox", "containers": "container"}[command]
    summary = next(line for line in lines if f"{noun}(s) to remove" in line)
    assert lines[0] == summary == lines[-1] and summary.startswith(f"{total} {noun}(s)")
    not_listed = "more not listed (--limit 0 or -v lists all; -o json has every one)"
    assert f"  {total - PLAN_ROWS} {not_listed}" in lines
    # --limit N lists N rows (before or after the subcommand); bad values are exit 2.
    code, five, err = run_cli(argv(big_node, tmp_path, "gc", command, "--dry-run", "--limit", "5"))
    assert code == 0, err
    assert len(five.splitlines()) < 5 + 30 and f"  {total - 5} {not_listed}" in five.splitlines()
    for bad in ("-1", "x"):
        code, _, err = run_cli(argv(big_node, tmp_path, "--limit", bad, "gc", command))
        assert code == 2 and bad in err and err.count("\n") == 1


def _plan(n: int, failed: set[int]) -> Plan[ContainerAction]:
    plan: Plan[ContainerAction] = Plan(kind="ContainerGCPlan", policy={}, now=NOW, dry_run=False)
    for i in range(n):
        a = ContainerAction(ctr(f"c{i:06d}", attempt=i, age_s=10_000 - i), "max-containers", "x")
        a.result = Result.FAILED if i in failed else Result.REMOVED
        a.error = "refused" if i in failed else ""
        plan.actions.append(a)
    return plan


def test_failed_rows_are_always_listed_and_verbose_lists_all() -> None:
    plan = _plan(PLAN_ROWS + 50, failed={3, PLAN_ROWS + 20})
    out = io.StringIO()
    render_plan(plan, out=out)
    text = out.getvalue()
    assert "c000003" in text and f"c{PLAN_ROWS + 20:06d}" in text  # failed, past the cap
    assert f"c{PLAN_ROWS + 19:06d}" not in text
    assert "  49 more not listed" in text
    assert text.splitlines()[0].startswith("removed 148, skipped 0, failed 2")
    out = io.StringIO()
    render_plan(plan, verbose=1, out=out)
    assert "more not listed" not in out.getvalue() and f"c{PLAN_ROWS + 49:06d}" in out.getvalue()
    out = io.StringIO()
    render_plan(plan, limit=0, out=out)  # --limit 0: every row
    assert "more not listed" not in out.getvalue() and f"c{PLAN_ROWS + 49:06d}" in out.getvalue()
    out = io.StringIO()
    render_plan(plan, limit=10, out=out)
    assert f"c{9:06d}" in out.getvalue() and f"c{10:06d}" not in out.getvalue()
    assert f"c{PLAN_ROWS + 20:06d}" in out.getvalue() and "  139 more not listed" in out.getvalue()
    small = io.StringIO()
    render_plan(_plan(PLAN_ROWS, set()), out=small)
    assert "more not listed" not in small.getvalue()
    assert not small.getvalue().startswith("removed")  # the summary only at the end


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(st.text(), JSON_VALUES | st.lists(st.dictionaries(st.text(), JSON_VALUES))))
def test_json_text_is_the_same_document(doc: dict[str, object]) -> None:
    """Whatever the document, the one-object-per-line JSON parses back to it, key order too."""
    text = json_text(doc)
    back = json.loads(text)
    assert back == doc and list(back) == list(doc)
    # Written in runs of rows (here two at a time), the text is the same.
    out = io.StringIO()
    with mock.patch.object(render, "_ROWS_PER_WRITE", 2):
        render.dump_document(doc, "json", out)
    assert out.getvalue() == text + "\n"


def test_json_text_puts_each_action_on_one_line(big_node: FaultCri, tmp_path: Path) -> None:
    """A big plan as JSON: one line per action (greppable), every action there."""
    code, out, err = run_cli(
        argv(big_node, tmp_path, "gc", "containers", "--dry-run", "-o", "json")
    )
    assert code == 0, err
    doc = json.loads(out)
    lines = [ln for ln in out.splitlines() if ln.startswith('    {"kind": "container"')]
    assert len(doc["actions"]) + len(doc["kept"]) == len(lines) > 1000
    assert [json.loads(ln.rstrip(","))["id"] for ln in lines[: len(doc["actions"])]] == [
        a["id"] for a in doc["actions"]
    ]


def test_the_fake_runtimes_cached_list_follows_removals(tmp_path: Path) -> None:
    """`python -m tests.unit.faultcri` (bench/scale.py's runtime) sends a kept ListContainers
    reply; a removal or stop through CRI makes it list afresh, and filters still apply."""
    from kubegc_cli.node.cri.client import CriClient
    from kubegc_cli.node.cri.endpoint import resolve_endpoint

    inv = synthetic_inventory(300, 40, 5, pods=20)
    with FaultCri(tmp_path / "c.sock", inv, cache_lists=True) as cri:
        client = CriClient(resolve_endpoint(cri.endpoint, {}, tmp_path), timeout=10)
        try:
            before = {c.id: c.state for c in client.list_containers()}
            assert len(before) == 300 and client.list_containers()[0].id in before
            dead = next(cid for cid, st in before.items() if st.value == "EXITED")
            running = next(cid for cid, st in before.items() if st.value == "RUNNING")
            assert client.remove_container(dead)
            client.stop_container(running, 0)
            after = {c.id: c.state for c in client.list_containers()}
            assert dead not in after and len(after) == 299
            assert after[running].value == "EXITED"
            one = next(iter(after))
            sandbox = next(c.pod_sandbox_id for c in client.list_containers() if c.id == one)
            assert {c.pod_sandbox_id for c in client.list_containers(sandbox)} == {sandbox}
        finally:
            client.close()


def test_five_thousand_images_are_listed_and_planned(tmp_path: Path) -> None:
    """`gc images` over 5,000 images and 3,000 containers: every image is in the plan once,
    removed only when no container uses it and the runtime does not pin it (the synthetic
    images carry no repo digest: --allow-unpullable lets them go)."""
    inv = synthetic_inventory(3000, 600, 5000, pods=200)
    host = tmp_path / "host"
    (host / inv.image_fs_mountpoint.lstrip("/")).mkdir(parents=True)
    with FaultCri(tmp_path / "c.sock", inv) as cri:
        code, out, err = run_cli(
            argv(cri, tmp_path / "state", "--host-root", str(host), "gc", "images", "--dry-run",
                 "--prune-unused", "--assume-detected-at", "2026-01-01T00:00:00Z", "-o", "json",
                 "--allow-unpullable")
        )  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    used = {c.image_ref for c in inv.containers.values()} | {
        c.image.image for c in inv.containers.values()
    }
    pinned = {i.id for i in inv.images.values() if i.pinned}
    unused = set(inv.images) - used - pinned
    assert {a["id"] for a in doc["actions"]} == unused and len(unused) > 2000
    assert len(doc["actions"]) + len(doc["kept"]) == 5000
    assert {k["rule"] for k in doc["kept"]} >= {"in-use", "pinned"}


def test_the_full_size_node_is_listed_planned_and_rendered(tmp_path: Path) -> None:
    """The size the scale benchmark times (bench/scale.py), here for correctness: 100,000
    containers, 20,000 sandboxes (a ListPodSandbox reply well over 4 MiB), 5,000 images. Every
    dead container is in the JSON plan once (removed or kept), no running one; the table
    shows the summary first and last and at most `--limit` rows."""
    inv = synthetic_inventory(100_000, 20_000, 5000, pods=10_000)
    reply: object = api_pb2.ListPodSandboxResponse(items=list(inv.sandboxes.values()))
    assert reply.ByteSize() > FOUR_MIB  # type: ignore[attr-defined]
    running = {c.id for c in inv.containers.values() if c.state == api_pb2.CONTAINER_RUNNING}
    with FaultCri(tmp_path / "c.sock", inv) as cri:
        code, out, err = run_cli(
            argv(cri, tmp_path / "st", "gc", "containers", "--dry-run", "-o", "json")
        )
        assert code == 0, err
        doc = json.loads(out)
        planned = [a["id"] for a in doc["actions"]]
        kept = [k["id"] for k in doc["kept"]]
        assert len(planned) + len(kept) == len(set(planned) | set(kept))  # each once
        assert set(planned) | set(kept) == set(inv.containers) - running
        assert len(planned) > 50_000 and not set(planned) & running
        code, table, err = run_cli(
            argv(cri, tmp_path / "st", "gc", "containers", "--dry-run", "--limit", "20")
        )
    assert code == 0, err
    lines = table.splitlines()
    summary = f"{len(planned)} container(s) to remove"
    assert lines[0].startswith(summary) and lines[-1].startswith(summary)
    assert len(lines) < 20 + 30
    assert any(f"{len(planned) - 20} more not listed" in line for line in lines)

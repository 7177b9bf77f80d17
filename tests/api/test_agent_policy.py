"""`kubegc agent --events` against a real kube-apiserver: a policy file changed to a content
the agent cannot use is a `PolicyRejected` Event on the Node (once per content, within the
Events' rate limit), while the last good policy keeps running — the loop, the policy file and
its resolution are kubegc's own; the cycle is `tests.unit.agentseam`'s scripted one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubegc_cli.agent.loop import LoopState, PolicyFile
from kubegc_cli.cli.agent import resolver
from kubegc_cli.cli.main import cli
from tests.api.test_events import node_events
from tests.controlplane import ControlPlane
from tests.unit.agentseam import Step, SteppedClock, drive_policy, rewrite_each_cycle


def test_a_rejected_policy_is_an_event_on_the_node(
    control_plane: ControlPlane, admin: Any, node_name: str, tmp_path: Path
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("agent:\n  max-delete: 10\n")
    root = cli.make_context("kubegc", [
        "--host-root", str(tmp_path), "--state-dir", str(tmp_path / "state"), "--events",
        "--kubeconfig", str(control_plane.kubeconfig("admin")), "--node-name", node_name,
    ])  # fmt: skip
    command = cli.get_command(root, "agent")
    assert command is not None
    ctx = command.make_context("agent", ["--policy", str(path)], parent=root)
    watch = PolicyFile(path, resolver(ctx, path))
    first = watch.load()
    assert first.settings.events and first.options.act.max_delete == 10

    clock = SteppedClock()
    state = LoopState(first.options.interval, clock=clock)
    contents = ["agent:\n  max-delete: lots\n", "agent:\n  max-delete: lots\n",
                "agent:\n  max-delete: -1\n", "agent:\n  max-delete: 4\n"]  # fmt: skip
    seam, said = drive_policy(
        lambda stop: [Step(seconds=1.0, then=rewrite_each_cycle(path, contents, stop))],
        first, watch, state, clock,
    )  # fmt: skip
    errors = [m for level, m in said if level == "error"]
    assert len(errors) == 2 and all(m.startswith(f"policy {path}: ") for m in errors), said
    assert not [m for level, m in said if level == "warning"], said
    events = node_events(admin, node_name)
    # two rejected contents, one Event: at most one per reason and node every 10 minutes
    assert [(e.reason, e.type) for e in events] == [("PolicyRejected", "Warning")]
    assert events[0].message == errors[0] and "max-delete" in events[0].message
    assert events[0].message.endswith("; keeping the last good policy")
    assert [o.act.max_delete for _, o in seam.reconfigured] == [4]  # fixed: in force again
    assert state.readiness() == (True, "ok")

"""Run one ``kubegc`` command in this process with its phases timed; print them as JSON.

Used by the benchmarks for a breakdown of where a command's time goes::

    python bench/_phases.py -- -r unix:///x.sock gc containers --dry-run

stdout of the command itself is discarded (as in the timed runs); the last line of stdout is
one JSON object, phase label -> seconds, in the order the phases first ran. Only the standard
library is imported before kubegc, so kubegc's own imports are measured as they happen.

The phases are functions, wrapped where they are defined and wherever a kubegc module bound
them at import; one that is not found (renamed since) is left out rather than failing, and its
time then shows under ``other``. ``import for X`` is the time of the
imports X needs that nothing before it made (yaml, grpc and the CRI code), taken just before X
runs. ``other`` is what ``main()`` spent outside every phase (click, settings, the
node lock, the re-list before acting, ...).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any


def run(kubegc_args: list[str]) -> dict[str, float]:
    phases: dict[str, float] = {}
    t0 = time.perf_counter()
    import kubegc_cli.cli.main as cli_main

    phases["import kubegc_cli.cli.main (click)"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    import kubegc_cli.commands.flow as app
    import kubegc_cli.node.execute.actions as execute
    import kubegc_cli.node.host.kubelet as kubelet
    import kubegc_cli.node.observe as observe
    import kubegc_cli.node.state as state
    import kubegc_cli.policy.containers as policy
    import kubegc_cli.render.plan as render

    phases["import kubegc_cli.commands.flow, observe, execute, render"] = time.perf_counter() - t1
    in_main: list[str] = []

    def patch(
        owner: Any, names: tuple[str, ...], label: str, pre: Callable[[], object] | None = None
    ) -> None:
        name = next((n for n in names if getattr(owner, n, None) is not None), None)
        if name is None:
            return
        fn = getattr(owner, name)
        in_main.append(label)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if pre is not None:
                began = time.perf_counter()
                pre()
                phases[f"import for {label}"] = time.perf_counter() - began
                in_main.append(f"import for {label}")
            began = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                phases[label] = phases.get(label, 0.0) + time.perf_counter() - began

        if isinstance(owner, type):
            setattr(owner, name, wrapper)
            return
        # The defining module and every kubegc module that bound the name at import time.
        for module in list(sys.modules.values()):
            module_name = getattr(module, "__name__", "")
            if module_name.startswith("kubegc_cli") and getattr(module, name, None) is fn:
                setattr(module, name, wrapper)

    def import_grpc_client() -> None:
        import kubegc_cli.node.cri.client  # noqa: F401  (grpc, protobuf, the generated CRI code)

    def import_yaml() -> None:
        import yaml  # noqa: F401

    patch(kubelet, ("load_kubelet_config",), "read kubelet config", import_yaml)
    patch(app, ("open_client",), "open CRI client", import_grpc_client)
    patch(observe, ("observe_node",), "observe_node (Version, List; statuses for --older-than)")
    patch(policy, ("plan_containers",), "plan_containers")
    patch(app, ("add_writable_layers",), "add_writable_layers (ListContainerStats)")
    patch(execute.ContainerRemover, ("run",), "ContainerRemover.run")
    # each action's audit row is written as it completes (inside ContainerRemover.run); the
    # rest (actions never attempted) and the final sync at the end
    patch(state.AuditLog, ("finish",), "AuditLog.finish (sqlite)")
    # into a pipe the table needs no rich (kubegc_cli.render.table.Screen); on a terminal, or with
    # FORCE_COLOR, rich's import falls inside this phase
    patch(render, ("render_plan", "render_container_plan"), "render plan (table)")
    patch(render, ("dump_document",), "render plan (json/yaml)")

    real_stdout = sys.stdout
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115  (as in the timed runs: output discarded)
    began = time.perf_counter()
    try:
        cli_main.main(kubegc_args)
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise
    finally:
        sys.stdout.close()
        sys.stdout = real_stdout
    main_total = time.perf_counter() - began
    phases["other (click, settings, lock, re-list, ...)"] = main_total - sum(
        phases.get(label, 0.0) for label in set(in_main)
    )
    phases["total after interpreter start-up"] = time.perf_counter() - t0
    return phases


def main() -> int:
    args = sys.argv[1:]
    if args and args[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    if args and args[0] == "--":
        args = args[1:]
    print(json.dumps(run(args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

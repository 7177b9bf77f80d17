"""Shell completion: `kubegc completion SHELL`, the scripts for bash, zsh and fish, and dynamic
values for options.

The scripts are click's: the shell calls `kubegc` back with `_KUBEGC_COMPLETE=<shell>_complete`
and the words typed so far. `kubegc completion SHELL` prints a script; `completions/` holds
the same scripts, generated (`python -m kubegc_cli.cli.docgen`).

Namespaces (`-n`, `--exclude-namespace`) and pods (`--pod`) complete from what is cheap to
read on this machine, never the network or the runtime: the `--pods-file` given on the line
so far, else the pod log directories `<namespace>_<pod>_<uid>` under the pod log root
(`/var/log/pods` under `--host-root`). Nothing readable: no suggestions.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click
from click.shell_completion import CompletionItem, ShellComplete, get_completion_class

from kubegc_cli.cli.options import collected
from kubegc_cli.core.inputs import Malformed, decode_json

SHELLS = ("bash", "zsh", "fish")
COMPLETE_VAR = "_KUBEGC_COMPLETE"
POD_LOGS_DIR = "/var/log/pods"
MAX_PODS_FILE_BYTES = 64 << 20  # larger than this is not "cheap" to read on every Tab


def script(root: click.Command, shell: str) -> str:
    """The completion script for `shell` (bash, zsh or fish). Raises `ValueError` for another."""
    cls = get_completion_class(shell)
    if cls is None or shell not in SHELLS:
        raise ValueError(f"no completion for shell {shell!r} (use {', '.join(SHELLS)})")
    comp = cls(root, {}, "kubegc", COMPLETE_VAR)
    return ShellComplete.source(comp)  # click's bash check of the running shell is skipped


def known_pods(ctx: click.Context) -> list[tuple[str, str]]:
    """(namespace, pod name) pairs from the cheap sources in the module doc, sorted, unique."""
    try:
        g = collected(ctx)
    except Exception:
        g = {}
    pods: set[tuple[str, str]] = set()
    pods_file = g.get("pods_file")
    if pods_file:
        try:
            path = Path(pods_file)
            if path.is_file() and path.stat().st_size <= MAX_PODS_FILE_BYTES:
                doc = decode_json(path.read_bytes(), f"pods file {path}")
                items = doc.get("items") if isinstance(doc, dict) else None
                for item in items if isinstance(items, list) else ():
                    pod = isinstance(item, dict) and item.get("kind", "Pod") == "Pod"
                    meta = item.get("metadata") if pod else None
                    if not isinstance(meta, dict):
                        continue
                    name, ns = meta.get("name"), meta.get("namespace") or "default"
                    if name and isinstance(name, str):
                        pods.add((ns if isinstance(ns, str) else "default", name))
        except (OSError, Malformed):
            pass
        return sorted(pods)
    root = os.path.join(str(g.get("host_root") or "/"), POD_LOGS_DIR.lstrip("/"))
    try:
        names = os.listdir(root)
    except OSError:
        return []
    for name in names:
        parts = name.split("_")
        if len(parts) == 3 and all(parts):
            pods.add((parts[0], parts[1]))
    return sorted(pods)


def complete_namespace(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """Namespaces of the known pods that start with `incomplete`."""
    namespaces = sorted({ns for ns, _ in known_pods(ctx)})
    return [CompletionItem(ns) for ns in namespaces if ns.startswith(incomplete)]


def complete_pod(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """Pod names (or `namespace/name` once a `/` is typed) of the known pods, limited to the
    `-n` namespaces given so far."""
    wanted = set(ctx.params.get("namespace") or ())
    out = []
    for ns, name in known_pods(ctx):
        if wanted and ns not in wanted:
            continue
        value = f"{ns}/{name}" if "/" in incomplete else name
        if value.startswith(incomplete):
            out.append(CompletionItem(value, help=ns))
    return sorted({i.value: i for i in out}.values(), key=lambda i: i.value)


@click.command("completion")
@click.argument("shell", metavar="SHELL", type=click.Choice(["bash", "zsh", "fish"]))
@click.pass_context
def completion_cmd(ctx: click.Context, /, shell: str) -> None:
    """Print the shell completion script for bash, zsh or fish.

    Commands and options complete from the command tree; -n/--exclude-namespace and --pod
    complete from the pods in --pods-file when one is on the line, else from the pod log
    directories on this node (/var/log/pods). The same scripts are in completions/.

    \b
    Examples:
      kubegc completion bash > /etc/bash_completion.d/kubegc
      kubegc completion zsh > "${fpath[1]}/_kubegc"
      kubegc completion fish > ~/.config/fish/completions/kubegc.fish
      source <(kubegc completion bash)
    """
    sys.stdout.write(script(ctx.find_root().command, shell))

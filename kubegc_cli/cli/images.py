"""`kubegc images pin|unpin`: pins in the runtime, which the kubelet's image GC respects."""

from __future__ import annotations

from typing import Any

import click

from kubegc_cli.cli.command import KubegcGroup
from kubegc_cli.cli.common import ConsoleUi, settings_from, table_view
from kubegc_cli.cli.configfile import image_keep
from kubegc_cli.cli.options import GIVEN, global_options
from kubegc_cli.commands.flow import ActOptions
from kubegc_cli.commands.pins import exit_failed, pin_images
from kubegc_cli.core.errors import PartialFailure
from kubegc_cli.core.pins import PIN, UNPIN
from kubegc_cli.render.pins import render_pins


@click.group(cls=KubegcGroup)
@global_options
def images() -> None:
    """Pin images in the runtime, so that the kubelet's own image GC keeps them too."""


def _run(ctx: click.Context, op: str, patterns: tuple[str, ...], opts: dict[str, Any]) -> None:
    s = settings_from(ctx)
    view = table_view(s, f"images {op}")
    ui = ConsoleUi(s.verbose, s.output, s.limit)
    if not patterns:
        patterns = _configured_keep(ctx, ui)
    act = ActOptions(dry_run=opts["dry_run"], yes=opts["yes"])
    plan = pin_images(
        s, patterns, op, act, ui, show=lambda p: render_pins(p, "table", view=view, asking=True)
    )  # fmt: skip
    render_pins(plan, s.output, view=view, quiet=s.quiet)
    if exit_failed(plan):
        raise PartialFailure(f"images {op}: an image could not be {op}ned")


def _configured_keep(ctx: click.Context, ui: ConsoleUi) -> tuple[str, ...]:
    """The config file's `gc.images.keep` patterns (the --keep list gc images runs with), or
    () when it names none."""
    keep, where = image_keep(ctx)
    if keep:
        ui.info(f"patterns from {where}")
    return keep


def _pin_options(f: Any) -> Any:
    f = click.option("-y", "--yes", is_flag=True, help="Act without asking.")(f)
    f = click.option("--dry-run", is_flag=True, help="Show the plan and stop.")(f)
    return click.argument("patterns", nargs=-1, type=GIVEN, metavar="PATTERN...")(f)


@images.command("pin")
@_pin_options
@global_options
@click.pass_context
def pin(ctx: click.Context, /, patterns: tuple[str, ...], **opts: Any) -> None:
    """Pin the images matching the patterns: containerd's io.cri-containerd.pinned label.

    PATTERN is a glob over an image's tags and repo digests, as gc images' --keep; without
    one, the config file's gc.images.keep (the --keep list gc images runs with). containerd
    (1.7 and later) then reports the image pinned through CRI, and the kubelet's image GC
    and kubegc's keep it. Every containerd record of the image (tag, digest, ID) is labelled,
    with kubegc's own label io.kubegc.pinned (the time of the pin) beside it.
    The plan comes first; --dry-run stops there, --yes acts, a terminal is asked. Other
    runtimes (CRI-O, cri-dockerd) and containerd 1.6 have no such pin: nothing is changed
    and the exit code is 2.

    \b
    Examples:
      kubegc images pin 'registry.k8s.io/*' --dry-run
      kubegc images pin 'quay.io/acme/app@sha256:*' --yes
      kubegc --config /etc/kubegc/config.yaml images pin --dry-run
    """
    _run(ctx, PIN, patterns, opts)


@images.command("unpin")
@_pin_options
@global_options
@click.pass_context
def unpin(ctx: click.Context, /, patterns: tuple[str, ...], **opts: Any) -> None:
    """Undo kubegc's own pins of the images matching the patterns.

    As images pin, the other way, for the pins kubegc made only: the records that carry
    kubegc's label io.kubegc.pinned (the time of the pin, as images pin writes it) lose it
    and containerd's io.cri-containerd.pinned. Every other pin stays, with the reason (the
    runtime's own; one set with ctr images label; one by a kubegc that did not set
    io.kubegc.pinned yet; one whose io.kubegc.pinned holds another value), and so does the
    pin of each image the runtime keeps for itself (its sandbox and pinned images, as gc
    images finds them), whoever made it.

    \b
    Examples:
      kubegc images unpin 'registry.k8s.io/*' --dry-run
      kubegc images unpin 'docker.io/library/nginx:*' --yes
    """
    _run(ctx, UNPIN, patterns, opts)

"""`kubegc images pin|unpin`: the planner (a table), and the refusals that change nothing."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.model import Image, RuntimeInfo
from kubegc_cli.core.pins import (
    DONE,
    KEPT,
    OWN_PIN_LABEL,
    PIN,
    PLANNED,
    STILL_PINNED,
    UNPIN,
    StoredImage,
)
from kubegc_cli.policy.pins import (
    NOT_OURS,
    RUNTIME_KEEPS,
    image_records,
    own_pin_changed,
    own_pin_names,
    own_pin_reasons,
    own_pin_time,
    pinning_records,
    plan_pins,
    record_names,
    still_pinned_by,
)
from kubegc_cli.render.pins import render_pins
from tests.unit.memorycri import MemoryCri, run_cli, use_runtime

D = "sha256:" + "cd" * 32
K8S = Image("sha256:k8s", ("registry.k8s.io/coredns:1",), (f"registry.k8s.io/coredns@{D}",))
PAUSE = Image("sha256:pause", ("registry.k8s.io/pause:3.9",), pinned=True)
APP = Image("sha256:app", ("quay.io/acme/app:1",), (f"quay.io/acme/app@{D}",), pinned=True)
IMAGES = [K8S, PAUSE, APP]
LOCAL = Image("sha256:local", ("localhost/kubernetes/pause:1",), pinned=True)


OURS = {OWN_PIN_LABEL: "2026-01-01T00:00:00Z", "io.cri-containerd.pinned": "pinned"}
THEIRS = {"io.cri-containerd.pinned": "pinned"}
#: containerd's records: APP pinned by kubegc (on its digest record only), PAUSE by the runtime
RECORDS = {"quay.io/acme/app:1": THEIRS, f"quay.io/acme/app@{D}": OURS,
           "registry.k8s.io/pause:3.9": THEIRS, "sha256:pause": THEIRS}  # fmt: skip


@pytest.mark.parametrize(
    ("op", "patterns", "records", "planned", "kept"),
    [
        (PIN, ["registry.k8s.io/*"], {}, ["sha256:k8s"], {"sha256:pause": "already pinned"}),
        (PIN, ["*@sha256:*"], RECORDS, ["sha256:k8s"], {"sha256:app": "already pinned"}),
        (PIN, ["nothing/*"], {}, [], {}),
        (UNPIN, ["quay.io/*"], RECORDS, ["sha256:app"], {}),
        (UNPIN, ["registry.k8s.io/*"], RECORDS, [],
         {"sha256:k8s": "not pinned", "sha256:pause": NOT_OURS}),
        (UNPIN, ["*"], RECORDS, ["sha256:app"],
         {"sha256:k8s": "not pinned", "sha256:pause": NOT_OURS, "sha256:local": NOT_OURS}),
        # a pin without kubegc's label (the runtime's, or an older kubegc's) is kept
        (UNPIN, ["*"], {}, [], {"sha256:k8s": "not pinned", "sha256:pause": NOT_OURS,
                                "sha256:app": NOT_OURS, "sha256:local": NOT_OURS}),
        # kubegc's label on a record of another image does not make this pin kubegc's
        (UNPIN, ["registry.k8s.io/pause:*"], {"registry.k8s.io/coredns:1": OURS}, [],
         {"sha256:pause": NOT_OURS}),
        # kubegc's own pin of a localhost image is undone like any other
        (UNPIN, ["localhost/*"], {"localhost/kubernetes/pause:1": OURS}, ["sha256:local"], {}),
        (PIN, ["quay.io/acme/app:1", "registry.k8s.io/coredns:*"], {}, ["sha256:k8s"],
         {"sha256:app": "already pinned"}),
    ],
)  # fmt: skip
def test_plan_pins(
    op: str, patterns: list[str], records: dict[str, dict[str, str]], planned: list[str],
    kept: dict[str, str],
) -> None:  # fmt: skip
    plan = plan_pins([*IMAGES, LOCAL], patterns, op, records=records)
    assert [a.id for a in plan.actions] == planned
    assert all(a.result == PLANNED and a.op == op for a in plan.actions)
    assert {k.id: k.reason for k in plan.kept} == kept
    assert all(k.result == KEPT for k in plan.kept)
    if not planned and not kept:
        assert plan.notes == ["no image matches " + " ".join(patterns)]


def test_unpin_never_plans_an_image_the_runtime_keeps_for_itself() -> None:
    """The runtime's sandbox (or pinned) image is kept even when a record of it carries
    kubegc's own label, with what it is and why; one not pinned is "not pinned" as any."""
    records = {"registry.k8s.io/pause:3.9": OURS, "sha256:pause": OURS,
               "registry.k8s.io/coredns:1": OURS, f"quay.io/acme/app@{D}": OURS}  # fmt: skip
    why = "the sandbox image registry.k8s.io/pause:3.9 (config.toml)"
    protected = {"sha256:pause": why, "sha256:k8s": why}
    plan = plan_pins(IMAGES, ["*"], UNPIN, records=records, protected=protected)
    assert [a.id for a in plan.actions] == ["sha256:app"]
    kept = {k.id: k.reason for k in plan.kept}
    assert kept == {"sha256:pause": f"{why}, {RUNTIME_KEEPS}", "sha256:k8s": "not pinned"}
    assert "never unpins" in RUNTIME_KEEPS
    # pin is not narrowed: an image is pinned whoever keeps it
    pin = plan_pins(IMAGES, ["*"], PIN, records=records, protected=protected)
    assert [a.id for a in pin.actions] == ["sha256:k8s"]


def test_own_pin_names_are_the_records_carrying_kubegcs_label() -> None:
    assert record_names(APP) == ("quay.io/acme/app:1", f"quay.io/acme/app@{D}", "sha256:app")
    assert own_pin_names(APP, RECORDS) == (f"quay.io/acme/app@{D}",)
    assert own_pin_names(PAUSE, RECORDS) == ()
    assert "ctr -n k8s.io images label" in NOT_OURS


@pytest.mark.parametrize(
    ("value", "ours"),
    [
        ("2026-01-01T00:00:00Z", True),
        ("2026-01-01T00:00:00.000000001Z", True),
        ("2026-01-01T00:00:00.500000000Z", True),  # nanoseconds, as ns_to_rfc3339 writes them
        ("2026-01-01T00:00:00.5Z", False),  # RFC 3339, but kubegc writes nine digits
        ("2026-01-01T00:00:00+00:00", False),  # an offset: kubegc writes Z
        ("2026-01-01t00:00:00z", False),
        (" 2026-01-01T00:00:00Z", False),
        ("2026-13-01T00:00:00Z", False),
        ("yes", False),
        ("", False),
        ("pinned", False),
    ],
)
def test_a_planted_own_label_is_not_kubegcs_pin(value: str, ours: bool) -> None:
    """Only a value `images pin` writes makes a pin kubegc's: unpin plans that image, and
    keeps any other, naming the record and the value."""
    planted = {OWN_PIN_LABEL: value, "io.cri-containerd.pinned": "pinned"}
    assert (own_pin_time(planted) == value) is ours
    plan = plan_pins([PAUSE], ["*"], UNPIN, records={"registry.k8s.io/pause:3.9": planted})
    assert [a.id for a in plan.actions] == (["sha256:pause"] if ours else [])
    if not ours:
        [kept] = plan.kept
        assert "registry.k8s.io/pause:3.9" in kept.reason and repr(value) in kept.reason
        assert "not kubegc's pin" in kept.reason and "ctr -n k8s.io images label" in kept.reason


def test_a_planted_own_label_beside_kubegcs_own_leaves_only_the_planted_record() -> None:
    planted = {**THEIRS, OWN_PIN_LABEL: "mine"}
    records = {"quay.io/acme/app:1": planted, f"quay.io/acme/app@{D}": OURS}
    assert own_pin_names(APP, records) == (f"quay.io/acme/app@{D}",)
    plan = plan_pins([APP], ["*"], UNPIN, records=records)
    assert [a.id for a in plan.actions] == ["sha256:app"]


PLANNED_RECORD = StoredImage("race:1", OURS, "sha256:target", 1_000)


@pytest.mark.parametrize(
    ("now", "why"),
    [
        (PLANNED_RECORD, ""),
        # another label changed (containerd's CRI marks the record managed): still kubegc's pin
        (StoredImage("race:1", {**OURS, "io.cri-containerd.image": "managed"}, "sha256:target",
                     1_000), ""),
        # removed and tagged again, even onto the same image with the same labels copied
        (StoredImage("race:1", OURS, "sha256:target", 2_000), "removed and made again"),
        (StoredImage("race:1", OURS, "sha256:other", 1_000), "points at another image"),
        (StoredImage("race:1", THEIRS, "sha256:target", 1_000), "no longer carries kubegc's"),
        (StoredImage("race:1", {**THEIRS, OWN_PIN_LABEL: "x"}, "sha256:target", 1_000),
         "no longer carries kubegc's"),
        (StoredImage("race:1", {**OURS, OWN_PIN_LABEL: "2026-02-01T00:00:00Z"}, "sha256:target",
                     1_000), "another io.kubegc.pinned"),
    ],
)  # fmt: skip
def test_own_pin_changed_at_the_moment_of_the_write(now: StoredImage, why: str) -> None:
    """An unpin writes to a record only while it is the record planned, still carrying
    kubegc's pin: made again, retargeted, or relabelled, it is left alone, saying why."""
    got = own_pin_changed(PLANNED_RECORD, now)
    assert (got == "") if not why else (why in got and "race:1" in got), got


@pytest.mark.parametrize("patterns", [[], [""], ["  "]])
def test_plan_pins_refuses_no_or_empty_patterns(patterns: list[str]) -> None:
    with pytest.raises(BadInput):
        plan_pins(IMAGES, patterns, PIN)


@dataclass
class OtherRuntime(MemoryCri):
    """A stand-in runtime that names itself as `name` `version` (to inject what CRI-O and an
    older containerd answer to Version)."""

    name: str = "cri-o"
    version: str = "1.30.0"

    def check(self) -> RuntimeInfo:
        return RuntimeInfo(self.name, self.version, "v1")


@pytest.mark.parametrize(
    ("name", "version", "needle"),
    [
        ("cri-o", "1.30.0", "not supported on cri-o 1.30.0"),
        ("docker", "24.0.7", "not supported on docker 24.0.7"),
        ("containerd", "1.6.20~ds1", "containerd 1.7 on"),
        ("containerd", "v1.6.33", "containerd 1.7 on"),
        ("containerd", "weird", "containerd 1.7 on"),
    ],
)
@pytest.mark.parametrize("op", ["pin", "unpin"])
def test_a_runtime_that_does_not_read_pins_is_refused_plainly(
    tmp_path: Path, name: str, version: str, needle: str, op: str
) -> None:
    cri = OtherRuntime(containers={}, sandboxes={}, images={i.id: i for i in IMAGES},
                       name=name, version=version)  # fmt: skip
    with use_runtime(cri):
        code, out, err = run_cli(["--state-dir", str(tmp_path / "s"), "images", op,
                                  "registry.k8s.io/*", "--yes"])  # fmt: skip
    assert code == 2 and err.count("\n") == 1 and needle in err, err
    assert "nothing was changed" in err and out == ""


def test_pin_bad_input_is_one_line_before_the_runtime(tmp_path: Path) -> None:
    for argv in (["images", "pin"], ["images", "pin", ""], ["images", "unpin", "x", "--dry-run",
                                                            "--yes"]):  # fmt: skip
        code, _, err = run_cli(["-r", "unix:///nonexistent.sock", *argv])
        assert code == 2 and err.count("\n") == 1, (argv, err)


def test_pin_dry_run_on_containerd_shows_the_plan_and_changes_nothing(tmp_path: Path) -> None:
    cri = OtherRuntime(containers={}, sandboxes={}, images={i.id: i for i in IMAGES},
                       name="containerd", version="v2.1.0")  # fmt: skip
    base = ["--state-dir", str(tmp_path / "s"), "images", "pin", "registry.k8s.io/*"]
    with use_runtime(cri):
        code, out, err = run_cli([*base, "--dry-run", "-o", "json"])
    assert code == 0, err
    doc = json.loads(out)
    assert doc["kind"] == "ImagePinPlan" and doc["dry_run"] is True
    assert [a["id"] for a in doc["actions"]] == ["sha256:k8s"]
    assert doc["summary"] == {"planned": 1, "pinned": 0, "skipped": 0, "failed": 0, "kept": 1}
    with use_runtime(cri):
        code, out, err = run_cli([*base])  # not a terminal, no --yes: a dry run
    assert code == 0 and "dry run only" in err and "would be pinned" in out
    assert not any(i.pinned for i in [cri.images["sha256:k8s"]])


def test_nothing_to_pin_with_yes_is_no_dry_run(tmp_path: Path) -> None:
    """`--yes` with nothing to change says so as a run that acted would, not as a dry run."""
    cri = OtherRuntime(containers={}, sandboxes={}, images={i.id: i for i in IMAGES},
                       name="containerd", version="v2.1.0")  # fmt: skip
    with use_runtime(cri):
        code, out, err = run_cli(["--state-dir", str(tmp_path / "s"), "images", "pin",
                                  "nothing.example/*", "--yes"])  # fmt: skip
    assert code == 0, err
    assert "dry run" not in out and "0 image(s) pinned" in out, out


def test_without_patterns_pin_takes_the_config_files_keep_list(tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text("gc:\n  images:\n    keep: ['registry.k8s.io/core*', 'quay.io/*']\n")
    cri = OtherRuntime(containers={}, sandboxes={}, images={i.id: i for i in IMAGES},
                       name="containerd", version="2.0.0")  # fmt: skip
    base = ["--config", str(cfg), "--state-dir", str(tmp_path / "s"), "images"]
    with use_runtime(cri):
        code, out, err = run_cli([*base, "pin", "--dry-run", "-o", "json"])
    assert code == 0, err
    doc = json.loads(out)
    assert doc["patterns"] == ["registry.k8s.io/core*", "quay.io/*"]
    assert [a["id"] for a in doc["actions"]] == ["sha256:k8s"]
    assert [k["id"] for k in doc["kept"]] == ["sha256:app"]
    cfg.write_text("gc:\n  images:\n    image-gc-high-threshold: 80\n")
    with use_runtime(cri):
        code, out, err = run_cli([*base, "pin", "--dry-run"])
    assert code == 2 and "name at least one image pattern" in err


def test_a_pin_is_an_audit_row_history_reads(tmp_path: Path) -> None:
    """A pin or unpin that was carried out is written to the audit log as any action is
    (no bytes, expected or freed) and `history` reads it back with its operation."""
    from kubegc_cli.core.pins import PinAction
    from kubegc_cli.node.state import AuditLog, read_history

    image = Image("sha256:" + "a" * 64, ("registry.example/app:v1",), (), 1 << 20)
    done = PinAction(image, PIN, "matches registry.example/*", result=DONE[PIN])
    log = AuditLog(tmp_path / "state", "images pin", 1_700_000_000 * 10**9)
    log.add(done)
    log.finish([done])
    [run] = read_history(tmp_path / "state", 1)
    assert run["command"] == "images pin" and run["by_result"] == {"pinned": 1}
    [row] = run["actions"]
    assert row["kind"] == "image-pin" and row["rule"] == "pin" and row["id"] == image.id
    assert row["bytes_freed"] == 0 and row["bytes_expected"] == 0


def _stored(name: str, labels: dict[str, str], target: str = "sha256:m1") -> StoredImage:
    return StoredImage(name, labels, target, 1)


@pytest.mark.parametrize(
    ("records", "needles"),
    [
        # a person's pin on another tag of the image (made since it was listed: same target)
        ({"quay.io/acme/app:1": _stored("quay.io/acme/app:1", {}),
          "hand:1": _stored("hand:1", THEIRS)},
         ["hand:1", "not set by kubegc"]),
        # a record of the image the unpin left alone, still with kubegc's label
        ({"quay.io/acme/app:1": _stored("quay.io/acme/app:1", OURS)},
         ["quay.io/acme/app:1", "with kubegc's io.kubegc.pinned, left alone"]),
        # a pinned record of another image does not count
        ({"quay.io/acme/app:1": _stored("quay.io/acme/app:1", {}),
          "other:1": _stored("other:1", THEIRS, "sha256:m2")},
         ["no record of it carries", "its own pin"]),
        ({}, ["no record of it carries"]),
    ],
)  # fmt: skip
def test_still_pinned_by_names_who_holds_the_pin(
    records: dict[str, StoredImage], needles: list[str]
) -> None:
    said = still_pinned_by(APP, records)
    assert all(n in said for n in needles), said
    assert pinning_records(APP, records) == tuple(
        n for n in image_records(APP, records) if records[n].labels == THEIRS or
        records[n].labels == OURS
    )  # fmt: skip
    assert "other:1" not in image_records(APP, records)


def test_a_still_pinned_image_is_not_shown_unpinned() -> None:
    """Once acted on, the PINNED column is the runtime's answer and the result says who
    still pins the image; the summary counts it apart from the unpinned ones."""
    plan = plan_pins([APP, K8S], ["*"], UNPIN, records={f"quay.io/acme/app@{D}": OURS})
    plan.dry_run = False
    [a] = plan.actions
    a.result, a.pinned_after, a.error = STILL_PINNED, True, "still pinned by its record(s) hand:1"
    out = io.StringIO()
    render_pins(plan, "table", out=out)
    row = next(line for line in out.getvalue().splitlines() if line.startswith("app"))
    assert " yes " in row and "still-pinned: still pinned by its record(s) hand:1" in row
    assert "unpinned" not in row
    assert "0 image(s) unpinned, 1 still pinned by another pin" in out.getvalue()
    assert plan.to_dict()["summary"]["still-pinned"] == 1
    assert plan.to_dict()["actions"][0]["pinned_after"] is True
    a.result, a.pinned_after, a.error = DONE[UNPIN], False, ""
    out = io.StringIO()
    render_pins(plan, "table", out=out)
    row = next(line for line in out.getvalue().splitlines() if line.startswith("app"))
    assert " no " in row and "unpinned" in row


def test_quiet_prints_only_the_image_ids(tmp_path: Path) -> None:
    """`-q` on images pin|unpin prints the IDs alone, as on the gc commands: in a dry run
    the images to change; once acted on, those pinned or unpinned only (not one still
    pinned, skipped or failed); `-o json` still wins."""
    cri = OtherRuntime(containers={}, sandboxes={}, images={i.id: i for i in IMAGES},
                       name="containerd", version="v2.1.0")  # fmt: skip
    base = ["--state-dir", str(tmp_path / "s"), "images", "pin", "*", "--dry-run"]
    with use_runtime(cri):
        code, out, err = run_cli(["-q", *base])
    assert (code, out) == (0, "sha256:k8s\n"), err
    with use_runtime(cri):
        code, out, err = run_cli(["-q", *base, "-o", "json"])
    assert json.loads(out)["kind"] == "ImagePinPlan"

    records = {f"quay.io/acme/app@{D}": OURS, "registry.k8s.io/pause:3.9": OURS}
    plan = plan_pins([APP, K8S, PAUSE], ["*"], UNPIN, records=records)
    plan.dry_run = False
    unpinned, still = plan.actions
    unpinned.result, still.result = DONE[UNPIN], STILL_PINNED
    buf = io.StringIO()
    render_pins(plan, "table", out=buf, quiet=True)
    assert buf.getvalue() == f"{unpinned.id}\n"


def test_own_pin_reasons_tell_kubegcs_pins_from_the_runtimes() -> None:
    """gc images' reason for a pinned image: kubegc's own pin with its time (the earliest of
    its records'), also another's when a record without kubegc's label pins it too; an image
    only the runtime or a person pinned, or one not pinned, gets none (it stays "pinned by
    the runtime")."""
    t1, t2 = "2026-01-01T00:00:00Z", "2026-02-01T00:00:00.000000001Z"
    records = {
        f"quay.io/acme/app@{D}": _stored(f"quay.io/acme/app@{D}", {**THEIRS, OWN_PIN_LABEL: t2}),
        "quay.io/acme/app:1": _stored("quay.io/acme/app:1", {**THEIRS, OWN_PIN_LABEL: t1}),
        "registry.k8s.io/pause:3.9": _stored("registry.k8s.io/pause:3.9", THEIRS, "sha256:p"),
        "sha256:pause": _stored("sha256:pause", {**THEIRS, OWN_PIN_LABEL: "planted"}, "sha256:p"),
        "registry.k8s.io/coredns:1": _stored("registry.k8s.io/coredns:1", OURS, "sha256:c"),
    }
    assert own_pin_reasons(IMAGES, records) == {
        "sha256:app": f"pinned by kubegc (images pin, {t1})"  # K8S is not pinned; PAUSE not ours
    }
    records["hand:1"] = _stored("hand:1", THEIRS)  # a person's pin on another tag of APP
    assert own_pin_reasons(IMAGES, records)["sha256:app"] == (
        f"pinned by kubegc (images pin, {t1}), and by the runtime or someone else"
    )


def test_plan_images_takes_the_reason_of_a_pin_it_is_given() -> None:
    from kubegc_cli.policy.images import ImageGCPolicy, plan_images

    plan = plan_images([APP, PAUSE], [], {}, ImageGCPolicy(), 10**18, began=0,
                       pinned_by={"sha256:app": "pinned by kubegc (images pin, x)"})  # fmt: skip
    assert {d.image.id: (d.rule, d.reason) for d in plan.kept} == {
        "sha256:app": ("pinned", "pinned by kubegc (images pin, x)"),
        "sha256:pause": ("pinned", "pinned by the runtime"),
    }


@pytest.mark.parametrize(
    ("name", "version", "asked"),
    [("cri-o", "1.30.0", False), ("containerd", "1.6.20~ds1", False),
     ("containerd", "v2.1.0", True)],
)  # fmt: skip
def test_gc_images_asks_containerd_of_pins_only_where_its_label_is_read(
    tmp_path: Path, name: str, version: str, asked: bool
) -> None:
    """On CRI-O and containerd 1.6 gc images never calls containerd's images API and a
    pinned image stays "pinned by the runtime"; on containerd 1.7+ it is asked (once an
    image is pinned) and, when it does not answer, the wording stays the same (-v says why).
    The runtime is a stand-in whose endpoint counts the uses of its socket address."""

    class CountingEndpoint:
        """Stand-in endpoint: a socket no one serves, counting how often it is dialled."""

        display = "unix:///nonexistent/kubegc-test.sock"
        dialled = 0

        @property
        def address(self) -> str:
            CountingEndpoint.dialled += 1
            return self.display

    cri = OtherRuntime(containers={}, sandboxes={}, images={i.id: i for i in IMAGES},
                       name=name, version=version, endpoint=CountingEndpoint())  # fmt: skip
    with use_runtime(cri):
        code, out, err = run_cli(["-v", "--host-root", str(tmp_path), "--state-dir",
                                  str(tmp_path / "s"), "-o", "json", "gc", "images",
                                  "--timeout", "5s", "--dry-run"])  # fmt: skip
    assert code == 0, err
    kept = {k["id"]: (k["rule"], k["reason"]) for k in json.loads(out)["kept"]}
    assert kept["sha256:app"] == ("pinned", "pinned by the runtime")
    assert (CountingEndpoint.dialled > 0) is asked
    assert ("kubegc's own pins not told apart" in err) is asked

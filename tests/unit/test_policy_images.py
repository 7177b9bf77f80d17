"""The kubelet's image GC rules (image_gc_manager.go) as table-driven planner tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kubegc_cli.core.errors import BadInput, GCFailed
from kubegc_cli.core.model import Container, Image, ImageRecord
from kubegc_cli.policy.images import ImageGCPolicy, plan_images, sandbox_image_mismatch, usage
from tests.unit.factories import NOW, S, ctr

MI = 1024 * 1024


def img(iid: str, size_mi: int = 100, pinned: bool = False, tag: str = "") -> Image:
    """An image pulled from a registry (a repo digest: it can be pulled again)."""
    return Image(id=iid, repo_tags=(tag or f"example/{iid}:1",), repo_digests=(digest(iid),),
                 size=size_mi * MI, pinned=pinned)  # fmt: skip


def digest(iid: str) -> str:
    return f"example/{iid}@sha256:{iid.encode().hex():0>64}"


def pulled(iid: str, size: int) -> Image:
    return Image(iid, repo_digests=(digest(iid),), size=size)


def using(cid: str, image_id: str, state: str = "EXITED") -> Container:
    c = ctr(cid, state=state)
    return Container(**{**{f: getattr(c, f) for f in c.__slots__}, "image_id": image_id})


def rec(first_age_s: float, last_age_s: float | None = None) -> ImageRecord:
    last = 0 if last_age_s is None else NOW - int(last_age_s * S)
    return ImageRecord(NOW - int(first_age_s * S), last)


@dataclass
class Case:
    name: str
    images: list[Image]
    removed: list[str]
    containers: list[Container] = field(default_factory=list)
    records: dict[str, ImageRecord] = field(default_factory=dict)
    policy: ImageGCPolicy = field(default_factory=ImageGCPolicy)
    capacity: int | None = 1000 * MI
    available: int | None = 100 * MI
    began_age_s: float = 10 * 86400
    protected: tuple[str, ...] = ()
    shortfall: bool = False


OLD = 3600.0
CASES = [
    Case(
        "at 90% used >= 85: free down to 80%, least recently used first, stop once reached",
        [img("a"), img("b"), img("c")],
        ["a"],  # target 1000*20/100 - 100 = 100 Mi; "a" (never used) frees it
        records={"a": rec(OLD), "b": rec(OLD, 600), "c": rec(OLD, 60)},
    ),
    Case(
        "the walk overshoots: stops only after crossing the target",
        [img("a", 60), img("b", 60), img("c", 60)],
        ["a", "b"],
        records={"a": rec(OLD), "b": rec(OLD, 600), "c": rec(OLD, 60)},
    ),
    Case(
        "below the high threshold nothing goes, even above low",
        [img("a")],
        [],
        records={"a": rec(OLD)},
        available=160 * MI,  # 84% used
    ),
    Case(
        "usage rounds up: 15.9% available reads as 85% used",
        [img("a")],
        ["a"],
        records={"a": rec(OLD)},
        available=159 * MI,
    ),
    Case(
        "images of exited containers are in use; pinned and protected ones never go",
        [img("used"), img("pinned", pinned=True), img("pause"), img("free")],
        ["free"],
        containers=[using("c1", "used")],
        records={k: rec(OLD) for k in ("used", "pinned", "pause", "free")},
        protected=("pause",),
        shortfall=False,
        available=200 * MI,  # 80% used < 85: only if high is lower
        policy=ImageGCPolicy(high_threshold=75, low_threshold=70),
    ),
    Case(
        "MinAge counts from first detection, not last use",
        [img("young"), img("old")],
        ["old"],
        records={"young": rec(60), "old": rec(OLD, 30000)},
        available=50 * MI,
        shortfall=True,
    ),
    Case(
        "a first run detects everything now: MinAge protects it all",
        [img("a"), img("b")],
        [],
        shortfall=True,
    ),
    Case(
        "MaxAge: unused for strictly longer goes, MinAge not checked, no thresholds needed",
        [img("stale"), img("recent")],
        ["stale"],
        records={"stale": rec(90000, 7201), "recent": rec(90000, 60)},
        policy=ImageGCPolicy(min_age=120, max_age=7200),
        capacity=None,
        available=None,
    ),
    Case(
        "MaxAge waits until collection has run longer than MaxAge",
        [img("stale")],
        [],
        records={"stale": rec(90000, 90000)},
        policy=ImageGCPolicy(max_age=7200),
        capacity=None,
        available=None,
        began_age_s=3600,
    ),
    Case(
        "--prune-unused: every unused image past MinAge, thresholds ignored",
        [img("a"), img("b"), img("young")],
        ["a", "b"],
        records={"a": rec(OLD), "b": rec(OLD, 100), "young": rec(10)},
        policy=ImageGCPolicy(prune_unused=True),
        available=900 * MI,
    ),
    Case(
        "--keep patterns protect matching tags",
        [img("a", tag="registry.k8s.io/kube-proxy:v1"), img("b", tag="example/b:1")],
        ["b"],
        records={"a": rec(OLD), "b": rec(OLD)},
        policy=ImageGCPolicy(keep=("registry.k8s.io/*",)),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_image_gc_rules(case: Case) -> None:
    plan = plan_images(
        case.images,
        case.containers,
        case.records,
        case.policy,
        NOW,
        began=NOW - int(case.began_age_s * S),
        capacity=case.capacity,
        available=case.available,
        protected=case.protected,
    )
    assert [d.image.id for d in plan.remove] == case.removed
    assert (plan.shortfall > 0) == case.shortfall
    assert {d.image.id for d in plan.remove} | {d.image.id for d in plan.kept} == {
        i.id for i in case.images
    }


def test_records_remember_first_detection_and_last_use() -> None:
    plan = plan_images(
        [img("a"), img("b")],
        [using("c1", "a", state="RUNNING")],
        {"b": rec(5000, 4000)},
        ImageGCPolicy(),
        NOW,
        began=NOW,
    )
    assert plan.records["a"] == ImageRecord(NOW, NOW)  # new: detected now, in use now
    assert plan.records["b"] == rec(5000, 4000)  # unchanged


def test_usage_arithmetic_and_bad_capacity() -> None:
    assert usage(1000, 159) == (85, 159)
    assert usage(1000, 2000) == (0, 1000)  # clamped before the capacity check
    with pytest.raises(GCFailed, match=r"^invalid capacity 0 on image filesystem /var/lib/c$"):
        usage(0, 0, "/var/lib/c")
    assert GCFailed.exit_code == 1


@pytest.mark.parametrize(
    "policy",
    [
        ImageGCPolicy(),
        ImageGCPolicy(prune_unused=True),
        ImageGCPolicy(high_threshold=100, max_age=0),
        ImageGCPolicy(max_age=7200),
    ],
    ids=["threshold", "prune-unused", "gc-disabled", "max-age"],
)
def test_capacity_zero_fails_in_every_mode_naming_the_filesystem(policy: ImageGCPolicy) -> None:
    with pytest.raises(GCFailed, match=r"invalid capacity 0 on image filesystem /imagefs$"):
        plan_images(
            [img("a")], [], {"a": rec(OLD)}, policy, NOW,
            began=NOW - 86400 * S, capacity=0, available=0, filesystem="/imagefs",
        )  # fmt: skip


# The kubelet's arithmetic, with exact figures (bytes; times in seconds since the epoch).
def test_exact_usage_and_target_at_90_percent() -> None:
    plan = plan_images(
        [pulled("old", 100_000)], [], {"old": ImageRecord(0)},
        ImageGCPolicy(high_threshold=85, low_threshold=80), 1000 * S,
        began=0, capacity=1_000_000, available=100_000,
    )  # fmt: skip
    assert plan.usage_percent == 90
    assert plan.bytes_to_free == 100_000  # 1,000,000 * 20 // 100 - 100,000
    assert [d.image.id for d in plan.remove] == ["old"] and plan.shortfall == 0


def test_exact_usage_rounds_up_to_the_high_threshold() -> None:
    plan = plan_images(
        [pulled("old", 50_000)], [], {"old": ImageRecord(0)},
        ImageGCPolicy(high_threshold=85, low_threshold=80), 1000 * S,
        began=0, capacity=1_000_000, available=150_001,
    )  # fmt: skip
    assert plan.usage_percent == 85  # 100 - 15,000,100 // 1,000,000: GC runs
    assert plan.bytes_to_free == 49_999
    assert [d.image.id for d in plan.remove] == ["old"]


def test_exact_eviction_order_never_used_first_then_least_recently_used() -> None:
    records = {
        "u1": ImageRecord(5 * S, 10 * S),
        "u2": ImageRecord(5 * S, 0),
        "u3": ImageRecord(5 * S, 20 * S),
    }
    plan = plan_images(
        [pulled(i, 40_000) for i in ("u1", "u2", "u3")], [], records,
        ImageGCPolicy(high_threshold=85, low_threshold=80, min_age=60), 1000 * S,
        began=0, capacity=1_000_000, available=150_000,
    )  # fmt: skip
    assert plan.bytes_to_free == 50_000
    assert [d.image.id for d in plan.remove] == ["u2", "u1"]  # 80,000 bytes freed
    assert sum(d.image.size for d in plan.remove) == 80_000
    assert {d.image.id: d.rule for d in plan.kept} == {"u3": "not-needed"}


def test_high_100_with_max_age_0_disables_threshold_gc() -> None:
    full = {"capacity": 1000 * MI, "available": 0}
    off = ImageGCPolicy(high_threshold=100, low_threshold=80, min_age=0)
    plan = plan_images([img("a")], [], {"a": rec(OLD)}, off, NOW, began=NOW, **full)
    assert plan.remove == [] and plan.bytes_to_free is None and plan.usage_percent == 100
    assert "image GC disabled: high threshold 100% and MaxAge 0, as the kubelet" in plan.notes
    prune = ImageGCPolicy(high_threshold=100, low_threshold=80, min_age=0, prune_unused=True)
    plan = plan_images([img("a")], [], {"a": rec(OLD)}, prune, NOW, began=NOW, **full)
    assert [d.image.id for d in plan.remove] == ["a"] and plan.usage_percent == 100
    with_max_age = ImageGCPolicy(high_threshold=100, low_threshold=80, min_age=0, max_age=7200)
    plan = plan_images([img("a")], [], {"a": rec(OLD)}, with_max_age, NOW, began=NOW, **full)
    assert [d.rule for d in plan.remove] == ["space"]  # 100% used >= high 100: the kubelet's GC


def test_usage_is_measured_with_prune_unused() -> None:
    plan = plan_images(
        [img("a")], [], {"a": rec(OLD)}, ImageGCPolicy(prune_unused=True), NOW,
        began=NOW, capacity=1000 * MI, available=250 * MI,
    )  # fmt: skip
    assert plan.usage_percent == 75 and plan.bytes_to_free is None


@pytest.mark.parametrize(
    ("policy", "needle"),
    [
        (ImageGCPolicy(high_threshold=101), "--image-gc-high-threshold"),
        (ImageGCPolicy(low_threshold=-1), "--image-gc-low-threshold"),
        (ImageGCPolicy(high_threshold=80, low_threshold=80), "must be less than"),
        (ImageGCPolicy(min_age=3600, max_age=60), "--image-maximum-gc-age"),
    ],
)
def test_policy_validation(policy: ImageGCPolicy, needle: str) -> None:
    with pytest.raises(BadInput, match=needle):
        policy.validate()


def test_validation_names_where_a_value_came_from() -> None:
    names = {"high_threshold": "imageGCHighThresholdPercent in /etc/kubelet.yaml"}
    with pytest.raises(BadInput) as exc:
        ImageGCPolicy(high_threshold=120).validate(names)
    assert str(exc.value) == (
        "invalid value for imageGCHighThresholdPercent in /etc/kubelet.yaml: 120 must be "
        "between 0 and 100"
    )
    with pytest.raises(BadInput, match=r"^--image-gc-low-threshold \(90\) must be less than "
                       r"imageGCHighThresholdPercent in /etc/kubelet.yaml \(85\)$"):  # fmt: skip
        ImageGCPolicy(low_threshold=90).validate(names)


@pytest.mark.parametrize("pattern", ["", "  "])
def test_an_empty_keep_pattern_is_bad_input(pattern: str) -> None:
    with pytest.raises(BadInput, match=f"invalid value for --keep: {pattern!r} is an empty"):
        ImageGCPolicy(keep=("registry.k8s.io/*", pattern)).validate()


def _kubegc(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from kubegc_cli.cli.main import main

    with pytest.raises(SystemExit) as exc:
        main(["-r", "unix:///nonexistent.sock", *argv])
    return int(exc.value.code or 0), capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--keep", ""], "invalid value for --keep: '' is an empty pattern"),
        (["--assume-detected-at", "2999-01-01T00:00:00Z"], "2999-01-01T00:00:00Z is later"),
        (["--assume-detected-at", "2262-04-12T00:00:00Z"], "2262-04-12T00:00:00Z is later"),
        (["--assume-detected-at", "2100-01-01T00:00:00+01:00"], "2099-12-31T23:00:00Z is later"),
        (["--assume-detected-at", ""], "invalid --assume-detected-at: ''"),
        (["--pod-infra-container-image", ""], "--pod-infra-container-image: '' is empty"),
    ],
)
def test_gc_images_bad_input_is_one_line_before_the_runtime(
    args: list[str], needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _kubegc(["--state-dir", str(tmp_path / "s"), "gc", "images", *args], capsys)
    assert code == 2 and needle in err and err.count("\n") == 1, err
    assert not (tmp_path / "s").exists()


def test_assume_detected_at_is_checked_against_now_with_clock_skew(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--state-dir", str(tmp_path / "s"), "--now", "2026-01-01T00:00:00Z", "gc", "images"]
    code, err = _kubegc([*base, "--assume-detected-at", "2026-01-01T00:04:59Z"], capsys)
    assert code == 3, err  # accepted (within 5 minutes of skew); the runtime is what is missing
    code, err = _kubegc([*base, "--assume-detected-at", "2026-01-01T00:05:01Z"], capsys)
    assert code == 2 and "later than now (2026-01-01T00:00:00Z)" in err


def test_a_kubelet_config_value_is_named_by_file_and_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text("kind: KubeletConfiguration\nimageGCHighThresholdPercent: 120\n")
    code, err = _kubegc(["--kubelet-config", str(cfg), "gc", "images"], capsys)
    assert code == 2
    assert err == (
        f"kubegc: error: invalid value for imageGCHighThresholdPercent in {cfg}: 120 must be "
        "between 0 and 100\n"
    )
    code, err = _kubegc(["--kubelet-config", str(cfg), "gc", "images",
                         "--image-gc-high-threshold", "90"], capsys)  # fmt: skip
    assert code == 3  # the flag wins over the file


def test_min_age_keeping_every_image_says_when_the_first_qualifies_and_how_not_to_wait() -> None:
    """kubelet image GC `freeSpace`/`DeleteUnusedImages`: an image first detected less than
    MinAge ago is not removed. When that keeps every candidate (a first run: kubegc has just
    seen them all), the notes say how long until the first qualifies and how to override."""
    full = {"capacity": 1000 * MI, "available": 0}
    images = [img("a"), img("b")]
    records = {"a": rec(30), "b": rec(90)}  # first seen 30 s and 90 s ago
    for policy in (ImageGCPolicy(min_age=120), ImageGCPolicy(min_age=120, prune_unused=True)):
        plan = plan_images(images, [], records, policy, NOW, began=NOW, **full)
        assert plan.remove == []
        [note] = [n for n in plan.notes if n.startswith("MinAge")]
        assert note == (
            "MinAge 2m0s keeps 2 unused image(s): kubegc counts an image's age from its own "
            "first sighting, as the kubelet from its start; the first qualifies in 30s "
            "(--minimum-image-ttl-duration 0s does not wait)"
        )
    old = {"a": rec(30), "b": rec(OLD)}  # one old enough: it goes, no note
    plan = plan_images(images, [], old, ImageGCPolicy(min_age=120), NOW, began=NOW, **full)
    assert [d.image.id for d in plan.remove] == ["b"]
    assert not any(n.startswith("MinAge") for n in plan.notes)


# --- an image kept in use names who holds it -------------------------------------------------


def held_by(cid: str, image_id: str, *, pod: str, name: str, state: str = "EXITED") -> Container:
    c = ctr(cid, uid=f"uid-{pod}", name=name, pod=pod, state=state)
    return Container(**{**{f: getattr(c, f) for f in c.__slots__}, "image_id": image_id})


@pytest.mark.parametrize(
    ("holders", "reason"),
    [
        ([("c1", "web-1", "nginx", "EXITED")], "used by default/web-1 nginx (EXITED)"),
        ([("c1", "web-1", "nginx", "RUNNING"), ("c2", "web-2", "side", "EXITED")],
         "used by 2 containers: default/web-1 nginx (RUNNING), default/web-2 side (EXITED)"),
        ([(f"c{i}", f"web-{i}", "nginx", "EXITED") for i in range(5)],
         "used by 5 containers: default/web-0 nginx (EXITED), default/web-1 nginx (EXITED), "
         "default/web-2 nginx (EXITED) and 2 more (-o json lists all)"),
    ],
)  # fmt: skip
def test_an_image_kept_in_use_names_the_containers_and_pods_that_hold_it(
    holders: list[tuple[str, str, str, str]], reason: str
) -> None:
    users = [held_by(cid, "a", pod=pod, name=name, state=st) for cid, pod, name, st in holders]
    plan = plan_images([img("a"), img("b")], users, {"a": rec(OLD), "b": rec(OLD)},
                       ImageGCPolicy(), NOW, began=NOW - 10 * 86400 * S,
                       capacity=1000 * MI, available=100 * MI)  # fmt: skip
    [kept] = [d for d in plan.kept if d.image.id == "a"]
    assert (kept.rule, kept.reason) == ("in-use", reason)
    assert [c.id for c in kept.used_by] == [h[0] for h in holders]  # all of them, for -o json
    assert [d.image.id for d in plan.remove] == ["b"]


def test_a_container_without_pod_labels_is_named_by_its_id() -> None:
    bare = Container(**{**{f: getattr(ctr("f" * 64), f) for f in ctr("x").__slots__},
                        "labels": {}, "image_id": "a"})  # fmt: skip
    plan = plan_images([img("a")], [bare], {}, ImageGCPolicy(), NOW, began=NOW)
    assert plan.kept[0].reason == f"used by container {'f' * 13} (EXITED)"


@pytest.mark.parametrize(
    ("states", "says"),
    [
        (["EXITED", "RUNNING"], "2 image(s) kept in use by 2 container(s), 1 of them not running: "
                                "an image is kept while any container, dead ones too, uses it; "
                                "once `kubegc gc containers`"),
        (["RUNNING", "RUNNING"], "2 image(s) kept in use by 2 container(s), all running"),
    ],
)  # fmt: skip
def test_the_notes_say_how_many_images_are_kept_in_use_and_what_frees_them(
    states: list[str], says: str
) -> None:
    users = [held_by(f"c{i}", iid, pod=f"p{i}", name="app", state=st)
             for i, (iid, st) in enumerate(zip(("a", "b"), states, strict=True))]  # fmt: skip
    plan = plan_images([img("a"), img("b")], users, {}, ImageGCPolicy(), NOW, began=NOW)
    [note] = [n for n in plan.notes if "kept in use" in n]
    assert note.startswith(says) and note.endswith("(-v lists each image with its containers "
                                                   "and pods)")  # fmt: skip


def test_no_image_in_use_no_note() -> None:
    plan = plan_images([img("a")], [], {}, ImageGCPolicy(), NOW, began=NOW)
    assert not [n for n in plan.notes if "kept in use" in n]


# --- the kubelet's --pod-infra-container-image against the runtime's sandbox image ----------

P39 = "registry.k8s.io/pause:3.9"
P36 = "registry.k8s.io/pause:3.6"
FLAGS = "/var/lib/kubelet/kubeadm-flags.env: KUBELET_KUBEADM_ARGS"
TOML = "/etc/containerd/config.toml: plugins.'io.containerd.grpc.v1.cri'.sandbox_image"


def pause(tag: str, pinned: bool, iid: str = "") -> Image:
    ref = f"registry.k8s.io/pause:{tag}"
    return Image(iid or f"sha256:{tag}", repo_tags=(ref,),
                 repo_digests=(f"registry.k8s.io/pause@sha256:{tag.replace('.', '0'):0>64}",),
                 pinned=pinned)  # fmt: skip


@pytest.mark.parametrize(
    ("kubelet", "runtime", "images", "says"),
    [
        pytest.param((P39, FLAGS), [(P39, TOML)], [pause("3.9", False)], "", id="the same"),
        pytest.param(("pause:3.9", FLAGS), [("docker.io/library/pause:3.9", TOML)], [], "",
                     id="the same, one of them a familiar name"),
        pytest.param((P39, FLAGS), [(P39.replace(":3.9", "@sha256:" + "3" * 64), TOML)],
                     [Image("sha256:x", repo_tags=(P39,),
                            repo_digests=("registry.k8s.io/pause@sha256:" + "3" * 64,))], "",
                     id="a tag and a digest of one image the runtime lists"),
        pytest.param(None, [(P39, TOML)], [], "", id="the kubelet gives none"),
        pytest.param((P36, FLAGS), [], [], "", id="no runtime names its own"),
        pytest.param((P36, FLAGS), [(P39, TOML)], [pause("3.9", False), pause("3.6", False)],
                     f"the kubelet's --pod-infra-container-image {P36} ({FLAGS}) is not the "
                     f"runtime's sandbox image {P39} ({TOML}): a kubelet before 1.29 keeps only "
                     f"{P36} from its image GC, and from 1.29 the flag does nothing; the runtime "
                     f"does not pin {P39}, so the kubelet's image GC may remove it",
                     id="differ, not pinned"),
        pytest.param((P36, FLAGS), [(P39, TOML)], [pause("3.9", True)],
                     f"the runtime pins {P39} now, which keeps it from a kubelet's image GC "
                     "since 1.29", id="differ, pinned"),
        pytest.param((P36, FLAGS), [(P39, TOML)], [],
                     f"{P39} is not on the node now", id="differ, not pulled yet"),
        pytest.param((P36, FLAGS), [(P39, "the runtime's Status"), (P39, TOML)], [],
                     f"sandbox image {P39} (the runtime's Status)", id="the first source named"),
    ],
)  # fmt: skip
def test_a_kubelet_pod_infra_image_other_than_the_runtimes_sandbox_image_is_warned_of(
    kubelet: tuple[str, str] | None,
    runtime: list[tuple[str, str]],
    images: list[Image],
    says: str,
) -> None:
    got = sandbox_image_mismatch(kubelet, runtime, images)
    if not says:
        assert got == ""
        return
    assert says in got, got
    assert got.endswith(
        f"Give the kubelet --pod-infra-container-image {runtime[0][0]}, or drop the flag "
        "(kubelet 1.35 refuses it) on a runtime that pins its sandbox image"
    )

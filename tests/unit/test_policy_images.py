"""The kubelet's image GC rules (image_gc_manager.go) as table-driven planner tests."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from kubegc_cli.errors import BadInput
from kubegc_cli.model import Container, Image
from kubegc_cli.policy.images import ImageGCPolicy, ImageRecord, plan_images, usage
from tests.unit.factories import NOW, S, ctr

MI = 1024 * 1024


def img(iid: str, size_mi: int = 100, pinned: bool = False, tag: str = "") -> Image:
    return Image(id=iid, repo_tags=(tag or f"example/{iid}:1",), size=size_mi * MI, pinned=pinned)


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
    with pytest.raises(BadInput, match="invalid capacity 0"):
        usage(0, 0)


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

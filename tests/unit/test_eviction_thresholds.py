"""Eviction thresholds: the kubelet's grammar, defaults, precedence and evaluation, as tables."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.core.errors import BadInput
from kubegc_cli.node.host import processes
from kubegc_cli.node.host.processes import find_kubelet_cmdline
from kubegc_cli.policy.eviction import thresholds as th
from kubegc_cli.policy.eviction.thresholds import (
    SOURCE_ALLOCATABLE_COPY,
    SOURCE_DEFAULT,
    SOURCE_MERGED_DEFAULT,
    EvictionConfig,
    Observation,
    RawEviction,
    Threshold,
    condition_of,
    containerfs_thresholds,
    evaluate,
    parse_grace_period,
    parse_kv_map,
    parse_min_reclaim,
    parse_threshold_map,
    parse_threshold_value,
    raw_from_flags,
    raw_from_kubelet_cmdline,
    raw_from_kubelet_config,
    reclaim_for,
    resolve,
)

KI = 1024
MI = 1024**2
GI = 1024**3
# float32(x / 100) for the percentages used below, worked out by hand from their bit patterns
P5 = 0.05000000074505806
P10 = 0.10000000149011612
P10_5 = 0.10499999672174454
P15 = 0.15000000596046448
P20 = 0.20000000298023224


def bad(fn: Callable[[], object], *texts: str) -> str:
    """`fn()` raises BadInput whose message is one line containing every `texts`."""
    with pytest.raises(BadInput) as err:
        fn()
    msg = str(err.value)
    assert "\n" not in msg
    for text in texts:
        assert text in msg, (text, msg)
    return msg


def configured(cfg: EvictionConfig) -> list[Threshold]:
    return [t for t in cfg.thresholds if t.source != SOURCE_ALLOCATABLE_COPY]


def summary(ts: list[Threshold]) -> list[tuple[str, int | None, float | None, float]]:
    return [(t.signal, t.quantity, t.percentage, t.grace_period) for t in ts]


# --- the flag grammar -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "memory.available<100Mi,nodefs.available<10%",
            {"memory.available": "100Mi", "nodefs.available": "10%"},
        ),
        (
            " memory.available < 100Mi ,nodefs.available<\t5% ",
            {"memory.available": "100Mi", "nodefs.available": "5%"},
        ),
        ("memory.available<1Gi,,", {"memory.available": "1Gi"}),  # empty pairs skipped
        ("", {}),  # a set, empty map
        ("memory.available<1Gi,memory.available<2Gi", {"memory.available": "2Gi"}),  # later wins
        ("memory.available<=1Gi", {"memory.available": "=1Gi"}),  # first `<` only
        ("a<b<c", {"a": "b<c"}),
    ],
)
def test_parse_threshold_map(text: str, expected: dict[str, str]) -> None:
    assert parse_threshold_map(text, flag="--eviction-hard") == expected


@pytest.mark.parametrize(
    ("text", "pair"),
    [
        ("memory.available>100Mi", "memory.available>100Mi"),
        ("memory.available", "memory.available"),
        ("memory.available=100Mi", "memory.available=100Mi"),
        ("memory.available<1Gi, ", " "),  # a blank pair is not an empty one
    ],
)
def test_parse_threshold_map_malformed(text: str, pair: str) -> None:
    msg = bad(lambda: parse_threshold_map(text, flag="--eviction-hard"), "--eviction-hard")
    assert "malformed pair" in msg and repr(pair) in msg


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("memory.available=1m30s", {"memory.available": "1m30s"}),
        (
            " memory.available = 1m , nodefs.available=2m",
            {"memory.available": "1m", "nodefs.available": "2m"},
        ),
        ("a=b=c", {"a": "b=c"}),
        ("a=1s,a=2s,", {"a": "2s"}),
    ],
)
def test_parse_kv_map(text: str, expected: dict[str, str]) -> None:
    assert parse_kv_map(text, flag="--eviction-soft-grace-period") == expected


@pytest.mark.parametrize("text", ["memory.available:1m", "memory.available<1m"])
def test_parse_kv_map_malformed(text: str) -> None:
    bad(lambda: parse_kv_map(text, flag="--eviction-minimum-reclaim"), text, "malformed pair")


# --- threshold values -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("signal", "text", "quantity", "percentage"),
    [
        ("memory.available", "100Mi", 104_857_600, None),
        ("memory.available", "1.5Gi", 1_610_612_736, None),
        ("memory.available", "1e9", 1_000_000_000, None),
        ("memory.available", "0.5", 1, None),  # positive; whole bytes round up
        ("nodefs.inodesFree", "150Mi", 157_286_400, None),  # inode signals take suffixes
        ("pid.available", "1000", 1000, None),
        ("nodefs.available", "10%", None, P10),
        ("nodefs.available", "10.5%", None, P10_5),
        ("nodefs.available", "10%%", None, P10),  # every trailing % is trimmed
        ("nodefs.available", "0.0%", None, 0.0),  # only the exact text "0%" disables
        ("nodefs.available", "100.0%", None, 1.0),
        ("allocatableMemory.available", "5%", None, P5),
        ("containerfs.inodesFree", "20%", None, P20),
    ],
)
def test_threshold_value(
    signal: str, text: str, quantity: int | None, percentage: float | None
) -> None:
    t = parse_threshold_value(signal, text, where="--eviction-hard")
    assert t is not None
    assert (t.signal, t.text, t.quantity, t.percentage, t.hard) == (
        signal,
        text,
        quantity,
        percentage,
        True,
    )


@pytest.mark.parametrize("text", ["0%", "100%"])
def test_threshold_value_disabled(text: str) -> None:
    assert parse_threshold_value("nodefs.available", text, where="--eviction-hard") is None


@pytest.mark.parametrize(
    ("signal", "text", "why"),
    [
        ("memory.available", "0", "positive"),
        ("memory.available", "0Mi", "positive"),
        ("memory.available", "-1Gi", "positive"),
        ("nodefs.available", "-5%", ">= 0%"),
        ("nodefs.available", "101%", "<= 100%"),
        ("nodefs.available", "100.5%", "<= 100%"),
        ("nodefs.available", "inf%", "<= 100%"),
        ("nodefs.available", "1e40%", "not a percentage"),  # float32 range error
        ("nodefs.available", "%", "not a percentage"),
        ("nodefs.available", "ten%", "not a percentage"),
        ("nodefs.available", "nan%", "not a percentage"),
        ("memory.available", "=1Gi", "not a quantity"),  # from `memory.available<=1Gi`
        ("memory.available", "lots", "not a quantity"),
        ("memory.available", "", "not a quantity"),
        ("memory.available", " 1Gi", "not a quantity"),  # config-file values are not trimmed
        ("swap.available", "1Gi", "unsupported eviction signal"),
        ("memory.Available", "1Gi", "unsupported eviction signal"),
    ],
)
def test_threshold_value_rejected(signal: str, text: str, why: str) -> None:
    bad_text = signal if "signal" in why else repr(text)
    bad(
        lambda: parse_threshold_value(signal, text, where="--eviction-soft"),
        "--eviction-soft",
        bad_text,
        why,
    )


@pytest.mark.parametrize(
    ("text", "amount", "percentage"),
    [
        ("0", 0, None),  # a zero quantity is fine here...
        ("500Mi", 500 * MI, None),
        ("5%", None, P5),
        ("200%", None, 2.0),  # no upper bound for a minimum reclaim
    ],
)
def test_min_reclaim(text: str, amount: int | None, percentage: float | None) -> None:
    value = parse_min_reclaim("memory.available", text, where="--eviction-minimum-reclaim")
    assert (value.quantity, value.percentage) == (amount, percentage)


@pytest.mark.parametrize(
    ("signal", "text", "why"),
    [
        ("memory.available", "0%", "must be positive"),  # ...but zero percent is not
        ("memory.available", "-1%", "must be positive"),
        ("memory.available", "-1Mi", "must not be negative"),
        ("memory.available", "x", "not a quantity"),
        ("swap.available", "1Gi", "unsupported eviction signal"),
    ],
)
def test_min_reclaim_rejected(signal: str, text: str, why: str) -> None:
    bad_text = signal if "signal" in why else repr(text)
    bad(
        lambda: parse_min_reclaim(signal, text, where="--eviction-minimum-reclaim"),
        "--eviction-minimum-reclaim",
        bad_text,
        why,
    )


@pytest.mark.parametrize(
    ("text", "seconds"), [("1m30s", 90.0), ("0s", 0.0), ("0", 0.0), ("1.5h", 5400.0)]
)
def test_grace_period(text: str, seconds: float) -> None:
    assert parse_grace_period("memory.available", text, where="g") == seconds


@pytest.mark.parametrize(
    ("signal", "text"),
    [
        ("memory.available", "-1s"),
        ("memory.available", "5"),
        ("memory.available", "1d"),
        ("memory.available", ""),
        ("disk.available", "1m"),
    ],
)
def test_grace_period_rejected(signal: str, text: str) -> None:
    bad_text = signal if signal == "disk.available" else repr(text)
    bad(
        lambda: parse_grace_period(signal, text, where="--eviction-soft-grace-period"),
        "--eviction-soft-grace-period",
        bad_text,
    )


@pytest.mark.parametrize(
    ("percentage", "capacity", "expected"),
    [
        (P10, 10_000_000_000, 1_000_000_014),  # not 1,000,000,000: float32 rounding
        (P15, 100 * GI, 16_106_128_000),  # exact: 16,106,127,360
        (P5, 1_000_000, 50_000),  # inodes: truncated
        (P10_5, 1000, 104),
        (0.0, 10**12, 0),
        (1.0, 12345, 12345),
    ],
)
def test_threshold_quantity_float32(percentage: float, capacity: int, expected: int) -> None:
    t = Threshold("nodefs.available", "x%", None, percentage)
    assert t.threshold_quantity(capacity) == expected


def test_threshold_quantity_and_min_reclaim() -> None:
    t = Threshold("memory.available", "1Gi", GI, None)
    assert t.threshold_quantity(123) == GI
    assert t.min_reclaim_quantity(10 * GI) == 0
    t = Threshold(
        "memory.available", "1Gi", GI, None, min_reclaim="10%", min_reclaim_percentage=P10
    )
    assert t.min_reclaim_quantity(10_000_000_000) == 1_000_000_014
    t = Threshold("memory.available", "1Gi", GI, None, min_reclaim="0", min_reclaim_amount=0)
    assert t.min_reclaim_quantity(10 * GI) == 0


# --- resolving sources ------------------------------------------------------------------------


def test_two_hard_thresholds_and_the_defaults_not_in_force() -> None:
    cfg = resolve([raw_from_flags("memory.available<100Mi,nodefs.available<10%", None, None, None)])
    assert summary(configured(cfg)) == [
        ("memory.available", 104_857_600, None, 0.0),
        ("nodefs.available", None, P10, 0.0),
    ]
    assert all(t.source == "--eviction-hard" for t in configured(cfg))
    (note,) = [n for n in cfg.notes if "not in force" in n]
    for gone in ("nodefs.inodesFree<5%", "imagefs.available<15%", "imagefs.inodesFree<5%"):
        assert gone in note
    assert "memory.available" not in note and "mergeDefaultEvictionSettings" in note
    assert cfg.disabled == []


def test_defaults_when_nothing_sets_eviction_hard() -> None:
    cfg = resolve([RawEviction(), raw_from_kubelet_config({}, "/etc/kubelet.yaml")])
    assert summary(configured(cfg)) == [
        ("memory.available", 100 * MI, None, 0.0),
        ("nodefs.available", None, P10, 0.0),
        ("nodefs.inodesFree", None, P5, 0.0),
        ("imagefs.available", None, P15, 0.0),
        ("imagefs.inodesFree", None, P5, 0.0),
    ]
    assert {t.source for t in configured(cfg)} == {SOURCE_DEFAULT}
    assert not any(t.signal == "pid.available" for t in cfg.thresholds)  # no PID default
    assert cfg.notes == []
    assert (cfg.max_pod_grace_period, cfg.pressure_transition_period) == (0, 300.0)
    assert cfg.enforce_node_allocatable_pods


def test_empty_eviction_hard_turns_every_default_off() -> None:
    cfg = resolve([raw_from_flags("", None, None, None)])
    assert cfg.thresholds == []
    assert any("memory.available<100Mi" in n and "not in force" in n for n in cfg.notes)


def test_merge_default_eviction_settings() -> None:
    doc = {"evictionHard": {"memory.available": "200Mi"}, "mergeDefaultEvictionSettings": True}
    cfg = resolve([raw_from_kubelet_config(doc, "/var/lib/kubelet/config.yaml")])
    got = {t.signal: (t.text, t.source) for t in configured(cfg)}
    assert got == {
        "memory.available": ("200Mi", "/var/lib/kubelet/config.yaml: evictionHard"),
        "nodefs.available": ("10%", SOURCE_MERGED_DEFAULT),
        "nodefs.inodesFree": ("5%", SOURCE_MERGED_DEFAULT),
        "imagefs.available": ("15%", SOURCE_MERGED_DEFAULT),
        "imagefs.inodesFree": ("5%", SOURCE_MERGED_DEFAULT),
    }
    assert not any("not in force" in n for n in cfg.notes)


def test_hundred_percent_is_disabled_not_a_threshold() -> None:
    cfg = resolve([raw_from_flags("memory.available<1Gi,nodefs.available<100%", None, None, None)])
    assert [t.signal for t in configured(cfg)] == ["memory.available"]
    assert cfg.disabled == [("nodefs.available", "100%", "--eviction-hard")]
    # listed, so not among the defaults said to be dropped
    (note,) = [n for n in cfg.notes if "not in force" in n]
    assert "nodefs.available<" not in note


def test_disabled_soft_threshold_needs_no_grace_period() -> None:
    cfg = resolve([raw_from_flags("memory.available<1Gi", "nodefs.available<0%", None, None)])
    assert cfg.disabled == [("nodefs.available", "0%", "--eviction-soft")]


@pytest.mark.parametrize(
    ("hard", "soft", "grace", "reclaim", "texts"),
    [
        ("memory.available<0", None, None, None, ["--eviction-hard", "'0'"]),
        ("memory.available<=1Gi", None, None, None, ["--eviction-hard", "'=1Gi'"]),
        ("swap.available<1Gi", None, None, None, ["--eviction-hard", "swap.available"]),
        (None, "memory.available<500Mi", None, None, ["--eviction-soft", "memory.available<500Mi"]),
        (
            None,
            "memory.available<500Mi",
            "nodefs.available=1m",
            None,
            ["memory.available<500Mi", "grace period"],
        ),
        (None, None, "foo.available=1m", None, ["--eviction-soft-grace-period", "foo.available"]),
        (None, None, "memory.available=-1s", None, ["--eviction-soft-grace-period", "'-1s'"]),
        (None, None, None, "memory.available=0%", ["--eviction-minimum-reclaim", "'0%'"]),
        (None, None, None, "bogus=1Gi", ["--eviction-minimum-reclaim", "bogus"]),
    ],
)
def test_resolve_rejects(
    hard: str | None, soft: str | None, grace: str | None, reclaim: str | None, texts: list[str]
) -> None:
    raw = raw_from_flags(hard, soft, grace, reclaim)
    bad(lambda: resolve([raw]), *texts)


def test_soft_threshold_with_zero_grace_is_hard_and_copied() -> None:
    cfg = resolve(
        [
            raw_from_flags(
                "nodefs.available<10%", "memory.available<1Gi", "memory.available=0s", None
            )
        ]
    )
    soft = [t for t in configured(cfg) if t.source == "--eviction-soft"]
    assert [(t.signal, t.hard) for t in soft] == [("memory.available", True)]
    assert any("0s grace period" in n and "hard" in n for n in cfg.notes)
    copies = [t for t in cfg.thresholds if t.source == SOURCE_ALLOCATABLE_COPY]
    assert [(t.signal, t.quantity) for t in copies] == [("allocatableMemory.available", GI)]


def test_allocatable_copy_of_hard_only_with_min_reclaim() -> None:
    cfg = resolve(
        [
            raw_from_flags(
                "memory.available<100Mi",
                "memory.available<500Mi,nodefs.available<20%",
                "memory.available=1m30s,nodefs.available=2m,imagefs.available=5m",
                "memory.available=200Mi",
            )
        ]
    )
    assert summary(cfg.thresholds) == [
        ("memory.available", 100 * MI, None, 0.0),
        ("memory.available", 500 * MI, None, 90.0),
        ("nodefs.available", None, P20, 120.0),
        ("allocatableMemory.available", 100 * MI, None, 0.0),
    ]
    # the minimum reclaim attaches to every threshold of the signal, the copy carries it
    assert [t.min_reclaim_quantity(0) for t in cfg.thresholds] == [200 * MI, 200 * MI, 0, 200 * MI]
    assert cfg.thresholds[-1].source == SOURCE_ALLOCATABLE_COPY
    assert [t.hard for t in cfg.thresholds] == [True, False, False, True]
    assert any("imagefs.available=5m" in n and "ignored" in n for n in cfg.notes)


@pytest.mark.parametrize(
    ("enforce", "copied"),
    [
        (None, True),  # default ["pods"]
        ([], False),
        (["system-reserved"], False),
        (["system-reserved", "pods"], True),
    ],
)
def test_allocatable_copy_needs_pods_enforcement(enforce: list[str] | None, copied: bool) -> None:
    doc: dict[str, Any] = {"evictionHard": {"memory.available": "1Gi"}}
    if enforce is not None:
        doc["enforceNodeAllocatable"] = enforce
    cfg = resolve([raw_from_kubelet_config(doc, "/k.yaml")])
    signals = [t.signal for t in cfg.thresholds]
    assert ("allocatableMemory.available" in signals) is copied
    assert cfg.enforce_node_allocatable_pods is copied


def test_user_allocatable_threshold_kept_beside_the_copy() -> None:
    cfg = resolve(
        [raw_from_flags("memory.available<1Gi,allocatableMemory.available<2Gi", None, None, None)]
    )
    assert [(t.signal, t.quantity, t.source) for t in cfg.thresholds] == [
        ("memory.available", GI, "--eviction-hard"),
        ("allocatableMemory.available", 2 * GI, "--eviction-hard"),
        ("allocatableMemory.available", GI, SOURCE_ALLOCATABLE_COPY),
    ]


def test_layer_precedence_per_map() -> None:
    flags = raw_from_flags("memory.available<1Gi", None, None, None)
    cmdline, config_path = raw_from_kubelet_cmdline(
        [
            "/usr/bin/kubelet",
            "--eviction-hard=nodefs.available<5%",
            "--eviction-soft=memory.available<2Gi",
            "--config=/etc/kubernetes/kubelet.yaml",
        ],
        "kubelet command line (pid 42)",
    )
    config = raw_from_kubelet_config(
        {
            "evictionHard": {"imagefs.available": "20%"},
            "evictionSoft": {"nodefs.available": "30%"},
            "evictionSoftGracePeriod": {"memory.available": "1m"},
            "evictionMaxPodGracePeriod": 60,
            "evictionPressureTransitionPeriod": "30s",
        },
        "/etc/kubernetes/kubelet.yaml",
    )
    assert config_path == "/etc/kubernetes/kubelet.yaml"
    cfg = resolve([flags, cmdline, config])
    assert [(t.signal, t.text, t.grace_period, t.source) for t in configured(cfg)] == [
        ("memory.available", "1Gi", 0.0, "--eviction-hard"),
        ("memory.available", "2Gi", 60.0, "kubelet command line (pid 42): --eviction-soft"),
    ]
    assert (cfg.max_pod_grace_period, cfg.pressure_transition_period) == (60, 30.0)
    assert cfg.setting_sources["max_pod_grace_period"] == "/etc/kubernetes/kubelet.yaml"
    # without kubegc's flag, the kubelet's command line wins over its config file
    cfg = resolve([RawEviction(), cmdline, config])
    assert [(t.signal, t.source) for t in configured(cfg)] == [
        ("nodefs.available", "kubelet command line (pid 42): --eviction-hard"),
        ("memory.available", "kubelet command line (pid 42): --eviction-soft"),
    ]
    # the config file alone: its soft nodefs threshold has no grace period of its own
    bad(
        lambda: resolve([RawEviction(), RawEviction(), config]),
        "/etc/kubernetes/kubelet.yaml: evictionSoft",
        "nodefs.available<30%",
    )


# --- the kubelet config file ------------------------------------------------------------------


def test_config_file_fields() -> None:
    raw = raw_from_kubelet_config(
        {
            "kind": "KubeletConfiguration",
            "evictionHard": {"memory.available": "300Mi"},
            "evictionSoft": None,
            "evictionMinimumReclaim": {"memory.available": "0"},
            "evictionPressureTransitionPeriod": "0s",
            "mergeDefaultEvictionSettings": False,
            "enforceNodeAllocatable": ["pods"],
        },
        "/var/lib/kubelet/config.yaml",
    )
    assert raw.hard == {"memory.available": "300Mi"}
    assert raw.soft is None and raw.grace is None
    assert raw.min_reclaim == {"memory.available": "0"}
    assert raw.pressure_transition_period is None  # 0s is defaulted to 5m by the kubelet
    assert raw.merge_defaults is False
    assert raw.hard_source == "/var/lib/kubelet/config.yaml: evictionHard"
    assert raw.min_reclaim_source == "/var/lib/kubelet/config.yaml: evictionMinimumReclaim"
    assert raw_from_kubelet_config(None, "/x.yaml").hard is None


@pytest.mark.parametrize(
    ("doc", "texts"),
    [
        ({"evictionHard": {"memory.available": 100}}, ["evictionHard", "100"]),
        ({"evictionHard": "memory.available<1Gi"}, ["evictionHard", "memory.available<1Gi"]),
        ({"evictionSoftGracePeriod": {"memory.available": 30}}, ["evictionSoftGracePeriod"]),
        ({"evictionMaxPodGracePeriod": "30"}, ["evictionMaxPodGracePeriod", "'30'"]),
        ({"evictionMaxPodGracePeriod": True}, ["evictionMaxPodGracePeriod", "True"]),
        ({"evictionPressureTransitionPeriod": 300}, ["evictionPressureTransitionPeriod", "300"]),
        ({"evictionPressureTransitionPeriod": "5 min"}, ["evictionPressureTransitionPeriod"]),
        ({"mergeDefaultEvictionSettings": "yes"}, ["mergeDefaultEvictionSettings", "yes"]),
        ({"enforceNodeAllocatable": "pods"}, ["enforceNodeAllocatable", "pods"]),
    ],
)
def test_config_file_bad_types(doc: dict[str, Any], texts: list[str]) -> None:
    bad(lambda: raw_from_kubelet_config(doc, "/etc/kubelet.yaml"), "/etc/kubelet.yaml", *texts)


def test_config_file_bad_value_names_file_and_key() -> None:
    raw = raw_from_kubelet_config({"evictionHard": {"memory.available": "0Mi"}}, "/k.yaml")
    bad(lambda: resolve([raw]), "/k.yaml: evictionHard", "memory.available", "'0Mi'")


# --- the running kubelet's command line -------------------------------------------------------


def test_cmdline_forms_and_repeats() -> None:
    raw, config = raw_from_kubelet_cmdline(
        [
            "/usr/bin/kubelet",
            "--v=2",
            "--eviction-hard=memory.available<200Mi,imagefs.available<20%",
            "--eviction-hard",
            "nodefs.available<5%,memory.available<300Mi",
            "--eviction-soft=memory.available<1Gi",
            "--eviction-soft-grace-period",
            "memory.available=2m",
            "--eviction_minimum_reclaim=memory.available=100Mi",
            "--config",
            "/etc/kubernetes/kubelet.yaml",
            "--eviction-max-pod-grace-period",
            "30",
            "--eviction-pressure-transition-period=1m",
            "--enforce-node-allocatable=pods",
            "--enforce-node-allocatable=system-reserved",
            "positional",
            "--",
            "--eviction-hard=pid.available<1",
        ],
        "kubelet command line (pid 7)",
    )
    assert config == "/etc/kubernetes/kubelet.yaml"
    # repeats merge, a later key winning
    assert raw.hard == {
        "memory.available": "300Mi",
        "imagefs.available": "20%",
        "nodefs.available": "5%",
    }
    assert raw.soft == {"memory.available": "1Gi"}
    assert raw.grace == {"memory.available": "2m"}
    assert raw.min_reclaim == {"memory.available": "100Mi"}
    assert raw.max_pod_grace_period == 30
    assert raw.pressure_transition_period == 60.0
    assert raw.enforce_node_allocatable == ["pods", "system-reserved"]
    assert raw.hard_source == "kubelet command line (pid 7): --eviction-hard"
    cfg = resolve([raw])
    first = cfg.thresholds[0]
    assert (first.signal, first.text, first.source, first.min_reclaim_quantity(0)) == (
        "memory.available",
        "300Mi",
        "kubelet command line (pid 7): --eviction-hard",
        100 * MI,
    )
    assert first.min_reclaim_source == "kubelet command line (pid 7): --eviction-minimum-reclaim"


def test_cmdline_without_eviction_flags() -> None:
    raw, config = raw_from_kubelet_cmdline(["kubelet", "--node-ip", "10.0.0.1"], "k")
    assert (raw.hard, raw.soft, raw.grace, raw.min_reclaim, config) == (None,) * 5


@pytest.mark.parametrize(
    ("argv", "texts"),
    [
        (["kubelet", "--eviction-hard"], ["--eviction-hard", "no value"]),
        (["kubelet", "--eviction-hard=memory.available"], ["--eviction-hard", "memory.available"]),
        (["kubelet", "--eviction-max-pod-grace-period=x"], ["grace-period", "'x'"]),
        (["kubelet", "--eviction-pressure-transition-period=5"], ["transition", "'5'"]),
    ],
)
def test_cmdline_rejects(argv: list[str], texts: list[str]) -> None:
    bad(lambda: raw_from_kubelet_cmdline(argv, "kubelet command line (pid 9)"), "pid 9", *texts)


@pytest.mark.parametrize(
    ("procs", "expected"),
    [
        ([], None),
        (
            [
                {"pid": 1, "name": "systemd", "cmdline": ["/sbin/init"]},
                {"pid": 90, "name": "kubelet", "cmdline": ["/usr/bin/kubelet", "--v=2"]},
            ],
            (90, ["/usr/bin/kubelet", "--v=2"]),
        ),
        (
            [{"pid": 5, "name": "exe", "cmdline": ["/opt/bin/kubelet", "--config=/c"]}],
            (5, ["/opt/bin/kubelet", "--config=/c"]),
        ),
        ([{"pid": 5, "name": "kubelet", "cmdline": None}], None),  # unreadable
        ([{"pid": 5, "name": "kubelet-helper", "cmdline": ["kubelet-helper"]}], None),
        (  # a "kubelet" another user started is not the node's, whatever its pid
            [
                {
                    "pid": 7,
                    "name": "kubelet",
                    "cmdline": ["kubelet", "--config=/tmp/x"],
                    "root": False,
                },
                {"pid": 90, "name": "kubelet", "cmdline": ["/usr/bin/kubelet"]},
            ],
            (90, ["/usr/bin/kubelet"]),
        ),
        ([{"pid": 7, "name": "python3", "cmdline": ["/usr/bin/kubelet"], "root": False}], None),
    ],
)
def test_find_kubelet_cmdline(
    monkeypatch: pytest.MonkeyPatch,
    procs: list[dict[str, Any]],
    expected: tuple[int, list[str]] | None,
) -> None:
    table = [(p["pid"], p["name"], p["cmdline"]) for p in procs]
    root = {p["pid"] for p in procs if p.get("root", True)}
    monkeypatch.setattr(processes, "process_table", lambda: iter(table))
    monkeypatch.setattr(processes, "node_process", lambda pid: pid in root)
    assert find_kubelet_cmdline("/") == expected
    assert find_kubelet_cmdline("/host") is None  # another host's processes are not visible


def test_find_kubelet_cmdline_access_denied(monkeypatch: pytest.MonkeyPatch) -> None:
    def denied() -> Iterator[processes.Process]:
        raise PermissionError(13, "Permission denied", "/proc")

    monkeypatch.setattr(processes, "process_table", denied)
    assert find_kubelet_cmdline("/") is None


def _proc(root: Path, pid: str, comm: bytes | None, cmdline: bytes | None) -> None:
    d = root / pid
    d.mkdir()
    if comm is not None:
        (d / "comm").write_bytes(comm)
    if cmdline is not None:
        (d / "cmdline").write_bytes(cmdline)


def test_process_table_reads_comm_and_cmdline_as_psutil_does(tmp_path: Path) -> None:
    _proc(tmp_path, "100", b"kubelet\n", b"/usr/bin/kubelet\0--v=2\0")
    _proc(tmp_path, "99", b"sh\n", b"sh\0-c\0echo a b\0")
    _proc(tmp_path, "7", b"chrome\n", b"chrome --type=renderer --x")  # setproctitle, no NULs
    _proc(tmp_path, "8", b"title\n", b"worker: main loop\0")  # NUL-terminated, spaces inside
    _proc(tmp_path, "9", b"zombie\n", b"")
    _proc(tmp_path, "10", b"gone\n", None)  # ended between the two reads
    _proc(tmp_path, "11", None, b"x\0")  # ended before
    _proc(tmp_path, "12", b"odd\xff\n", b"/bin/odd\xff\0")
    (tmp_path / "13").mkdir()
    (tmp_path / "13" / "comm").write_bytes(b"locked\n")
    (tmp_path / "13" / "cmdline").mkdir()  # unreadable as a file: argv unknown
    (tmp_path / "self").mkdir()
    (tmp_path / "sys").mkdir()
    assert list(processes.process_table(str(tmp_path))) == [
        (7, "chrome", ["chrome", "--type=renderer", "--x"]),
        (8, "title", ["worker:", "main", "loop"]),
        (9, "zombie", []),
        (12, "odd\udcff", ["/bin/odd\udcff"]),
        (13, "locked", None),
        (99, "sh", ["sh", "-c", "echo a b"]),
        (100, "kubelet", ["/usr/bin/kubelet", "--v=2"]),
    ]


def test_process_table_agrees_with_psutil_on_this_machine() -> None:
    import psutil

    for pid, name, argv in processes.process_table():
        if pid not in (1, os.getpid()):
            continue
        p = psutil.Process(pid)
        assert name == p.name()[:15] and argv == p.cmdline()


# --- conditions, reclaim, containerfs ---------------------------------------------------------


@pytest.mark.parametrize(
    ("signal", "condition"),
    [
        ("memory.available", "MemoryPressure"),
        ("allocatableMemory.available", "MemoryPressure"),
        ("nodefs.available", "DiskPressure"),
        ("imagefs.inodesFree", "DiskPressure"),
        ("containerfs.available", "DiskPressure"),
        ("pid.available", "PIDPressure"),
    ],
)
def test_condition_of(signal: str, condition: str) -> None:
    assert condition_of(signal) == condition


C = th.RECLAIM_CONTAINERS
IMG = th.RECLAIM_IMAGES


@pytest.mark.parametrize(
    ("dedicated", "split", "signal", "reclaim"),
    [
        (False, False, "nodefs.available", [C, IMG]),
        (False, False, "imagefs.inodesFree", [C, IMG]),
        (False, False, "containerfs.available", [C, IMG]),
        (True, False, "nodefs.available", []),
        (True, False, "nodefs.inodesFree", []),
        (True, False, "imagefs.available", [C, IMG]),
        (True, False, "containerfs.inodesFree", [C, IMG]),
        (True, True, "nodefs.available", [C]),
        (True, True, "imagefs.available", [IMG]),
        (True, True, "containerfs.available", [C]),
        (False, False, "memory.available", []),
        (True, True, "allocatableMemory.available", []),
        (False, False, "pid.available", []),
    ],
)
def test_reclaim_for(dedicated: bool, split: bool, signal: str, reclaim: list[str]) -> None:
    assert reclaim_for(signal, dedicated_imagefs=dedicated, split=split) == reclaim


def disk_config(extra_hard: str = "") -> EvictionConfig:
    return resolve(
        [
            raw_from_flags(
                "nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%" + extra_hard,
                "nodefs.available<20%,imagefs.inodesFree<10%",
                "nodefs.available=1m,imagefs.inodesFree=2m",
                None,
            )
        ]
    )


@pytest.mark.parametrize(
    ("dedicated", "split", "expected"),
    [
        (
            False,
            False,
            [
                ("containerfs.available", "10%", 0.0),
                ("containerfs.available", "20%", 60.0),
                ("containerfs.inodesFree", "5%", 0.0),
            ],
        ),
        (
            True,
            False,
            [
                ("containerfs.available", "15%", 0.0),
                ("containerfs.inodesFree", "10%", 120.0),
            ],
        ),
        (
            True,
            True,
            [
                ("containerfs.available", "10%", 0.0),
                ("containerfs.available", "20%", 60.0),
                ("containerfs.inodesFree", "5%", 0.0),
            ],
        ),
    ],
)
def test_containerfs_copies(
    dedicated: bool, split: bool, expected: list[tuple[str, str, float]]
) -> None:
    cfg = disk_config()
    result = containerfs_thresholds(cfg, dedicated_imagefs=dedicated, split=split)
    assert result[: len(cfg.thresholds)] == cfg.thresholds  # the others are untouched
    added = [(t.signal, t.text, t.grace_period) for t in result[len(cfg.thresholds) :]]
    assert added == expected
    assert all("copied from" in t.source for t in result[len(cfg.thresholds) :])


def test_containerfs_user_value_overwritten() -> None:
    cfg = disk_config(",containerfs.available<1Gi")
    assert any("containerfs.available<1Gi" in n and "overwritten" in n for n in cfg.notes)
    index = [t.signal for t in cfg.thresholds].index("containerfs.available")
    result = containerfs_thresholds(cfg, dedicated_imagefs=False, split=False)
    replaced = result[index]
    assert (replaced.signal, replaced.text, replaced.quantity) == (
        "containerfs.available",
        "10%",
        None,
    )
    assert "replaces containerfs.available<1Gi" in replaced.source
    assert [t.signal for t in result].count("containerfs.available") == 2  # hard + soft copy


def test_containerfs_user_value_with_nothing_to_copy_is_dropped() -> None:
    cfg = resolve(
        [raw_from_flags("memory.available<1Gi,containerfs.inodesFree<5%", None, None, None)]
    )
    result = containerfs_thresholds(cfg, dedicated_imagefs=True, split=False)
    assert [t.signal for t in result] == ["memory.available", "allocatableMemory.available"]


def test_split_needs_dedicated_imagefs() -> None:
    with pytest.raises(ValueError):
        containerfs_thresholds(EvictionConfig(), dedicated_imagefs=False, split=True)


# --- evaluation -------------------------------------------------------------------------------


@dataclass
class EvalCase:
    name: str
    hard: str
    observations: list[Observation]
    expected: list[tuple[str, int | None, int | None, bool, str]]  # signal, quantity, margin, met
    dedicated: bool = False
    split: bool = False
    enforce: list[str] = field(default_factory=list)


EVAL_CASES = [
    EvalCase(
        "1Gi memory threshold, 900Mi available: met",
        "memory.available<1Gi",
        [Observation("memory.available", 900 * MI, 16 * GI)],
        [("memory.available", GI, 900 * MI - GI, True, "MemoryPressure")],
    ),
    EvalCase(
        "equal is not met (strictly greater)",
        "memory.available<1Gi",
        [Observation("memory.available", GI, 16 * GI)],
        [("memory.available", GI, 0, False, "MemoryPressure")],
    ),
    EvalCase(
        "float32 percentage: 1,000,000,014 > 1,000,000,013",
        "nodefs.available<10%",
        [Observation("nodefs.available", 1_000_000_013, 10_000_000_000)],
        [
            ("nodefs.available", 1_000_000_014, -1, True, "DiskPressure"),
            # one filesystem: containerfs copies nodefs; not observed here, so not met
            ("containerfs.available", None, None, False, "DiskPressure"),
        ],
    ),
    EvalCase(
        "float32 percentage: 1,000,000,014 available is not met",
        "nodefs.available<10%",
        [Observation("nodefs.available", 1_000_000_014, 10_000_000_000)],
        [
            ("nodefs.available", 1_000_000_014, 0, False, "DiskPressure"),
            ("containerfs.available", None, None, False, "DiskPressure"),
        ],
    ),
    EvalCase(
        "inodes and pids",
        "nodefs.inodesFree<5%,pid.available<1000",
        [
            Observation("nodefs.inodesFree", 49_999, 1_000_000),
            Observation("pid.available", 1000, 4_194_304),
        ],
        [
            ("nodefs.inodesFree", 50_000, -1, True, "DiskPressure"),
            ("pid.available", 1000, 0, False, "PIDPressure"),
            ("containerfs.inodesFree", None, None, False, "DiskPressure"),
        ],
    ),
    EvalCase(
        "no observation: not met",
        "imagefs.available<15%,imagefs.inodesFree<1000",
        [],
        [
            ("imagefs.available", None, None, False, "DiskPressure"),
            ("imagefs.inodesFree", 1000, None, False, "DiskPressure"),
        ],
    ),
    EvalCase(
        "allocatable copy evaluated against its own observation",
        "memory.available<500Mi",
        [
            Observation("memory.available", GI, 16 * GI),
            Observation("allocatableMemory.available", 400 * MI, 12 * GI),
        ],
        [
            ("memory.available", 500 * MI, 524 * MI, False, "MemoryPressure"),
            ("allocatableMemory.available", 500 * MI, -100 * MI, True, "MemoryPressure"),
        ],
        enforce=["pods"],
    ),
    EvalCase(
        "containerfs follows imagefs on a dedicated imagefs",
        "imagefs.available<15%",
        [
            Observation("imagefs.available", 10 * GI, 100 * GI),
            Observation("containerfs.available", 20 * GI, 100 * GI),
        ],
        [
            ("imagefs.available", 16_106_128_000, 10 * GI - 16_106_128_000, True, "DiskPressure"),
            (
                "containerfs.available",
                16_106_128_000,
                20 * GI - 16_106_128_000,
                False,
                "DiskPressure",
            ),
        ],
        dedicated=True,
    ),
]


@pytest.mark.parametrize("case", EVAL_CASES, ids=lambda c: c.name)
def test_evaluate(case: EvalCase) -> None:
    raw = raw_from_flags(case.hard, None, None, None)
    raw.enforce_node_allocatable = case.enforce
    cfg = resolve([raw])
    obs = {o.signal: o for o in case.observations}
    results = evaluate(cfg, obs, dedicated_imagefs=case.dedicated, split=case.split)
    got = [
        (r.threshold.signal, r.threshold_quantity, r.margin, r.met, r.condition) for r in results
    ]
    assert got == case.expected
    for r in results:
        assert bool(r.note) is (r.observation is None)


def test_evaluate_memory_first_and_reclaim() -> None:
    ts = [
        Threshold("nodefs.available", "10%", None, P10),
        Threshold("pid.available", "100", 100, None),
        Threshold("memory.available", "1Gi", GI, None),
        Threshold("imagefs.available", "15%", None, P15),
        Threshold("allocatableMemory.available", "1Gi", GI, None),
    ]
    results = evaluate(EvictionConfig(thresholds=ts), {}, dedicated_imagefs=True)
    assert [(r.threshold.signal, r.reclaim) for r in results] == [
        ("memory.available", []),
        ("allocatableMemory.available", []),
        ("nodefs.available", []),
        ("pid.available", []),
        ("imagefs.available", [C, IMG]),
        ("containerfs.available", [C, IMG]),
    ]


@pytest.mark.parametrize(
    ("hard", "observation", "why"),
    [
        # an inode quantity above the filesystem's inode count
        ("nodefs.inodesFree<2000000", Observation("nodefs.inodesFree", 900_000, 1_000_000),
         "is met whenever anything is used: 2000000 is not below the capacity, 1000000"),
        ("nodefs.inodesFree<1000000", Observation("nodefs.inodesFree", 900_000, 1_000_000),
         "is met whenever anything is used"),
        ("memory.available<64Gi", Observation("memory.available", GI, 16 * GI),
         "is met whenever anything is used"),
        ("nodefs.inodesFree<999999", Observation("nodefs.inodesFree", 900_000, 1_000_000), ""),
        ("nodefs.available<99%", Observation("nodefs.available", 5 * GI, 100 * GI), ""),
        ("memory.available<100Mi", Observation("memory.available", GI, 16 * GI), ""),
        ("imagefs.inodesFree<5000000", None, ""),  # no observation: no capacity to judge
    ],
)  # fmt: skip
def test_a_threshold_that_can_tell_nothing_is_named(
    hard: str, observation: Observation | None, why: str
) -> None:
    """kubelet eviction `thresholdsMet`: met when the threshold's quantity
    (`GetThresholdQuantity`) is above what is available — whenever anything is used, for the
    capacity or more."""
    cfg = resolve([raw_from_flags(hard, None, None, None)])
    obs = {observation.signal: observation} if observation else {}
    [result] = [r for r in evaluate(cfg, obs, dedicated_imagefs=True)
                if r.threshold.expression == hard]  # fmt: skip
    said = th.pointless(result)
    if why:
        assert said.startswith(why), said
    else:
        assert said == "", said


@pytest.mark.parametrize(
    ("uid_line", "root"),
    [
        (b"Uid:\t0\t0\t0\t0\n", True),
        (b"Uid:\t65534\t65534\t65534\t65534\n", False),
        (b"Uid:\t1000\t0\t0\t0\n", False),  # a setuid program run by a user
        (b"Uid:\t0\t1000\t1000\t1000\n", False),
        (None, False),  # gone
    ],
)
def test_runs_as_root_reads_the_real_and_effective_uid(
    tmp_path: Path, uid_line: bytes | None, root: bool
) -> None:
    if uid_line is not None:
        (tmp_path / "42").mkdir()
        (tmp_path / "42/status").write_bytes(b"Name:\tkubelet\nUmask:\t0022\n" + uid_line)
    assert processes.runs_as_root(42, str(tmp_path)) is root


def test_a_process_in_another_pid_namespace_is_not_the_nodes(tmp_path: Path) -> None:
    """Root in a pod's container (a PID namespace of its own) calling itself kubelet is not
    the node's kubelet; root in kubegc's own PID namespace may be."""
    import os

    here = os.readlink("/proc/self/ns/pid")
    for pid, ns in ((42, here), (43, "pid:[4026599999]")):
        (tmp_path / str(pid) / "ns").mkdir(parents=True)
        (tmp_path / str(pid) / "status").write_bytes(b"Name:\tkubelet\nUid:\t0\t0\t0\t0\n")
        (tmp_path / str(pid) / "ns" / "pid").symlink_to(ns)
    (tmp_path / "self" / "ns").mkdir(parents=True)
    (tmp_path / "self" / "ns" / "pid").symlink_to(here)
    assert processes.node_process(42, str(tmp_path)) is True
    assert processes.node_process(43, str(tmp_path)) is False
    assert processes.node_process(44, str(tmp_path)) is False  # gone

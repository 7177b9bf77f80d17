"""Eviction thresholds: the kubelet's grammar, defaults, precedence and evaluation.

Source of the rules: kubelet eviction (`pkg/kubelet/eviction/helpers.go`: `ParseThresholdConfig`,
`parseThresholdStatement`, `parsePercentage`, `parseGracePeriods`, `parseMinimumReclaims`,
`addAllocatableThresholds`, `UpdateContainerFsThresholds`, `thresholdsMet`,
`buildSignalToNodeReclaimFuncs`; `api/types.go`: `GetThresholdQuantity`; `defaults_linux.go`),
and the flag types of `k8s.io/component-base/cli/flag` (`LangleSeparatedMapStringString`,
`MapStringString`). In short:

- A threshold is `signal<value`. The value is a quantity (`100Mi`; bytes, or a count for the
  inode and PID signals, which accept suffixes too) or a percentage of the signal's capacity
  (`10%`, kept as a float32 fraction). Exactly `0%` or `100%` disables the threshold.
- A hard threshold acts at once; a soft one needs a grace period for its signal, and a soft
  threshold whose grace period is `0s` is a hard one.
- Setting `evictionHard` at all replaces the kubelet's default map: unlisted defaults are gone
  unless `mergeDefaultEvictionSettings` is true.
- With `enforceNodeAllocatable` containing `pods` (the default), every hard `memory.available`
  threshold is also an `allocatableMemory.available` threshold.
- A threshold is met when `threshold quantity > available`, strictly; a percentage becomes a
  quantity as `trunc(capacity × float64(float32 fraction))`.

Units: quantities are whole bytes (or counts), rounded up as Kubernetes' `Quantity.Value()`
does; durations are seconds. Every input error is `BadInput` with one line naming where the bad
value came from (a flag, a file and key, the kubelet's command line) and the value itself.
"""

from __future__ import annotations

import copy
import math
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.flags import long_flags
from kubegc_cli.core.signals import Observation
from kubegc_cli.core.units import MAX_QUANTITY_DIGITS, parse_duration, parse_quantity

MEMORY_AVAILABLE = "memory.available"
ALLOCATABLE_MEMORY_AVAILABLE = "allocatableMemory.available"
NODEFS_AVAILABLE = "nodefs.available"
NODEFS_INODES_FREE = "nodefs.inodesFree"
IMAGEFS_AVAILABLE = "imagefs.available"
IMAGEFS_INODES_FREE = "imagefs.inodesFree"
CONTAINERFS_AVAILABLE = "containerfs.available"
CONTAINERFS_INODES_FREE = "containerfs.inodesFree"
PID_AVAILABLE = "pid.available"

#: Every signal the kubelet accepts, in the order kubegc lists them.
SIGNALS: tuple[str, ...] = (
    MEMORY_AVAILABLE,
    ALLOCATABLE_MEMORY_AVAILABLE,
    NODEFS_AVAILABLE,
    NODEFS_INODES_FREE,
    IMAGEFS_AVAILABLE,
    IMAGEFS_INODES_FREE,
    CONTAINERFS_AVAILABLE,
    CONTAINERFS_INODES_FREE,
    PID_AVAILABLE,
)
MEMORY_SIGNALS = frozenset({MEMORY_AVAILABLE, ALLOCATABLE_MEMORY_AVAILABLE})

MEMORY_PRESSURE = "MemoryPressure"
DISK_PRESSURE = "DiskPressure"
PID_PRESSURE = "PIDPressure"

_CONDITION = {
    MEMORY_AVAILABLE: MEMORY_PRESSURE,
    ALLOCATABLE_MEMORY_AVAILABLE: MEMORY_PRESSURE,
    NODEFS_AVAILABLE: DISK_PRESSURE,
    NODEFS_INODES_FREE: DISK_PRESSURE,
    IMAGEFS_AVAILABLE: DISK_PRESSURE,
    IMAGEFS_INODES_FREE: DISK_PRESSURE,
    CONTAINERFS_AVAILABLE: DISK_PRESSURE,
    CONTAINERFS_INODES_FREE: DISK_PRESSURE,
    PID_AVAILABLE: PID_PRESSURE,
}

#: The kubelet's Linux `evictionHard` defaults (`pkg/kubelet/eviction/defaults_linux.go`), the
#: newest kubelet's: `default_eviction_hard` gives a given version's.
DEFAULT_EVICTION_HARD: Mapping[str, str] = {
    MEMORY_AVAILABLE: "100Mi",
    NODEFS_AVAILABLE: "10%",
    NODEFS_INODES_FREE: "5%",
    IMAGEFS_AVAILABLE: "15%",
    IMAGEFS_INODES_FREE: "5%",
}

#: A kubelet version as kubegc compares it: (major, minor).
KubeletVersion = tuple[int, int]
#: The newest kubelet whose rules kubegc follows; the defaults follow it when the node's
#: kubelet version is not known.
NEWEST_KUBELET: KubeletVersion = (1, 36)
#: `imagefs.inodesFree<5%` joined the Linux `evictionHard` defaults in 1.30
#: (kubernetes/kubernetes#121834, `pkg/kubelet/eviction/defaults_linux.go`).
IMAGEFS_INODES_DEFAULT_SINCE: KubeletVersion = (1, 30)
#: `mergeDefaultEvictionSettings` exists from 1.33 (kubernetes/kubernetes#127577:
#: cmd/kubelet/app/server.go `loadConfigFile`); an older kubelet ignores the field.
MERGE_DEFAULTS_SINCE: KubeletVersion = (1, 33)

_VERSION = re.compile(r"v?(\d{1,4})\.(\d{1,4})(?:\.\d{1,6})?(?:[-+][0-9A-Za-z.+-]{0,200})?")


def parse_kubelet_version(text: str, *, where: str) -> KubeletVersion:
    """A Kubernetes version (`v1.30.2`, `1.33`, `v1.31.4-eks-1a2b3c`, `v1.29.0+k3s1`) →
    (major, minor). Raises `BadInput` naming `where` and the text."""
    m = _VERSION.fullmatch(text.strip()) if isinstance(text, str) else None
    if m is None:
        raise BadInput(f"{where}: {text!r} is not a Kubernetes version (e.g. v1.30.2)")
    return int(m.group(1)), int(m.group(2))


def default_eviction_hard(version: KubeletVersion | None = None) -> dict[str, str]:
    """The kubelet's Linux `evictionHard` defaults for kubelet `version` (None: the newest
    kubegc knows): `memory.available<100Mi`, `nodefs.available<10%`, `nodefs.inodesFree<5%`,
    `imagefs.available<15%`, and from 1.30 `imagefs.inodesFree<5%` (`defaults_linux.go`)."""
    version = version or NEWEST_KUBELET
    return {
        s: v
        for s, v in DEFAULT_EVICTION_HARD.items()
        if s != IMAGEFS_INODES_FREE or version >= IMAGEFS_INODES_DEFAULT_SINCE
    }


def honours_merge_defaults(version: KubeletVersion | None = None) -> bool:
    """Whether kubelet `version` (None: the newest kubegc knows) reads
    `mergeDefaultEvictionSettings` (from 1.33)."""
    return (version or NEWEST_KUBELET) >= MERGE_DEFAULTS_SINCE


DEFAULT_PRESSURE_TRANSITION_PERIOD = 300.0
DEFAULT_MAX_POD_GRACE_PERIOD = 0
DEFAULT_ENFORCE_NODE_ALLOCATABLE: tuple[str, ...] = ("pods",)
NODE_ALLOCATABLE_PODS = "pods"

SOURCE_DEFAULT = "kubelet default"
SOURCE_MERGED_DEFAULT = "kubelet default (mergeDefaultEvictionSettings: true)"
SOURCE_ALLOCATABLE_COPY = "copied from memory.available (enforceNodeAllocatable: pods)"

FLAG_HARD = "--eviction-hard"
FLAG_SOFT = "--eviction-soft"
FLAG_GRACE = "--eviction-soft-grace-period"
FLAG_MIN_RECLAIM = "--eviction-minimum-reclaim"
FLAG_MAX_POD_GRACE = "--eviction-max-pod-grace-period"
FLAG_TRANSITION = "--eviction-pressure-transition-period"
FLAG_ENFORCE = "--enforce-node-allocatable"
FLAG_CONFIG = "--config"

RECLAIM_CONTAINERS = "container GC (kubegc gc containers)"
RECLAIM_IMAGES = "delete unused images (kubegc gc images)"

_INT32_MAX = 2**31 - 1


# --- float32 ----------------------------------------------------------------------------------


def float32(x: float) -> float:
    """Round a float to the nearest float32 (ties to even), as Go's `float32(x)` does.

    Values beyond float32's range become ±inf; NaN and infinities pass through.
    """
    if math.isnan(x) or math.isinf(x):
        return x
    try:
        packed = struct.pack("<f", x)
    except OverflowError:
        return math.copysign(math.inf, x)
    result: float = struct.unpack("<f", packed)[0]
    return result


_FLOAT32_MAX = Fraction(3.4028234663852886e38)  # (2 - 2^-23) × 2^127


def _fraction_to_float32(q: Fraction) -> float:
    """The float32 nearest to the exact value `q` (ties to even), or ±inf past float32's range.

    Rounding the exact value once avoids the double rounding of going through float64.
    """
    if q == 0:
        return 0.0
    sign = -1.0 if q < 0 else 1.0
    a = abs(q)
    exp = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** exp > a:
        exp -= 1
    quantum = Fraction(2) ** max(exp - 23, -149)  # 24-bit significand; subnormals below 2^-126
    value = round(a / quantum) * quantum
    if value > _FLOAT32_MAX:
        return sign * math.inf
    return sign * float(value)


_GO_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]+))?")
_GO_INF = re.compile(r"[+-]?(?:inf|infinity)", re.IGNORECASE)


def _parse_float32(text: str) -> float | None:
    """Go's `strconv.ParseFloat(text, 32)` for decimal text and infinities; None on error.

    Go also accepts hexadecimal floats and NaN; kubegc does not (see `parse_threshold_value`).
    A decimal beyond float32's range is an error in Go (ErrRange), so None here too.
    """
    m = _GO_DECIMAL.fullmatch(text)
    if m:
        exponent = int(m.group(1) or 0)
        mantissa = text[: m.start(1) - 1] if m.group(1) is not None else text
        if abs(exponent) > 100_000:  # keep the exact arithmetic small
            if exponent < 0 or Fraction(mantissa) == 0:
                return 0.0
            return None
        value = _fraction_to_float32(Fraction(text))
        return None if math.isinf(value) else value
    if _GO_INF.fullmatch(text):
        return -math.inf if text.startswith("-") else math.inf
    return None


# --- thresholds -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Threshold:
    """One eviction threshold, `signal<text`, as the kubelet holds it.

    `quantity` is the value in bytes (or inodes, or PIDs), rounded up as `Quantity.Value()`
    does, or None for a percentage; `percentage` is the float32-rounded fraction (`10%` →
    0.10000000149011612), or None for a quantity. `grace_period` is in seconds; 0 means hard.
    `min_reclaim` is the minimum reclaim as written (None when unset), with its parsed
    `min_reclaim_amount` (bytes or count) or `min_reclaim_percentage` (float32 fraction).
    `source` names where the value came from (`--eviction-hard`,
    `/var/lib/kubelet/config.yaml: evictionHard`, `kubelet default`, ...), and
    `min_reclaim_source` where the minimum reclaim came from.
    """

    signal: str
    text: str
    quantity: int | None
    percentage: float | None
    grace_period: float = 0.0
    min_reclaim: str | None = None
    min_reclaim_amount: int | None = None
    min_reclaim_percentage: float | None = None
    source: str = ""
    min_reclaim_source: str = ""

    @property
    def hard(self) -> bool:
        """Hard iff the grace period is 0 (kubelet eviction: `isHardEvictionThreshold`)."""
        return self.grace_period == 0

    @property
    def expression(self) -> str:
        """The threshold as the kubelet's flags write it: `memory.available<100Mi`."""
        return f"{self.signal}<{self.text}"

    def threshold_quantity(self, capacity: int) -> int:
        """The threshold in bytes (or count) for a signal whose capacity is `capacity`.

        A quantity is returned as is; a percentage is `trunc(float64(capacity) × float64(p))`
        with `p` the float32 fraction, so 10% of 10,000,000,000 is 1,000,000,014 (kubelet
        eviction: `GetThresholdQuantity`).
        """
        return _quantity_of(self.quantity, self.percentage, capacity)

    def min_reclaim_quantity(self, capacity: int) -> int:
        """The minimum reclaim in bytes (or count) for this capacity; 0 when none is set."""
        if self.min_reclaim is None:
            return 0
        return _quantity_of(self.min_reclaim_amount, self.min_reclaim_percentage, capacity)


def _quantity_of(quantity: int | None, percentage: float | None, capacity: int) -> int:
    if quantity is not None:
        return quantity
    return int(float(capacity) * (percentage or 0.0))


@dataclass(frozen=True, slots=True)
class ThresholdValue:
    """A parsed value: `quantity` in whole bytes (or count), or `percentage` as a float32
    fraction of capacity; exactly one is set (kubelet eviction: `ThresholdValue`)."""

    quantity: int | None
    percentage: float | None


def condition_of(signal: str) -> str:
    """The node condition a met threshold of `signal` reports.

    `MemoryPressure` for memory signals, `DiskPressure` for nodefs/imagefs/containerfs,
    `PIDPressure` for `pid.available` (kubelet eviction: `signalToNodeCondition`). Raises
    `ValueError` for a name that is not an eviction signal.
    """
    try:
        return _CONDITION[signal]
    except KeyError:
        raise ValueError(f"not an eviction signal: {signal!r}") from None


def reclaim_for(signal: str, *, dedicated_imagefs: bool, split: bool = False) -> list[str]:
    """The node-level reclaim the kubelet runs for `signal` before evicting any pod.

    By filesystem layout (kubelet eviction: `buildSignalToNodeReclaimFuncs`): without a
    dedicated imagefs, every disk signal → container GC then unused images; with a dedicated
    imagefs holding images and writable layers, nodefs → nothing, imagefs and containerfs →
    container GC then unused images; with images and containers split, nodefs and containerfs →
    container GC, imagefs → unused images. Memory and PID signals → nothing. Raises
    `ValueError` for `split` without a dedicated imagefs.
    """
    if split and not dedicated_imagefs:
        raise ValueError("a split image/container filesystem needs a dedicated imagefs")
    condition_of(signal)
    if signal in MEMORY_SIGNALS or signal == PID_AVAILABLE:
        return []
    both = [RECLAIM_CONTAINERS, RECLAIM_IMAGES]
    family = signal.split(".", 1)[0]
    if not dedicated_imagefs:
        return both
    if not split:
        return [] if family == "nodefs" else both
    return [RECLAIM_IMAGES] if family == "imagefs" else [RECLAIM_CONTAINERS]


# --- grammar ----------------------------------------------------------------------------------


def _split_map(text: str, sep: str, *, flag: str) -> dict[str, str]:
    result: dict[str, str] = {}
    for pair in text.split(","):
        if len(pair) == 0:
            continue
        if sep not in pair:
            raise BadInput(
                f"{flag}: malformed pair {pair!r} in {text!r} "
                f"(expected signal{sep}value, e.g. memory.available{sep}"
                f"{'1m30s' if sep == '=' and 'grace' in flag else '100Mi'})"
            )
        key, value = pair.split(sep, 1)
        result[key.strip()] = value.strip()
    return result


def parse_threshold_map(text: str, *, flag: str) -> dict[str, str]:
    """Parse a `signal<value` list as the kubelet's `--eviction-hard`/`--eviction-soft` do.

    Pairs are comma separated; each splits on its first `<`; both sides are trimmed; empty
    pairs are skipped; a later key wins. A pair without `<` is a malformed-pair `BadInput`
    naming `flag`. Only the shape is checked here: `a<=1Gi` yields `{"a": "=1Gi"}`, which
    threshold validation then rejects as a bad quantity (component-base
    `LangleSeparatedMapStringString`).
    """
    return _split_map(text, "<", flag=flag)


def parse_kv_map(text: str, *, flag: str) -> dict[str, str]:
    """Parse a `signal=value` list as `--eviction-soft-grace-period` and
    `--eviction-minimum-reclaim` do: split on the first `=`, trim, skip empty pairs, later keys
    win. A pair without `=` is a malformed-pair `BadInput` naming `flag` (component-base
    `MapStringString`).
    """
    return _split_map(text, "=", flag=flag)


def _check_signal(signal: str, *, where: str) -> None:
    if signal not in _CONDITION:
        raise BadInput(
            f"{where}: unsupported eviction signal {signal!r} (supported: {', '.join(SIGNALS)})"
        )


def _check_unpadded(signal: str, text: str, *, where: str, what: str) -> None:
    if text != text.strip() or not text:
        raise BadInput(f"{where}: {signal}: {text!r} is not {what}")


def _parse_percent(signal: str, text: str, *, where: str) -> float:
    if len(text) > MAX_QUANTITY_DIGITS:  # (Python's int() refuses above 4,300 digits)
        raise BadInput(
            f"{where}: {signal}: {text[:24]!r}... ({len(text)} characters) is not a percentage "
            f"kubegc reads (at most {MAX_QUANTITY_DIGITS} characters)"
        )
    value = _parse_float32(text.rstrip("%"))
    if value is None:
        raise BadInput(f"{where}: {signal}: {text!r} is not a percentage (e.g. 10%, 7.5%)")
    return float32(value / 100)


def _parse_amount(signal: str, text: str, *, where: str) -> Fraction:
    try:
        return parse_quantity(text)
    except BadInput as exc:
        why = str(exc).split(": ", 1)[-1]  # "'<text>' is not a quantity ..." / "... too large"
        if "too large" not in why:
            why = f"{text!r} is not a quantity (e.g. 100Mi, 1Gi, 5%)"
        raise BadInput(f"{where}: {signal}: {why}") from None


def parse_threshold_value(signal: str, text: str, *, where: str) -> Threshold | None:
    """Validate one threshold `signal<text` and return it (hard, no source), or None.

    None means disabled: the text is exactly `0%` or `100%` (kubelet eviction:
    `parseThresholdStatement`). Otherwise a `%` value is parsed as a float32 and divided by 100
    (so `10.5%` → 0.105 as float32) and must lie in 0%..100%; any other value must be a
    Kubernetes quantity greater than 0 (`0` and `0Mi` are errors), stored in whole units
    rounded up. Raises `BadInput` naming `where`, the signal and the text: unknown signal (also
    `swap.available`), bad number, out of range. Go's parser also takes hexadecimal floats and
    `NaN%` (a threshold that never acts); kubegc rejects both as not a percentage.
    """
    _check_signal(signal, where=where)
    _check_unpadded(signal, text, where=where, what="a quantity or percentage")
    if text.endswith("%"):
        if text in ("0%", "100%"):
            return None
        fraction = _parse_percent(signal, text, where=where)
        if fraction < 0:
            raise BadInput(f"{where}: {signal}: {text!r} must be >= 0%")
        if fraction > 1:
            raise BadInput(f"{where}: {signal}: {text!r} must be <= 100%")
        return Threshold(signal, text, None, fraction)
    amount = _parse_amount(signal, text, where=where)
    if amount <= 0:
        raise BadInput(f"{where}: {signal}: {text!r} must be positive (0 is not a threshold)")
    return Threshold(signal, text, math.ceil(amount), None)


def parse_min_reclaim(signal: str, text: str, *, where: str) -> ThresholdValue:
    """Validate one minimum reclaim `signal=text` (kubelet eviction: `parseMinimumReclaims`).

    A percentage must be > 0% (`0%` is an error; there is no upper check and no 0%/100%
    special case); a quantity must be >= 0 (`0` is fine). Raises `BadInput` naming `where`,
    the signal and the text.
    """
    _check_signal(signal, where=where)
    _check_unpadded(signal, text, where=where, what="a quantity or percentage")
    if text.endswith("%"):
        fraction = _parse_percent(signal, text, where=where)
        if not fraction > 0:
            raise BadInput(f"{where}: {signal}: minimum reclaim {text!r} must be positive")
        return ThresholdValue(None, fraction)
    amount = _parse_amount(signal, text, where=where)
    if amount < 0:
        raise BadInput(f"{where}: {signal}: minimum reclaim {text!r} must not be negative")
    return ThresholdValue(math.ceil(amount), None)


def parse_grace_period(signal: str, text: str, *, where: str) -> float:
    """Validate one soft grace period `signal=text`: a Go duration, not negative → seconds.

    Raises `BadInput` naming `where`, the signal and the text for an unknown signal, a bad
    duration or a negative one (kubelet eviction: `parseGracePeriods`).
    """
    _check_signal(signal, where=where)
    _check_unpadded(signal, text, where=where, what="a duration")
    seconds = parse_duration(text, flag=f"{where}: {signal}", allow_negative=True)
    if seconds < 0:
        raise BadInput(f"{where}: {signal}: grace period {text!r} must not be negative")
    return seconds


# --- sources ----------------------------------------------------------------------------------


@dataclass
class RawEviction:
    """The eviction settings one source sets, unvalidated; None = this source leaves it unset.

    Maps are `signal → value` as written (`hard`/`soft`: `100Mi`, `10%`; `grace`: `1m30s`;
    `min_reclaim`: `500Mi`, `5%`), each with the source string its errors and thresholds name
    (`--eviction-hard`, `/var/lib/kubelet/config.yaml: evictionHard`, ...). `source` names the
    layer itself, for the scalar settings: `max_pod_grace_period` (seconds),
    `pressure_transition_period` (seconds), `merge_defaults` (mergeDefaultEvictionSettings),
    `enforce_node_allocatable` (enforceNodeAllocatable). `key_sources` names, per (map,
    signal) — `("hard", "memory.available")` — a source other than the map's (the drop-in that
    set that one key); `defaults_applied` says the kubelet's defaults are already in `hard`
    (the base file's fix-up before drop-ins merge: `kubelet_base_for_dropins`), so `resolve`
    adds none.
    """

    hard: dict[str, str] | None = None
    soft: dict[str, str] | None = None
    grace: dict[str, str] | None = None
    min_reclaim: dict[str, str] | None = None
    hard_source: str = FLAG_HARD
    soft_source: str = FLAG_SOFT
    grace_source: str = FLAG_GRACE
    min_reclaim_source: str = FLAG_MIN_RECLAIM
    merge_defaults: bool | None = None
    enforce_node_allocatable: list[str] | None = None
    max_pod_grace_period: int | None = None
    pressure_transition_period: float | None = None
    source: str = "kubegc flags"
    key_sources: dict[tuple[str, str], str] = field(default_factory=dict)
    defaults_applied: bool = False


def raw_from_flags(
    hard: str | None,
    soft: str | None,
    grace: str | None,
    min_reclaim: str | None,
    *,
    max_pod_grace_period: int | None = None,
    pressure_transition_period: str | None = None,
) -> RawEviction:
    """kubegc's own flags, named as the kubelet names them, → `RawEviction`.

    Each text is parsed with the kubelet's grammar (`parse_threshold_map` for `--eviction-hard`
    and `--eviction-soft`, `parse_kv_map` for the grace periods and minimum reclaims); None
    means the flag was not given. An empty string is a set, empty map: `--eviction-hard=`
    turns every default off, as it does on the kubelet. `pressure_transition_period` is a Go
    duration. Raises `BadInput` naming the flag.
    """
    if max_pod_grace_period is not None and not -(2**31) <= max_pod_grace_period <= _INT32_MAX:
        raise BadInput(f"{FLAG_MAX_POD_GRACE}: {max_pod_grace_period!r} is out of range")
    return RawEviction(
        hard=None if hard is None else parse_threshold_map(hard, flag=FLAG_HARD),
        soft=None if soft is None else parse_threshold_map(soft, flag=FLAG_SOFT),
        grace=None if grace is None else parse_kv_map(grace, flag=FLAG_GRACE),
        min_reclaim=(
            None if min_reclaim is None else parse_kv_map(min_reclaim, flag=FLAG_MIN_RECLAIM)
        ),
        max_pod_grace_period=max_pod_grace_period,
        pressure_transition_period=(
            None
            if pressure_transition_period is None
            else parse_duration(pressure_transition_period, flag=FLAG_TRANSITION)
        ),
    )


_CONFIG_MAPS = (
    ("hard", "evictionHard"),
    ("soft", "evictionSoft"),
    ("grace", "evictionSoftGracePeriod"),
    ("min_reclaim", "evictionMinimumReclaim"),
)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def kubelet_base_for_dropins(
    base: Mapping[str, Any], *, merge_defaults: bool, version: KubeletVersion | None = None
) -> tuple[dict[str, Any], dict[tuple[str, ...], str]]:
    """The base config file as the kubelet holds it when it merges drop-ins onto it.

    The rule (cmd/kubelet/app/server.go `loadConfigFile`, run on the base file before
    `mergeKubeletConfigurations`): an unset `evictionHard` becomes the defaults
    (`default_eviction_hard`); a set one, with `mergeDefaultEvictionSettings: true` in the base
    file (from 1.33, kubernetes/kubernetes#127577), gets every unlisted default added. So a
    drop-in's `evictionHard` merges key by key onto the defaults, and
    `mergeDefaultEvictionSettings` counts only in the base file. `base` must have passed
    `raw_from_kubelet_config`. The defaults are kubelet `version`'s (`default_eviction_hard`;
    `merge_defaults` counts only where `honours_merge_defaults`). Returns (a deep copy of
    `base` with that done, the source of each key added:
    `{("evictionHard", signal): SOURCE_DEFAULT or SOURCE_MERGED_DEFAULT}`).
    """
    doc: dict[str, Any] = copy.deepcopy(dict(base))
    added: dict[tuple[str, ...], str] = {}
    defaults = default_eviction_hard(version)
    hard = doc.get("evictionHard")
    if hard is None:
        doc["evictionHard"] = dict(defaults)
        added.update({("evictionHard", s): SOURCE_DEFAULT for s in defaults})
    elif merge_defaults and honours_merge_defaults(version):
        for signal, value in defaults.items():
            if signal not in hard:
                hard[signal] = value
                added[("evictionHard", signal)] = SOURCE_MERGED_DEFAULT
    return doc, added


def raw_from_kubelet_config(
    doc: Mapping[str, Any] | None,
    source: str,
    *,
    provenance: Mapping[tuple[str, ...], str] | None = None,
) -> RawEviction:
    """The eviction fields of a decoded KubeletConfiguration → `RawEviction`.

    Reads `evictionHard`, `evictionSoft`, `evictionSoftGracePeriod`, `evictionMinimumReclaim`
    (maps of strings), `evictionMaxPodGracePeriod` (int32 seconds),
    `evictionPressureTransitionPeriod` (Go duration; `0s` counts as unset, since the kubelet
    defaults a zero duration to 5m), `mergeDefaultEvictionSettings` (bool) and
    `enforceNodeAllocatable` (list of strings). A null field is unset. `source` names the file;
    each map's source is `"<file>: <key>"`. Raises `BadInput` naming the file and key for a
    value of the wrong type (numbers must be quoted, as the kubelet's decoder requires).

    `provenance` (key path → file, or a `SOURCE_*` default; as `KubeletFiles.provenance` and
    `kubelet_base_for_dropins` give it) names the file that set each value of a merged
    document: errors and `key_sources` name it (`"<file>: evictionHard"`).
    """
    if doc is None:
        return RawEviction(source=source)
    if not isinstance(doc, Mapping):
        raise BadInput(f"{source}: not a KubeletConfiguration (expected a mapping)")
    prov = provenance or {}

    def where(*path: str) -> str:
        for n in range(len(path), 0, -1):
            if path[:n] in prov:
                found = prov[path[:n]]
                if found in (SOURCE_DEFAULT, SOURCE_MERGED_DEFAULT):
                    return found
                return f"{found}: {path[0]}"
        return f"{source}: {path[0]}"

    raw = RawEviction(source=source)
    for attr, key in _CONFIG_MAPS:
        setattr(raw, f"{attr}_source", f"{source}: {key}")
        value = doc.get(key)
        if value is None:
            continue
        if not isinstance(value, Mapping):
            raise BadInput(f"{where(key)} must be a mapping of signal to string, got {value!r}")
        entries: dict[str, str] = {}
        for name, text in value.items():
            if not isinstance(name, str) or not isinstance(text, str):
                raise BadInput(
                    f"{where(key, str(name))}: {name!r}: {text!r} must be a string "
                    "(quote the value)"
                )
            entries[name] = text
            if prov and where(key, name) != f"{source}: {key}":
                raw.key_sources[(attr, name)] = where(key, name)
        setattr(raw, attr, entries)
    grace = doc.get("evictionMaxPodGracePeriod")
    if grace is not None:
        if isinstance(grace, bool) or not isinstance(grace, int) or abs(grace) > _INT32_MAX:
            raise BadInput(
                f"{where('evictionMaxPodGracePeriod')} {_short(grace)} must be an integer (seconds)"
            )
        raw.max_pod_grace_period = grace
    period = doc.get("evictionPressureTransitionPeriod")
    if period is not None:
        if not isinstance(period, str):
            raise BadInput(
                f"{where('evictionPressureTransitionPeriod')} {_short(period)} must be a "
                "duration string (e.g. 5m)"
            )
        seconds = parse_duration(period, flag=f"{where('evictionPressureTransitionPeriod')}")
        raw.pressure_transition_period = seconds if seconds != 0 else None
    merge = doc.get("mergeDefaultEvictionSettings")
    if merge is not None:
        if not isinstance(merge, bool):
            raise BadInput(
                f"{where('mergeDefaultEvictionSettings')} {_short(merge)} must be true or false"
            )
        raw.merge_defaults = merge
    enforce = doc.get("enforceNodeAllocatable")
    if enforce is not None:
        if not isinstance(enforce, list) or not all(isinstance(x, str) for x in enforce):
            raise BadInput(
                f"{where('enforceNodeAllocatable')} {_short(enforce)} must be a list of strings"
            )
        raw.enforce_node_allocatable = list(enforce)
    return raw


_CMDLINE_FLAGS = frozenset(
    name.lstrip("-")
    for name in (
        FLAG_HARD,
        FLAG_SOFT,
        FLAG_GRACE,
        FLAG_MIN_RECLAIM,
        FLAG_MAX_POD_GRACE,
        FLAG_TRANSITION,
        FLAG_ENFORCE,
        FLAG_CONFIG,
    )
)


def raw_from_kubelet_cmdline(argv: Sequence[str], source: str) -> tuple[RawEviction, str | None]:
    """The running kubelet's command line (`argv[0]` is the program) → settings and `--config`.

    Reads `--eviction-hard`, `--eviction-soft`, `--eviction-soft-grace-period`,
    `--eviction-minimum-reclaim`, `--eviction-max-pod-grace-period`,
    `--eviction-pressure-transition-period` and `--enforce-node-allocatable`, each as
    `--flag=value` or `--flag value` (`_` and `-` are the same in names, as pflag normalises
    them). The first occurrence of a map flag replaces the default; repeats merge, a later key
    winning; scalar flags: the last wins; `--enforce-node-allocatable` repeats append. Parsing
    stops at `--`. Returns the settings (map sources `"<source>: --flag"`) and the value of the
    last `--config`, or None. Raises `BadInput` naming `source` and the flag for a bad value.
    """
    maps: dict[str, dict[str, str]] = {}
    max_grace: int | None = None
    transition: float | None = None
    enforce: list[str] | None = None
    config: str | None = None
    for name, found in long_flags(argv, _CMDLINE_FLAGS):
        if found is None:
            raise BadInput(f"{source}: --{name} has no value")
        value = found
        where = f"{source}: --{name}"
        if name in ("eviction-hard", "eviction-soft"):
            maps.setdefault(name, {}).update(parse_threshold_map(value, flag=where))
        elif name in ("eviction-soft-grace-period", "eviction-minimum-reclaim"):
            maps.setdefault(name, {}).update(parse_kv_map(value, flag=where))
        elif name == "eviction-max-pod-grace-period":
            try:
                max_grace = int(value.strip(), 10)
            except ValueError:
                raise BadInput(f"{where}: {value!r} is not an integer (seconds)") from None
            if abs(max_grace) > _INT32_MAX:
                raise BadInput(f"{where}: {value!r} is out of range")
        elif name == "eviction-pressure-transition-period":
            transition = parse_duration(value, flag=where)
        elif name == "enforce-node-allocatable":
            items = [x.strip() for x in value.split(",")] if value else []
            enforce = items if enforce is None else enforce + items
        else:
            config = value
    raw = RawEviction(
        hard=maps.get("eviction-hard"),
        soft=maps.get("eviction-soft"),
        grace=maps.get("eviction-soft-grace-period"),
        min_reclaim=maps.get("eviction-minimum-reclaim"),
        hard_source=f"{source}: {FLAG_HARD}",
        soft_source=f"{source}: {FLAG_SOFT}",
        grace_source=f"{source}: {FLAG_GRACE}",
        min_reclaim_source=f"{source}: {FLAG_MIN_RECLAIM}",
        enforce_node_allocatable=enforce,
        max_pod_grace_period=max_grace,
        pressure_transition_period=transition,
        source=source,
    )
    return raw, config


# --- resolution -------------------------------------------------------------------------------


@dataclass
class EvictionConfig:
    """The eviction settings in force, with where each came from.

    `thresholds`: the active thresholds (hard ones, then soft ones, each in `SIGNALS` order,
    then the `allocatableMemory.available` copies); `disabled`: `(signal, text, source)` of
    thresholds written as `0%`/`100%`, which the kubelet drops silently; `notes`: one-line
    remarks for the operator (defaults not in force, a soft threshold acting as hard, an
    ignored grace period, containerfs values the kubelet overwrites).
    `max_pod_grace_period` is in seconds (soft evictions), `pressure_transition_period` in
    seconds, `enforce_node_allocatable_pods` says whether the allocatable copy applies.
    `setting_sources` names the source of each scalar setting. `kubelet_version` ("1.30") is
    the kubelet version whose defaults apply, `kubelet_version_source` where it came from.
    `maps` holds each map as in force — `hard` (the defaults included where they apply),
    `soft`, `grace`, `min_reclaim` — as `(signal, value as written, source)` in signal order,
    the source naming the file, drop-in, flag or default that set that one key.
    """

    thresholds: list[Threshold] = field(default_factory=list)
    disabled: list[tuple[str, str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    max_pod_grace_period: int = DEFAULT_MAX_POD_GRACE_PERIOD
    pressure_transition_period: float = DEFAULT_PRESSURE_TRANSITION_PERIOD
    enforce_node_allocatable_pods: bool = True
    merge_defaults: bool = False
    setting_sources: dict[str, str] = field(default_factory=dict)
    kubelet_version: str = ""
    kubelet_version_source: str = ""
    maps: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)


def _first_map(layers: Sequence[RawEviction], attr: str) -> tuple[dict[str, str] | None, str]:
    for layer in layers:
        value: dict[str, str] | None = getattr(layer, attr)
        if value is not None:
            return value, str(getattr(layer, f"{attr}_source"))
    return None, ""


def _key_sources(layers: Sequence[RawEviction], attr: str) -> dict[tuple[str, str], str]:
    for layer in layers:
        if getattr(layer, attr) is not None:
            return layer.key_sources
    return {}


def _first_scalar(layers: Sequence[RawEviction], attr: str, default: Any) -> tuple[Any, str]:
    for layer in layers:
        value = getattr(layer, attr)
        if value is not None:
            return value, layer.source
    return default, SOURCE_DEFAULT


def _ordered(entries: Mapping[str, Any]) -> list[str]:
    return sorted(entries, key=SIGNALS.index)


def resolve(
    layers: Sequence[RawEviction], *, version: KubeletVersion | None = None
) -> EvictionConfig:
    """The kubelet's eviction configuration from layers given in precedence order, for
    kubelet `version` (None: the newest kubegc knows): its defaults (`default_eviction_hard`)
    and whether it reads mergeDefaultEvictionSettings (`honours_merge_defaults`; a note when
    the field is set but ignored).

    Each map (hard, soft, grace periods, minimum reclaims) and each scalar setting comes whole
    from the first layer that sets it — kubegc's flags, then the running kubelet's command line,
    then its config file, as the kubelet itself lets flags replace config-file maps. When no
    layer sets evictionHard the Linux defaults apply; when one does, the unlisted defaults are
    gone (said in `notes`) unless mergeDefaultEvictionSettings is true, which adds them back.
    Then, as the kubelet's `ParseThresholdConfig`: validate hard, soft, grace periods, minimum
    reclaims; give each soft threshold its signal's grace period (0s makes it hard); attach each
    minimum reclaim to every threshold of its signal; copy every hard memory.available threshold
    as allocatableMemory.available when enforceNodeAllocatable contains `pods` (default
    `["pods"]`). Raises `BadInput` (one line naming the source and the bad text) for any invalid
    value and for a soft threshold without a grace period.
    """
    cfg = EvictionConfig()
    defaults = default_eviction_hard(version)
    hard, hard_source = _first_map(layers, "hard")
    soft, soft_source = _first_map(layers, "soft")
    grace, grace_source = _first_map(layers, "grace")
    min_reclaim, min_reclaim_source = _first_map(layers, "min_reclaim")
    merge, merge_source = _first_scalar(layers, "merge_defaults", False)
    if merge and not honours_merge_defaults(version):
        assert version is not None
        cfg.notes.append(
            f"mergeDefaultEvictionSettings ({merge_source}) is ignored: kubelet "
            f"{version[0]}.{version[1]} has no such field (it exists from "
            f"{MERGE_DEFAULTS_SINCE[0]}.{MERGE_DEFAULTS_SINCE[1]})"
        )
        merge = False
    cfg.merge_defaults = bool(merge)
    cfg.setting_sources["merge_defaults"] = merge_source

    hard_entries: dict[str, tuple[str, str]] = {}
    if hard is None:
        hard_entries = {s: (v, SOURCE_DEFAULT) for s, v in defaults.items()}
    else:
        keys = _key_sources(layers, "hard")
        hard_entries = {s: (v, keys.get(("hard", s), hard_source)) for s, v in hard.items()}
        missing = [s for s in defaults if s not in hard]
        applied = any(layer.defaults_applied for layer in layers if layer.hard is hard)
        if missing and cfg.merge_defaults and not applied:
            for s in missing:
                hard_entries[s] = (defaults[s], SOURCE_MERGED_DEFAULT)
        elif missing:
            names = ", ".join(f"{s}<{defaults[s]}" for s in missing)
            verb = "default is" if len(missing) == 1 else "defaults are"
            cfg.notes.append(
                f"{names} {verb} not in force because evictionHard is set ({hard_source}); "
                "the kubelet drops unlisted defaults unless mergeDefaultEvictionSettings is true"
            )

    hard_thresholds: list[Threshold] = []
    for signal in hard_entries:
        _check_signal(signal, where=hard_entries[signal][1])
    for signal in _ordered(hard_entries):
        text, source = hard_entries[signal]
        t = parse_threshold_value(signal, text, where=source)
        if t is None:
            cfg.disabled.append((signal, text, source))
        else:
            hard_thresholds.append(replace(t, source=source))

    def sourced(
        values: Mapping[str, str] | None, attr: str, default: str
    ) -> dict[str, tuple[str, str]]:
        """Signal → (value, the source that set that key, else `default`) of one map."""
        keys = _key_sources(layers, attr)
        return {sig: (v, keys.get((attr, sig), default)) for sig, v in (values or {}).items()}

    soft_parsed: list[Threshold] = []
    soft_entries = sourced(soft, "soft", soft_source)
    for signal in soft_entries:
        _check_signal(signal, where=soft_entries[signal][1])
    for signal in _ordered(soft_entries):
        text, where = soft_entries[signal]
        t = parse_threshold_value(signal, text, where=where)
        if t is None:
            cfg.disabled.append((signal, text, where))
        else:
            soft_parsed.append(replace(t, source=where))

    grace_entries = sourced(grace, "grace", grace_source)
    periods = {
        sig: parse_grace_period(sig, text, where=where)
        for sig, (text, where) in grace_entries.items()
    }
    reclaim_entries = sourced(min_reclaim, "min_reclaim", min_reclaim_source)
    reclaims = {
        sig: parse_min_reclaim(sig, text, where=where)
        for sig, (text, where) in reclaim_entries.items()
    }

    soft_thresholds: list[Threshold] = []
    for t in soft_parsed:
        if t.signal not in periods:
            raise BadInput(
                f"{soft_source}: soft threshold {t.expression!r} needs a grace period for "
                f"{t.signal} (e.g. {FLAG_GRACE} {t.signal}=1m30s, or "
                "evictionSoftGracePeriod in the kubelet config)"
            )
        seconds = periods[t.signal]
        if seconds == 0:
            cfg.notes.append(
                f"soft threshold {t.expression} ({soft_source}) has a 0s grace period, "
                "so the kubelet treats it as a hard threshold"
            )
        soft_thresholds.append(replace(t, grace_period=seconds))
    soft_signals = {t.signal for t in soft_thresholds}
    for signal in _ordered(periods):
        if signal not in soft_signals:
            cfg.notes.append(
                f"grace period {signal}={grace_entries[signal][0]} ({grace_source}) is ignored: "
                f"no soft threshold for {signal}"
            )

    thresholds = hard_thresholds + soft_thresholds
    for i, t in enumerate(thresholds):
        if t.signal in reclaims:
            value = reclaims[t.signal]
            thresholds[i] = replace(
                t,
                min_reclaim=reclaim_entries[t.signal][0],
                min_reclaim_amount=value.quantity,
                min_reclaim_percentage=value.percentage,
                min_reclaim_source=min_reclaim_source,
            )

    enforce, enforce_source = _first_scalar(
        layers, "enforce_node_allocatable", list(DEFAULT_ENFORCE_NODE_ALLOCATABLE)
    )
    cfg.enforce_node_allocatable_pods = NODE_ALLOCATABLE_PODS in enforce
    cfg.setting_sources["enforce_node_allocatable"] = enforce_source
    if cfg.enforce_node_allocatable_pods:
        thresholds += [
            replace(
                t,
                signal=ALLOCATABLE_MEMORY_AVAILABLE,
                grace_period=0.0,
                source=SOURCE_ALLOCATABLE_COPY,
            )
            for t in thresholds
            if t.signal == MEMORY_AVAILABLE and t.hard
        ]
    for t in thresholds:
        if t.signal in (CONTAINERFS_AVAILABLE, CONTAINERFS_INODES_FREE):
            cfg.notes.append(
                f"{t.expression} ({t.source}) is overwritten by the kubelet: containerfs "
                "thresholds are copied from nodefs or imagefs, by filesystem layout"
            )
    cfg.thresholds = thresholds
    cfg.maps = {
        name: [(sig, *entries[sig]) for sig in _ordered(entries)]
        for name, entries in (("hard", hard_entries), ("soft", soft_entries),
                              ("grace", grace_entries), ("min_reclaim", reclaim_entries))
    }  # fmt: skip

    cfg.max_pod_grace_period, cfg.setting_sources["max_pod_grace_period"] = _first_scalar(
        layers, "max_pod_grace_period", DEFAULT_MAX_POD_GRACE_PERIOD
    )
    period, cfg.setting_sources["pressure_transition_period"] = _first_scalar(
        layers, "pressure_transition_period", DEFAULT_PRESSURE_TRANSITION_PERIOD
    )
    cfg.pressure_transition_period = float(period)
    return cfg


_CONTAINERFS_FROM = {
    CONTAINERFS_AVAILABLE: ("available", NODEFS_AVAILABLE, IMAGEFS_AVAILABLE),
    CONTAINERFS_INODES_FREE: ("inodesFree", NODEFS_INODES_FREE, IMAGEFS_INODES_FREE),
}


def containerfs_thresholds(
    config: EvictionConfig, *, dedicated_imagefs: bool, split: bool
) -> list[Threshold]:
    """The full threshold list after the kubelet sets the containerfs thresholds.

    As kubelet eviction's `UpdateContainerFsThresholds` at the first eviction cycle: with one
    filesystem, or images and containers split, the hard and soft `containerfs.*` thresholds
    copy the last hard/soft `nodefs.*` ones; with a dedicated imagefs holding images and
    writable layers, they copy `imagefs.*`. A configured containerfs threshold is overwritten
    in place (the last one of each kind; its replacement's `source` says so); a copy is
    appended otherwise. The kubelet
    also appends empty thresholds when there is nothing to copy, which can never be met; they
    are left out here, and a configured containerfs threshold with nothing to copy is dropped.
    Raises `ValueError` for `split` without a dedicated imagefs.
    """
    if split and not dedicated_imagefs:
        raise ValueError("a split image/container filesystem needs a dedicated imagefs")
    use_imagefs = dedicated_imagefs and not split
    layout = (
        "dedicated imagefs"
        if use_imagefs
        else ("split image/container filesystems" if split else "one filesystem")
    )
    result = list(config.thresholds)
    for target, (_, nodefs, imagefs) in _CONTAINERFS_FROM.items():
        origin = imagefs if use_imagefs else nodefs
        for hard in (True, False):
            copied: Threshold | None = None
            for t in result:
                if t.signal == origin and t.hard == hard:
                    copied = t
            index: int | None = None
            for i, t in enumerate(result):
                if t.signal == target and t.hard == hard:
                    index = i
            if copied is None:
                if index is not None:
                    del result[index]
                continue
            source = f"copied from {copied.expression} ({layout})"
            if index is not None:
                source += f"; replaces {result[index].expression} ({result[index].source})"
            new = replace(copied, signal=target, source=source)
            if index is None:
                result.append(new)
            else:
                result[index] = new
    return result


# --- evaluation -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ThresholdResult:
    """One threshold judged against its observation.

    `threshold_quantity` is the threshold in bytes (or count) for the observed capacity (for a
    quantity threshold without an observation, the quantity; else None); `margin` is
    `available - threshold_quantity` (negative when met); `met` is
    `threshold_quantity > available`, strictly, and False without an observation (the kubelet
    skips such thresholds; `note` says so). `condition` is the node condition a met threshold
    reports; `reclaim` the node-level reclaim the kubelet runs first for this signal in this
    filesystem layout (empty for memory and PID).
    """

    threshold: Threshold
    observation: Observation | None
    threshold_quantity: int | None
    margin: int | None
    met: bool
    condition: str
    reclaim: list[str]
    note: str = ""


def pointless(result: ThresholdResult) -> str:
    """Why a threshold can tell nothing, or "": one met whatever happens short of a wholly
    free resource — its quantity is the observed capacity or more (an inode quantity above
    the filesystem's inode count, `memory.available<64Gi` on a 16 GiB node), as `met` is
    `threshold > available` (kubelet eviction: `GetThresholdQuantity`, `thresholdsMet`).
    (The kubelet's parser takes `0%` and `100%` as no threshold at all and refuses a zero or
    negative quantity: `ParseThresholdConfig`; kubegc shows those as disabled or refuses
    them.)"""
    obs = result.observation
    if obs is None or result.threshold_quantity is None or obs.capacity <= 0:
        return ""
    if result.threshold_quantity >= obs.capacity:
        return (
            f"is met whenever anything is used: {result.threshold_quantity} is not below the "
            f"capacity, {obs.capacity}"
        )
    return ""


def disabled_why(signal: str, text: str) -> str:
    """Why a threshold written `signal<0%` or `signal<100%` tells nothing, and what would
    make it one: the kubelet takes exactly those two as no threshold at all and drops them
    (`parseThresholdStatement`), so it is never met whatever is used — `100%` does not mean
    "always", nor `0%` "only when full". A percentage between them or a quantity is a
    threshold."""
    return (
        f"{signal}<{text} is no threshold: the kubelet drops 0% and 100% ones, so it is never "
        f"met whatever is used; give a percentage between them ({signal}<10%) or a quantity"
    )


def evaluate(
    config: EvictionConfig,
    observations: Mapping[str, Observation],
    *,
    dedicated_imagefs: bool,
    split: bool = False,
) -> list[ThresholdResult]:
    """Judge every threshold in force (containerfs ones included) against `observations`.

    One result per threshold of `containerfs_thresholds(config, ...)`, memory signals first as
    the kubelet sorts them before picking one to reclaim, otherwise in configuration order.
    Met means `threshold_quantity > available` (kubelet eviction: `thresholdsMet`, without the
    minimum-reclaim hysteresis and grace timing of a running kubelet). Raises `ValueError` for
    `split` without a dedicated imagefs.
    """
    thresholds = containerfs_thresholds(config, dedicated_imagefs=dedicated_imagefs, split=split)
    ordered = sorted(thresholds, key=lambda t: 0 if t.signal in MEMORY_SIGNALS else 1)
    results: list[ThresholdResult] = []
    for t in ordered:
        reclaim = reclaim_for(t.signal, dedicated_imagefs=dedicated_imagefs, split=split)
        condition = condition_of(t.signal)
        obs = observations.get(t.signal)
        if obs is None:
            results.append(
                ThresholdResult(
                    t,
                    None,
                    t.quantity,
                    None,
                    False,
                    condition,
                    reclaim,
                    note=f"no observation of {t.signal}: not met (the kubelet skips it)",
                )
            )
            continue
        quantity = t.threshold_quantity(obs.capacity)
        results.append(
            ThresholdResult(
                t,
                obs,
                quantity,
                obs.available - quantity,
                quantity > obs.available,
                condition,
                reclaim,
            )
        )
    return results

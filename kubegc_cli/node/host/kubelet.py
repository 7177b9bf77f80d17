"""The node's kubelet configuration file (KubeletConfiguration), the fields kubegc uses.

Default location `/var/lib/kubelet/config.yaml` under `--host-root`; `--kubelet-config`
names another. A missing default file is fine (kubelet defaults apply); a named file that
cannot be read or parsed is `BadInput`.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.flags import long_flags
from kubegc_cli.core.inputs import parse_yaml, present, read_text, shown
from kubegc_cli.core.podlogs import (
    DEFAULT_CONTAINER_LOG_MAX_FILES,
    DEFAULT_CONTAINER_LOG_MAX_SIZE,
    LogRotation,
)
from kubegc_cli.core.settings import Settings
from kubegc_cli.core.units import parse_duration, parse_quantity
from kubegc_cli.node.host.bounded import Stalled, Watch, bounded
from kubegc_cli.node.host.processes import find_kubelet_cmdline
from kubegc_cli.node.kubeletapi import kubelet_configz

DEFAULT_CONFIG = "/var/lib/kubelet/config.yaml"
DEFAULT_POD_LOGS_DIR = "/var/log/pods"
CONTAINER_LOGS_DIR = "/var/log/containers"
# the KubeletConfiguration versions the kubelet decodes
API_VERSIONS = ("kubelet.config.k8s.io/v1beta1", "kubelet.config.k8s.io/v1")


#: The KubeletConfiguration field behind each setting kubegc reads, by kubegc's name (the
#: keys of `KubeletConfig.sources`).
CONFIG_FIELDS = {
    "pod_logs_dir": "podLogsDir",
    "image_gc_high_threshold": "imageGCHighThresholdPercent",
    "image_gc_low_threshold": "imageGCLowThresholdPercent",
    "minimum_image_ttl_duration": "imageMinimumGCAge",
    "image_maximum_gc_age": "imageMaximumGCAge",
    "container_log_max_size": "containerLogMaxSize",
    "container_log_max_files": "containerLogMaxFiles",
}


@dataclass(frozen=True, slots=True)
class KubeletConfig:
    """The KubeletConfiguration fields kubegc reads. Paths are host paths (not under host root).

    `pod_logs_dir` is `podLogsDir` (kubelet default `/var/log/pods`). `source` names the base
    file, the kubelet's `/configz` (`node.kubeletapi.configz_source`), or `defaults` when none
    was read. `image_gc` holds the image GC fields the files
    set, by kubegc's option name (`image_gc_high_threshold`: int, `minimum_image_ttl_duration`:
    seconds). `sources` names the file that set each of those (and `pod_logs_dir`): a drop-in
    or the base file. `files` is what was read (`load_kubelet_files`), None when parsed alone.
    `fallback` says why the kubelet's `/configz` was not used when it was asked and the files
    were read instead ("" otherwise). `log_rotation` is `containerLogMaxSize` and
    `containerLogMaxFiles` (kubelet defaults 10Mi and 5), its `source` the file, `/configz` or
    command line that set them (`sources` names each: `container_log_max_size`,
    `container_log_max_files`).
    """

    pod_logs_dir: str = DEFAULT_POD_LOGS_DIR
    source: str = "defaults"
    image_gc: Mapping[str, Any] = field(default_factory=dict)
    log_rotation: LogRotation = field(default_factory=LogRotation)
    sources: Mapping[str, str] = field(default_factory=dict)
    files: KubeletFiles | None = None
    fallback: str = ""

    def read_from(self) -> str:
        """The files read, for `-v`: the base file (or "defaults"), then "+ N drop-in(s) in
        DIR" when drop-ins were merged, and the podLogsDir with the file that set it."""
        text = self.source
        if self.files is not None and self.files.dropins:
            n = len(self.files.dropins)
            text += f" + {n} drop-in{'s' if n != 1 else ''} in {self.files.config_dir}"
        where = self.sources.get("pod_logs_dir", "default")
        return f"{text} (podLogsDir {self.pod_logs_dir} from {where})"


def validate_pod_logs_dir(value: object, *, source: str) -> str:
    """A pod log root as the kubelet requires it (absolute, clean, ASCII) and never `/`; kubegc
    also refuses control characters (a newline would split its messages).

    Returns the clean path; raises `BadInput` naming `source` and the value.
    """
    if not isinstance(value, str) or not value.startswith("/"):
        raise BadInput(f"{source} {value!r} must be an absolute path")
    clean = os.path.normpath(value)
    if clean == "/":
        raise BadInput(f"{source} '/' would let kubegc delete anywhere; refusing")
    printable = value.isascii() and value.isprintable()  # no newline, tab, DEL, ...
    if clean != value.rstrip("/") or clean.startswith("//") or not printable:
        raise BadInput(f"{source} {value!r} must be a clean ASCII path (as the kubelet requires)")
    return clean


def container_log_max_size(value: object, *, source: str) -> int:
    """`containerLogMaxSize` (`--container-log-max-size`) in bytes, as the kubelet reads it
    (container_log_manager.go `parseMaxSize`: a resource quantity that must be a whole
    int64; a negative one disables rotation). Raises `BadInput` naming `source`."""
    if not isinstance(value, str):
        raise BadInput(f'{source} {shown(value)} must be a quantity ("10Mi")')
    q = parse_quantity(value, flag=source)
    if q.denominator != 1:
        raise BadInput(f"invalid value for {source}: {value!r} is not a whole number of bytes")
    return int(q)


def container_log_max_files(value: object, *, source: str) -> int:
    """`containerLogMaxFiles` (`--container-log-max-files`): an integer above 1 (the kubelet
    refuses to start otherwise: `NewContainerLogManager` "invalid MaxFiles"). Raises
    `BadInput` naming `source`."""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value.strip())
    if not isinstance(value, int) or isinstance(value, bool):
        raise BadInput(f"{source} {shown(value)} must be an integer")
    if value <= 1:
        raise BadInput(f"{source} {value} must be more than 1 (the kubelet refuses it)")
    return value


def _log_rotation(
    size: tuple[int, str] | None, files: tuple[int, str] | None, sources: dict[str, str]
) -> LogRotation:
    """The `LogRotation` of the (value, where) pairs set (None: the kubelet's default), each
    source recorded in `sources`."""
    where = []
    if size is not None:
        sources["container_log_max_size"] = size[1]
        where.append(size[1])
    if files is not None:
        sources["container_log_max_files"] = files[1]
        if files[1] not in where:
            where.append(files[1])
    return LogRotation(
        max_size=size[0] if size is not None else DEFAULT_CONTAINER_LOG_MAX_SIZE,
        max_files=files[0] if files is not None else DEFAULT_CONTAINER_LOG_MAX_FILES,
        source=", ".join(where) or "defaults",
    )


def parse_kubelet_config(
    doc: Any, *, source: str, files: KubeletFiles | None = None
) -> KubeletConfig:
    """Decoded KubeletConfiguration → `KubeletConfig`. Raises `BadInput` naming `source` (or,
    with `files`, the file that set the field): not a mapping, another `kind` or `apiVersion`
    (either may be left out), a bad field."""
    if doc is None:
        return KubeletConfig(source=source, files=files)
    doc = _check_kind(doc, source)

    def where(key: str) -> str:
        return files.source_of(key) if files is not None else source

    sources: dict[str, str] = {}
    logs = doc.get("podLogsDir")
    if logs is None or logs == "":  # the kubelet's default applies to an unset or empty field
        logs = DEFAULT_POD_LOGS_DIR
    else:
        sources["pod_logs_dir"] = where("podLogsDir")
    clean = validate_pod_logs_dir(logs, source=f"{where('podLogsDir')}: podLogsDir")
    image_gc: dict[str, Any] = {}
    for name in ("image_gc_high_threshold", "image_gc_low_threshold"):
        key = CONFIG_FIELDS[name]
        if key in doc:
            if not isinstance(doc[key], int) or isinstance(doc[key], bool):
                raise BadInput(f"{where(key)}: {key} {shown(doc[key])} must be an integer")
            image_gc[name] = doc[key]
            sources[name] = where(key)
    for name in ("minimum_image_ttl_duration", "image_maximum_gc_age"):
        key = CONFIG_FIELDS[name]
        if key in doc:
            if not isinstance(doc[key], str):  # a metav1.Duration is a string: "2m", "1h30m"
                raise BadInput(f'{where(key)}: {key} {shown(doc[key])} must be a duration ("2m")')
            image_gc[name] = parse_duration(doc[key], flag=f"{where(key)}: {key}")
            sources[name] = where(key)
    size = files_ = None
    if doc.get("containerLogMaxSize") not in (None, ""):
        key = "containerLogMaxSize"
        size = (container_log_max_size(doc[key], source=f"{where(key)}: {key}"), where(key))
    if doc.get("containerLogMaxFiles") not in (None, 0):  # 0: unset, the default applies
        key = "containerLogMaxFiles"
        files_ = (container_log_max_files(doc[key], source=f"{where(key)}: {key}"), where(key))
    rotation = _log_rotation(size, files_, sources)
    return KubeletConfig(
        pod_logs_dir=clean,
        source=source,
        image_gc=image_gc,
        log_rotation=rotation,
        sources=sources,
        files=files,
    )


def kubelet_flags(argv: Sequence[str], names: Sequence[str]) -> dict[str, str]:
    """The values of the kubelet flags `names` (without `--`) in `argv` (`argv[0]` is the
    program), as pflag reads them: `--flag=value` or `--flag value`, `_` and `-` the same in
    names, the last occurrence wins, parsing stops at `--`; a flag without a value is left
    out. Returns flag name → value."""
    found: dict[str, str] = {}
    for name, value in long_flags(argv, names):
        if value is not None:
            found[name] = value
    return found


def kubelet_file_flags(argv: Sequence[str]) -> tuple[str | None, str | None]:
    """The running kubelet's `--config` and `--config-dir` values from its `argv`
    (`kubelet_flags`). An empty value is unset (the kubelet reads no file for `--config=`).
    Returns (config, config_dir), host paths or None."""
    found = kubelet_flags(argv, ("config", "config-dir"))
    return found.get("config") or None, found.get("config-dir") or None


#: The running kubelet's image GC flags kubegc reads → (kubegc option name, kind). A flag on
#: the kubelet's command line overrides its config files and drop-ins
#: (cmd/kubelet/app/server.go `kubeletConfigFlagPrecedence`).
IMAGE_GC_FLAGS = {
    "image-gc-high-threshold": ("image_gc_high_threshold", "int"),
    "image-gc-low-threshold": ("image_gc_low_threshold", "int"),
    "minimum-image-ttl-duration": ("minimum_image_ttl_duration", "duration"),
}


#: The most drop-in files and directory levels kubegc reads below a `--config-dir`.
MAX_DROPINS = 1000
MAX_DROPIN_DEPTH = 32
DROPIN_SUFFIX = ".conf"


def dropin_files(config_dir: Path) -> list[Path]:
    """The drop-in files below `config_dir` in the order the kubelet merges them.

    The rule (cmd/kubelet/app/server.go `mergeKubeletConfigurations`): `filepath.WalkDir`
    over the directory — each directory's entries in byte order of their names, a
    subdirectory's files read where its name sorts, depth first — taking every entry that is
    no directory and whose extension (`filepath.Ext`: from the last dot of the name) is exactly
    `.conf` (case-sensitive: `a.CONF` and `a.conf.bak` are not read). A link to a directory
    is not entered (WalkDir does not follow links). Paths are as given (host paths under
    `--host-root` when the caller joined them).

    Raises `BadInput` naming the directory when it cannot be listed (the kubelet refuses to
    start then), gives no answer within `--timeout` (a hung mount), or holds more than
    `MAX_DROPINS` files or `MAX_DROPIN_DEPTH` levels."""
    out: list[Path] = []

    def walk(watch: Watch) -> None:
        def visit(d: str, depth: int) -> None:
            if depth > MAX_DROPIN_DEPTH:
                raise BadInput(f"kubelet config dir {config_dir}: deeper than {MAX_DROPIN_DEPTH}")
            watch.at(d)
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: os.fsencode(e.name))
            for e in entries:
                if e.is_dir(follow_symlinks=False):
                    visit(e.path, depth + 1)
                elif e.name.endswith(DROPIN_SUFFIX):  # filepath.Ext: from the last dot
                    out.append(Path(e.path))
                    if len(out) > MAX_DROPINS:
                        raise BadInput(
                            f"kubelet config dir {config_dir}: more than {MAX_DROPINS} "
                            f"{DROPIN_SUFFIX} files"
                        )

        visit(str(config_dir), 0)

    try:
        bounded(walk)
    except Stalled as exc:
        raise BadInput(f"cannot read kubelet config dir {config_dir}: {exc.strerror}") from None
    except OSError as exc:
        raise BadInput(
            f"cannot read kubelet config dir {config_dir}: {exc.strerror or exc}"
        ) from None
    return out


#: A provenance path: the keys from the top of the document to a value
#: (`("evictionHard", "memory.available")`).
KeyPath = tuple[str, ...]


def merge_patch(
    target: dict[str, Any],
    patch: Mapping[str, Any],
    source: str,
    provenance: dict[KeyPath, str],
    at: KeyPath = (),
) -> None:
    """Apply `patch` onto `target` in place as a JSON merge patch (RFC 7386, what the kubelet
    applies for each drop-in: `jsonpatch.MergePatch` in `mergeKubeletConfigurations`): a
    mapping merges key by key into a mapping already there (recursively: `evictionHard`,
    `authorization.webhook`, ...); a list or scalar replaces the value whole; a `null` removes
    the key (the kubelet's default applies again). `provenance` (key path → file) is updated:
    every value set names `source`; a removed or replaced value's entries below it go."""
    for key, value in patch.items():
        path = (*at, str(key))
        for p in [p for p in provenance if p[: len(path)] == path]:
            if not (isinstance(value, Mapping) and isinstance(target.get(key), dict)):
                del provenance[p]
        if value is None:
            target.pop(key, None)
            continue
        if isinstance(value, Mapping):
            if not isinstance(target.get(key), dict):
                target[key] = {}
            merge_patch(target[key], value, source, provenance, path)
            if not target[key]:
                provenance[path] = source
            continue
        target[key] = value
        provenance[path] = source


@dataclass(frozen=True, slots=True)
class KubeletFiles:
    """The kubelet's configuration files as the kubelet reads them, merged.

    `base` is the config file read (None: none), `base_doc` its decoded mapping (empty when
    none); `config_dir` the drop-in directory (None: none), `dropins` each drop-in read, in
    merge order, with its decoded mapping; `doc` the base with every drop-in merged onto it
    (`merge_patch`); `provenance` the file that set each value (key path → path as text;
    values not listed come from the base file or, absent, from the kubelet's defaults).
    `running` is "pid N" when the paths came from the running kubelet's command line, `argv`
    that command line (empty when no running kubelet was found)."""

    base: Path | None = None
    base_doc: Mapping[str, Any] = field(default_factory=dict)
    config_dir: Path | None = None
    dropins: tuple[tuple[Path, Mapping[str, Any]], ...] = ()
    doc: Mapping[str, Any] = field(default_factory=dict)
    provenance: Mapping[KeyPath, str] = field(default_factory=dict)
    running: str | None = None
    argv: tuple[str, ...] = ()

    def source_of(self, *path: str) -> str:
        """The file that set the value at `path` (a drop-in, else the base file), or
        "defaults" when no file sets it."""
        for n in range(len(path), 0, -1):
            if path[:n] in self.provenance:
                return self.provenance[path[:n]]
        node: Any = self.doc
        for key in path:
            if not isinstance(node, Mapping) or key not in node:
                return "defaults"
            node = node[key]
        return str(self.base) if self.base is not None else "defaults"


def _check_kind(doc: Any, source: str) -> Mapping[str, Any]:
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise BadInput(f"{source}: not a KubeletConfiguration (expected a mapping)")
    kind = doc.get("kind")
    if kind not in (None, "KubeletConfiguration"):
        raise BadInput(f"{source}: kind is {shown(kind)}, expected KubeletConfiguration")
    version = doc.get("apiVersion")
    if version not in (None, *API_VERSIONS):
        raise BadInput(
            f"{source}: apiVersion is {shown(version)}, expected {' or '.join(API_VERSIONS)} "
            "(the kubelet would not load it)"
        )
    return doc


def _read_doc(path: Path, what: str, *, bounded_read: bool) -> Any:
    if not bounded_read:
        return parse_yaml(read_text(path, what), path, what)

    def read(watch: Watch) -> str:
        watch.at(str(path))
        return read_text(path, what)

    try:
        text = bounded(read)
    except Stalled as exc:
        raise BadInput(f"cannot read {what} {path}: {exc.strerror}") from None
    return parse_yaml(text, path, what)


def running_kubelet(host_root: Path) -> tuple[int, list[str]] | None:
    """The running kubelet's pid and argv (`processes.find_kubelet_cmdline`: only when
    `host_root` is `/`), or None."""
    return find_kubelet_cmdline(host_root)


def root_dir_hint(host_root: Path) -> str:
    """What to give when the kubelet root is not where kubegc looked: the running kubelet's
    own `--root-dir` (`running_kubelet`; the last one given counts, as pflag reads a flag
    given twice), else the flag to give. A parenthesis, with a leading space."""
    found = running_kubelet(host_root)
    given = [v for _, v in long_flags(found[1] if found else [], {"root-dir"}) if v]
    if given:
        return f" (the running kubelet's is {given[-1]}: give --root-dir {given[-1]})"
    return " (give --root-dir: the kubelet's --root-dir)"


#: The kubelet flag naming the sandbox image its image GC keeps (kubelet before 1.29; a no-op
#: from 1.29, removed in 1.35).
POD_INFRA_FLAG = "pod-infra-container-image"
#: The files kubeadm's systemd drop-in (`10-kubeadm.conf`) reads the kubelet's extra flags from,
#: with the variable each sets, in the order `ExecStart` puts them on the command line
#: (`$KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS`): a flag given in a later one wins.
KUBELET_FLAG_FILES = (
    ("/var/lib/kubelet/kubeadm-flags.env", "KUBELET_KUBEADM_ARGS"),
    ("/etc/default/kubelet", "KUBELET_EXTRA_ARGS"),
    ("/etc/sysconfig/kubelet", "KUBELET_EXTRA_ARGS"),
)
_MAX_FLAG_FILE_BYTES = 64 << 10


def env_file_value(text: str, key: str) -> str | None:
    """The value `key` is given in a systemd `EnvironmentFile` text (`KEY=value` or
    `KEY="value"`, `#` and `;` lines are comments, the last assignment wins), its enclosing
    quotes removed; None when it is not set."""
    value = None
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        name, eq, rest = line.partition("=")
        if not eq or name.strip() != key:
            continue
        rest = rest.strip()
        if len(rest) >= 2 and rest[0] == rest[-1] and rest[0] in "\"'":
            rest = rest[1:-1]
        value = rest
    return value


def kubelet_pod_infra_image(
    host_root: Path, *, running: tuple[int, list[str]] | bool | None = True
) -> tuple[str, str] | None:
    """The kubelet's `--pod-infra-container-image` and where it is given: (image reference,
    source), or None when nothing gives one.

    From the running kubelet's command line when it can be seen (`running`: its (pid, argv),
    None for none, True to look: `running_kubelet`); else from the files kubeadm's systemd
    drop-in reads flags from (`KUBELET_FLAG_FILES`, under `host_root`), the value split on
    white space as systemd splits an unquoted `$VARIABLE`, the last one given winning. A file
    that cannot be read (or gives no answer within `--timeout`) is passed over: this names a
    setting for a warning, it never lets anything be removed."""
    found = running_kubelet(host_root) if running is True else running
    if isinstance(found, tuple):
        pid, argv = found
        given = kubelet_flags(argv, (POD_INFRA_FLAG,)).get(POD_INFRA_FLAG)
        return (given, f"the kubelet's command line (pid {pid})") if given else None
    best: tuple[str, str] | None = None
    for path, key in KUBELET_FLAG_FILES:
        local = host_root / path.lstrip("/")

        def read(watch: Watch, local: Path = local) -> bytes:
            watch.at(str(local))
            with open(local, "rb") as f:
                return f.read(_MAX_FLAG_FILE_BYTES)

        try:
            text = bounded(read).decode("utf-8", "replace")
        except OSError:  # (`Stalled` too)
            continue
        args = (env_file_value(text, key) or "").split()
        given = kubelet_flags(["kubelet", *args], (POD_INFRA_FLAG,)).get(POD_INFRA_FLAG)
        if given:
            best = (given, f"{path}: {key}")
    return best


def load_kubelet_files(
    explicit: Path | None,
    host_root: Path,
    explicit_dir: Path | None = None,
    *,
    running: tuple[int, list[str]] | bool | None = True,
) -> KubeletFiles:
    """The kubelet's config file and drop-ins, merged as the kubelet merges them.

    Which files: the base file is `explicit` (`--kubelet-config`, as given), else the running
    kubelet's `--config` (under `host_root`), else `/var/lib/kubelet/config.yaml` under
    `host_root` when it exists; the drop-in directory is `explicit_dir`
    (`--kubelet-config-dir`, as given), else the running kubelet's `--config-dir` (under
    `host_root`), else none (the kubelet has no default). `running` is the running kubelet's
    (pid, argv), None for none, or True to look for it (`running_kubelet`).

    Each drop-in (`dropin_files`) is merged onto the base in order (`merge_patch`). A missing
    default base file is fine; a named or running kubelet's file that cannot be read, and a
    drop-in that cannot be read or parsed or is no KubeletConfiguration (an empty drop-in too:
    the kubelet's loader refuses one), raise `BadInput` naming the file — the kubelet refuses
    to start with such a file. Reads are bounded (`--timeout` for a hung mount)."""
    found = running_kubelet(host_root) if running is True else running
    cmd_config = cmd_dir = None
    who = None
    if isinstance(found, tuple):
        cmd_config, cmd_dir = kubelet_file_flags(found[1])
        who = f"pid {found[0]}"
    base: Path | None = explicit
    if base is None and cmd_config:
        base = host_root / cmd_config.lstrip("/")
    if base is None:
        default = host_root / DEFAULT_CONFIG.lstrip("/")

        def look(watch: Watch) -> bool:
            watch.at(str(default))
            return present(default)

        try:
            base = default if bounded(look) else None
        except Stalled as exc:
            raise BadInput(f"cannot read kubelet config {default}: {exc.strerror}") from None
    config_dir = explicit_dir
    if config_dir is None and cmd_dir:
        config_dir = host_root / cmd_dir.lstrip("/")
    base_doc: Mapping[str, Any] = {}
    if base is not None:
        doc = _read_doc(base, "kubelet config", bounded_read=explicit is None)
        base_doc = _check_kind(doc, str(base))
    merged: dict[str, Any] = copy.deepcopy(dict(base_doc))
    provenance: dict[KeyPath, str] = {}
    dropins: list[tuple[Path, Mapping[str, Any]]] = []
    if config_dir is not None:
        for path in dropin_files(config_dir):
            doc = _read_doc(path, "kubelet config drop-in", bounded_read=True)
            if doc is None:
                raise BadInput(f"kubelet config drop-in {path} is empty (the kubelet refuses it)")
            doc = _check_kind(doc, str(path))
            dropins.append((path, doc))
            merge_patch(merged, doc, str(path), provenance)
    return KubeletFiles(
        base=base,
        base_doc=base_doc,
        config_dir=config_dir,
        dropins=tuple(dropins),
        doc=merged,
        provenance=provenance,
        running=who,
        argv=tuple(found[1]) if isinstance(found, tuple) else (),
    )


def load_kubelet_config(
    explicit: Path | None,
    host_root: Path,
    explicit_dir: Path | None = None,
    *,
    running: tuple[int, list[str]] | bool | None = True,
) -> KubeletConfig:
    """The kubelet's configuration as the kubelet reads it: the base file and its drop-ins
    (`load_kubelet_files`, which says which files and raises `BadInput` for a bad one), the
    fields kubegc uses parsed (`parse_kubelet_config`), each naming the file that set it."""
    files = load_kubelet_files(explicit, host_root, explicit_dir, running=running)
    if files.base is None and not files.dropins:
        kcfg = KubeletConfig(files=files)
    else:
        source = str(files.base) if files.base is not None else "defaults"
        kcfg = parse_kubelet_config(files.doc, source=source, files=files)
    return with_kubelet_flags(kcfg)


#: The running kubelet's container log rotation flags (deprecated in favour of the config
#: file's fields, still read; a flag overrides the files, as for `IMAGE_GC_FLAGS`).
LOG_ROTATION_FLAGS = ("container-log-max-size", "container-log-max-files")


def with_kubelet_flags(kcfg: KubeletConfig) -> KubeletConfig:
    """`kcfg` with the running kubelet's image GC flags (`IMAGE_GC_FLAGS`) and log rotation
    flags (`LOG_ROTATION_FLAGS`, from `kcfg.files.argv`) over what the files set, each naming
    the command line as its source. Raises `BadInput` naming the flag for a value the
    kubelet would not take."""
    if kcfg.files is None or not kcfg.files.argv:
        return kcfg
    flags = kubelet_flags(kcfg.files.argv, (*IMAGE_GC_FLAGS, *LOG_ROTATION_FLAGS))
    if not flags:
        return kcfg
    image_gc, sources = dict(kcfg.image_gc), dict(kcfg.sources)
    rotation = kcfg.log_rotation
    for flag in LOG_ROTATION_FLAGS:
        if flag not in flags:
            continue
        text = flags.pop(flag)
        where = f"kubelet command line ({kcfg.files.running}): --{flag}"
        if flag == "container-log-max-size":
            rotation = replace(rotation, max_size=container_log_max_size(text, source=where))
            sources["container_log_max_size"] = where
        else:
            rotation = replace(rotation, max_files=container_log_max_files(text, source=where))
            sources["container_log_max_files"] = where
    for flag, text in flags.items():
        name, kind = IMAGE_GC_FLAGS[flag]
        where = f"kubelet command line ({kcfg.files.running}): --{flag}"
        if kind == "int":
            try:
                image_gc[name] = int(text.strip(), 10)
            except ValueError:
                raise BadInput(f"{where}: {text!r} must be an integer") from None
        else:
            image_gc[name] = parse_duration(text, flag=where)
        sources[name] = where
    keys = ("container_log_max_size", "container_log_max_files")
    named = dict.fromkeys(sources[k] for k in keys if k in sources)
    rotation = replace(rotation, source=", ".join(named) or "defaults")
    return replace(kcfg, image_gc=image_gc, sources=sources, log_rotation=rotation)


def kubelet_config_for(s: Settings) -> KubeletConfig:
    """The kubelet configuration of a run: the one loader every command that reads the
    kubelet config uses. The kubelet's effective configuration from its `/configz` when it is
    asked (`--kubelet-url`, or `--kubelet-configz` through the node proxy; never with
    `--kubelet-config`) and answers (`node.kubeletapi.kubelet_configz`), each value named
    after it; else `load_kubelet_config` with the run's settings (`--kubelet-config`,
    `--host-root`, `--kubelet-config-dir`, the running kubelet), whose `fallback` then says
    why `/configz` was not used. Raises `BadInput` for a bad field, file, `--kubelet-ca`, or
    `--kubelet-url` without credentials."""
    if _ONE_READ and (hit := _ONE_READ[-1].get(id(s))) is not None and hit[0] is s:
        return hit[1]
    configz = kubelet_configz(s)
    if configz is not None and configz.doc is not None:
        kcfg = parse_kubelet_config(configz.doc, source=configz.source)
    else:
        kcfg = load_kubelet_config(s.kubelet_config, s.host_root, s.kubelet_config_dir)
        kcfg = replace(kcfg, fallback=configz.fallback) if configz is not None else kcfg
    if _ONE_READ:
        _ONE_READ[-1][id(s)] = (s, kcfg)
    return kcfg


_ONE_READ: list[dict[int, tuple[Settings, KubeletConfig]]] = []


@contextmanager
def kubelet_config_once() -> Iterator[None]:
    """Within, `kubelet_config_for` reads the kubelet configuration once per `Settings`
    (the files, their drop-ins, the running kubelet's command line, `/configz`) and gives that
    reading to every later call: a command that plans several kinds (`reclaim`, `gc all`)
    plans them all on one configuration, read once. A run that goes on for long (the agent)
    does not use it: each of its cycles reads the configuration anew. Not for threads."""
    _ONE_READ.append({})
    try:
        yield
    finally:
        _ONE_READ.pop()

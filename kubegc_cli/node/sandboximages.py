"""The images a node's runtime keeps for itself: its sandbox (pause) image and the images its
configuration pins, read from every place a runtime names them.

- containerd's verbose `Status` (`config.sandboxImage`: containerd 1.x; 2.x no longer says);
- containerd's config file (`--runtime-config`, else the `--config`/`-c` of the running
  containerd, else `/etc/containerd/config.toml`; under `--host-root`) with its `imports`,
  read as containerd's `LoadConfig` (`cmd/containerd/server/config/config.go`) reads them;
- CRI-O's `/etc/crio/crio.conf` and every file below `/etc/crio/crio.conf.d` (CRI-O's
  `UpdateFromFile`, then `UpdateFromPath`): `[crio.image] pause_image` and `pinned_images`;
- cri-dockerd's `--pod-infra-container-image`, from its running process's command line;
- Bottlerocket's `localhost/kubernetes/pause:*`, always.

The union of every image named is protected (`SandboxImages.protected_ids`): naming one image
too many only keeps it. A file kubegc cannot read or parse is a warning, and the sandbox image
it might have named is taken to be one of the runtimes' defaults (`KNOWN_DEFAULTS`), which are
then protected as well: never a guess that removes more.
"""

from __future__ import annotations

import fnmatch
import glob
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubegc_cli.core.errors import BadInput, SandboxImageUnreadable
from kubegc_cli.core.flags import long_flags
from kubegc_cli.core.inputs import Malformed, decode_json, decode_toml, present, shown
from kubegc_cli.core.model import Image, reference_forms
from kubegc_cli.node.host.bounded import Stalled, Watch, bounded
from kubegc_cli.node.host.logs import on_host
from kubegc_cli.node.host.processes import (
    find_process_cmdline,
    find_processes,
    process_cwd,
    socket_holders,
)
from kubegc_cli.node.host.regular import read_regular

if TYPE_CHECKING:
    from kubegc_cli.node.cri.client import CriClient

CONTAINERD_CONFIG = "/etc/containerd/config.toml"
CRIO_CONFIG = "/etc/crio/crio.conf"
CRIO_DROP_INS = "/etc/crio/crio.conf.d"
#: A runtime config file larger than this is not read (a warning): none is near it.
MAX_CONFIG_BYTES = 4 << 20
#: containerd follows `imports` without a depth limit (only a file read once is skipped);
#: kubegc reads at most this deep and at most `MAX_CONFIG_FILES` files, and warns beyond.
MAX_IMPORT_DEPTH = 8
MAX_CONFIG_FILES = 256

#: containerd 2.x: the CRI images plugin, `pinned_images.sandbox` (config version 3).
IMAGES_PLUGIN = "io.containerd.cri.v1.images"
#: containerd 1.x and 2.x reading a version 2 file: the CRI plugin's `sandbox_image`.
CRI_PLUGIN = "io.containerd.grpc.v1.cri"
#: A version 1 (or unversioned) file names the CRI plugin by its short name, migrated by
#: containerd's `v1MigratePluginName` ("cri" → `io.containerd.grpc.v1.cri`).
CRI_PLUGIN_V1 = "cri"

#: The sandbox images runtimes use when their configuration names none: containerd 2.0's
#: `DefaultSandboxImage` (internal/cri/config/config.go: registry.k8s.io/pause:3.10), and
#: the defaults of the containerd 1.6/1.7, later 2.x, CRI-O and cri-dockerd releases. Which
#: one a runtime uses depends on its version, which kubegc does not know: all are protected
#: whenever a runtime's own default may be in force.
KNOWN_DEFAULTS = (
    "k8s.gcr.io/pause:3.6",
    "registry.k8s.io/pause:3.6",
    "registry.k8s.io/pause:3.8",
    "registry.k8s.io/pause:3.9",
    "registry.k8s.io/pause:3.10",
    "registry.k8s.io/pause:3.10.1",
)
#: Bottlerocket's sandbox image, built on the node (`localhost/kubernetes/pause:<version>`).
BOTTLEROCKET_PAUSE = "localhost/kubernetes/pause:*"

#: The source of the image kubegc's own `--pod-infra-container-image` protects.
KUBEGC_POD_INFRA_FLAG = "--pod-infra-container-image"

#: How a `NamedImage.ref` matches an image name.
MATCH_REFERENCE = "reference"  # the reference, or its normalized form (`reference_forms`)
MATCH_CRIO = "crio-pattern"  # CRI-O's `pinned_images` pattern (`crio_pattern_matches`)
MATCH_GLOB = "glob"  # a shell glob over the whole name (`fnmatch`)

Warn = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class NamedImage:
    """One image a runtime keeps: `ref` (an image reference, or a pattern when `match` is
    `MATCH_CRIO`), `source` (where it was named: a file and key, a flag, `Status`, a default)
    and `what` (`sandbox image` or `pinned image`). `assumed`: named by no runtime, kept in
    case (a runtime's default, Bottlerocket's)."""

    ref: str
    source: str
    what: str = "sandbox image"
    match: str = MATCH_REFERENCE
    assumed: bool = False

    def matches(self, names: Iterable[str]) -> bool:
        """Whether any of `names` (an image's ID, tags and digests) is this image."""
        if self.match == MATCH_CRIO:
            return any(crio_pattern_matches(self.ref, n) for n in names)
        if self.match == MATCH_GLOB:
            return any(fnmatch.fnmatchcase(n, self.ref) for n in names)
        forms = reference_forms(self.ref) | {self.ref}
        return any(n in forms for n in names)

    @property
    def reason(self) -> str:
        return f"the {self.what} {self.ref} ({self.source})"


@dataclass(slots=True)
class SandboxImages:
    """Every image the node's runtimes keep for themselves (`named`, in the order found),
    what the runtime's `Status` named (`status_image`, None when it does not say) or why it
    could not be read (`status_error`), and the warnings of the files that could not be read
    (`warnings`, also given to `warn` as they happen)."""

    named: list[NamedImage] = field(default_factory=list)
    status_image: str | None = None
    status_error: str = ""
    warnings: list[str] = field(default_factory=list)

    def protected_ids(self, images: Iterable[Image]) -> dict[str, str]:
        """Image ID → why it is kept (the first `NamedImage` it matches: what, which image,
        where it was named), for every image of `images` any of `named` matches."""
        out: dict[str, str] = {}
        for img in images:
            names = (img.id, *img.repo_tags, *img.repo_digests)
            for n in self.named:
                if n.matches(names):
                    out.setdefault(img.id, n.reason)
                    break
        return out

    def said(self) -> list[tuple[str, str]]:
        """The sandbox images the runtimes themselves name — their `Status`, their config
        files, cri-dockerd's flag — as (reference, where), each once: no assumed default, no
        pinned image, nothing a kubegc option added."""
        return list(
            dict.fromkeys(
                (n.ref, n.source)
                for n in self.named
                if n.what == "sandbox image"
                and not n.assumed
                and n.match == MATCH_REFERENCE
                and n.source != KUBEGC_POD_INFRA_FLAG
            )
        )

    def refs(self) -> list[str]:
        """The references (and patterns) named, each once, in order."""
        return list(dict.fromkeys(n.ref for n in self.named))


# -- the runtime's own word -------------------------------------------------------------------


def sandbox_image_from_info(info: Mapping[str, str]) -> str | None:
    """The sandbox (pause) image a runtime says it uses, from verbose `Status` info:
    containerd 1.x's `config` JSON carries `sandboxImage` (containerd 2.x's does not). None
    when the runtime does not say (no `config`, or one without `sandboxImage`).

    Raises `SandboxImageUnreadable` when it says something kubegc cannot read: a `config` that
    is not JSON kubegc reads (`decode_json`), not an object, or whose `sandboxImage` is not a
    non-empty string. Then the image the runtime protects is unknown, and no image may be
    taken for unused on its word."""
    raw = info.get("config", "")
    if not raw:
        return None
    try:
        config = decode_json(raw, "the runtime's Status info 'config'")
    except Malformed as exc:
        raise SandboxImageUnreadable(str(exc)) from None
    if not isinstance(config, dict):
        raise SandboxImageUnreadable("the runtime's Status info 'config' is not a JSON object")
    if "sandboxImage" not in config:
        return None
    value = config["sandboxImage"]
    if not isinstance(value, str) or not reference_forms(value):
        raise SandboxImageUnreadable(
            "the runtime's Status info 'config' has a sandboxImage that is not an image "
            f"reference ({shown(value)})"
        )
    return value


# -- CRI-O's patterns -------------------------------------------------------------------------


def crio_pattern_matches(pattern: str, name: str) -> bool:
    """Whether CRI-O's `pinned_images` entry `pattern` pins the image named `name`, as CRI-O's
    `CompileRegexpsForPinnedImages` and `FilterPinnedImage` (internal/storage/image.go) decide:
    case-insensitive; `*keyword*` matches a name containing the keyword; `prefix*` matches a
    name containing the prefix (CRI-O's expression is not anchored); anything else must equal
    the whole name."""
    p, n = pattern.lower(), name.lower()
    if len(p) >= 2 and p.startswith("*") and p.endswith("*"):
        return p[1:-1] in n
    if p.endswith("*"):
        return p[:-1] in n
    return p == n


# -- containerd's configuration ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """One decoded runtime config file: its host path, the TOML document, how deep in the
    imports it was found (0 for the file containerd was started with)."""

    path: str
    doc: Mapping[str, Any]
    depth: int = 0


def _table(doc: Any, *keys: str) -> Mapping[str, Any] | None:
    for key in keys:
        if not isinstance(doc, Mapping):
            return None
        doc = doc.get(key)
    return doc if isinstance(doc, Mapping) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def containerd_version(doc: Mapping[str, Any]) -> int:
    """A containerd config document's `version` (0 when absent or not a whole number: read
    as version 1, as containerd's migrations treat version 0)."""
    v = doc.get("version")
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def containerd_file_images(cfg: ConfigFile) -> tuple[bool, list[NamedImage]]:
    """What one containerd config file says of the CRI images: (whether it has the table
    that holds the sandbox image, the images it names there).

    By the file's `version`: 3 — `plugins."io.containerd.cri.v1.images".pinned_images`
    (`sandbox`, and every other entry: containerd 2.x pins each); 2 —
    `plugins."io.containerd.grpc.v1.cri".sandbox_image` (containerd 2.x moves it to
    `pinned_images.sandbox` when it migrates the file: plugins/cri/images `configMigration`);
    1 or none — `plugins.cri.sandbox_image` (containerd's `v1MigratePluginName`). A
    version 2 or 3 file is also looked at under the other versions' keys: a key containerd
    ignores only names one image too many."""
    plugins = _table(cfg.doc, "plugins") or {}
    version = containerd_version(cfg.doc)
    holder = IMAGES_PLUGIN if version >= 3 else CRI_PLUGIN if version == 2 else CRI_PLUGIN_V1
    holds = _table(plugins, holder) is not None
    found: list[NamedImage] = []
    pinned = _table(plugins, IMAGES_PLUGIN, "pinned_images") or {}
    for key, value in pinned.items():
        if ref := _text(value):
            what = "sandbox image" if key == "sandbox" else "pinned image"
            where = f"{cfg.path}: plugins.{IMAGES_PLUGIN!r}.pinned_images.{key}"
            found.append(NamedImage(ref, where, what))
    for name in (CRI_PLUGIN, CRI_PLUGIN_V1):
        if ref := _text((_table(plugins, name) or {}).get("sandbox_image")):
            found.append(NamedImage(ref, f"{cfg.path}: plugins.{name!r}.sandbox_image"))
    return holds, found


def containerd_images(files: Sequence[ConfigFile]) -> tuple[list[NamedImage], bool]:
    """The images containerd's configuration names, from its files in containerd's load
    order (`load_containerd_config`): (every image named in any file, whether the sandbox
    image in force may be containerd's default).

    containerd 1.x's `mergeConfig` replaces a plugin's whole table with a later file's (its
    comment: "Maps merged by keys, but values are replaced entirely"; 2.x merges the `plugins`
    map with mergo and keeps that comment): kubegc takes the reading that keeps more — the
    sandbox image in force is the one of the last file that has the CRI images table, and
    containerd's default when that table names none (or no file has it). Every image named
    anywhere is returned, the one in force among them."""
    named: list[NamedImage] = []
    in_force: list[NamedImage] | None = None
    for cfg in files:
        holds, found = containerd_file_images(cfg)
        named.extend(found)
        if holds:
            in_force = [n for n in found if n.what == "sandbox image"]
    return named, not in_force


def containerd_imports(parent: str, imports: Any, host_root: Path) -> list[str]:
    """containerd's `resolveImports`, as host paths in the order listed: each entry cleaned; a
    relative one joined to the directory of `parent` (a host path); one with a `*` expanded
    as a glob, its matches sorted (as Go's `filepath.Glob` gives them), matched under
    `host_root`. containerd 1.x globs a relative pattern as given, against its working
    directory (`/` under systemd), before joining anything: such a pattern is also matched
    against `/`, so that either containerd's files are read. Entries that are not strings are
    skipped."""
    out: list[str] = []
    prefix = str(host_root).rstrip("/")
    for entry in imports if isinstance(imports, list) else ():
        if not isinstance(entry, str) or not entry:
            continue
        path = os.path.normpath(entry)
        candidates = [path] if path.startswith("/") else [
            os.path.normpath(os.path.join(os.path.dirname(parent), path)),
            *(["/" + path] if "*" in path else []),
        ]  # fmt: skip
        for candidate in candidates:
            if "*" not in candidate:
                out.append(candidate)
                continue
            pattern = glob.escape(prefix) + candidate  # the host root's name is no pattern
            for match in sorted(glob.glob(pattern, include_hidden=True)):
                out.append("/" + match[len(prefix) :].lstrip("/") if prefix else match)
    return out


def read_toml(local: str, what: str) -> Mapping[str, Any]:
    """The TOML document of the file `local`, read at most `MAX_CONFIG_BYTES`, opened once
    without blocking and checked as the file opened (`host.regular.read_regular`: a FIFO or
    device there, planted before or after any look, is refused, never waited on). A link is
    followed, as the runtimes follow it. Raises `OSError` (cannot be read, a loop of links,
    `NotRegularFile`) or `ValueError` (too large; `Malformed` from `decode_toml`: not UTF-8,
    not TOML, nested more than `MAX_NESTING` levels) with a message naming the file."""
    data = read_regular(local, MAX_CONFIG_BYTES)
    if len(data) > MAX_CONFIG_BYTES:
        raise ValueError(f"{what} {local} is larger than {MAX_CONFIG_BYTES >> 20} MiB")
    return decode_toml(data, f"{what} {local}")


def load_containerd_config(
    path: str,
    host_root: Path,
    warn: Warn,
    *,
    watch: Watch | None = None,
    named_by: str = "",
    read: list[ConfigFile] | None = None,
) -> tuple[list[ConfigFile], bool]:
    """containerd's config files from `path` (a host path) in containerd's load order: the
    file itself, then its `imports` breadth first (`LoadConfig`: a queue; a path already read
    is skipped, so a cycle ends), at most `MAX_IMPORT_DEPTH` deep and `MAX_CONFIG_FILES` files.

    Returns (the files read, whether all could be read). A file that cannot be read or parsed,
    or one past the bounds, is a warning (`warn`) and makes the second value False; a missing
    import is one too (containerd itself would not start with it). Raises `BadInput` when
    `path` itself is a file the user named (`named_by`: the option, `--runtime-config`) and it
    cannot be read or parsed: one line naming the option and the file. Each file is also
    appended to `read` as soon as it is read, so that a caller whose walk stalls on a later
    import (a hung mount) still has the files read before it."""
    files: list[ConfigFile] = []
    loaded: set[str] = set()
    pending: list[tuple[str, int]] = [(path, 0)]
    complete = True
    while pending:
        host_path, depth = pending.pop(0)
        if host_path in loaded:
            continue
        if depth > MAX_IMPORT_DEPTH or len(files) >= MAX_CONFIG_FILES:
            warn(f"containerd config {host_path} not read: imports nest deeper than "
                 f"{MAX_IMPORT_DEPTH} or name more than {MAX_CONFIG_FILES} files")  # fmt: skip
            complete = False
            break
        loaded.add(host_path)
        local = on_host(host_root, host_path)
        if watch is not None:
            watch.at(local)
        try:
            doc = read_toml(local, "containerd config")
        except (OSError, ValueError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            if named_by and depth == 0:
                if isinstance(exc, OSError):
                    why = f"cannot read {host_path}: {why}"
                raise BadInput(f"invalid value for {named_by}: {why}") from None
            warn(f"cannot read containerd config {host_path}: {why}")
            complete = False
            continue
        files.append(ConfigFile(host_path, doc, depth))
        if read is not None:
            read.append(files[-1])
        for child in containerd_imports(host_path, doc.get("imports"), host_root):
            pending.append((child, depth + 1))
    return files, complete


# -- CRI-O's configuration --------------------------------------------------------------------


def crio_images(files: Sequence[ConfigFile]) -> tuple[list[NamedImage], bool]:
    """The images CRI-O's configuration names, from its files in CRI-O's order (`crio.conf`,
    then the drop-ins): (every `[crio.image] pause_image` and `pinned_images` entry of any
    file, whether the pause image in force may be CRI-O's default — no file sets one). Each
    file decodes onto what the earlier ones set (CRI-O's `UpdateFromDropInFile`): a later
    `pause_image` or `pinned_images` replaces the earlier one; kubegc keeps all."""
    named: list[NamedImage] = []
    pause_set = False
    for cfg in files:
        image = _table(cfg.doc, "crio", "image") or {}
        if ref := _text(image.get("pause_image")):
            named.append(NamedImage(ref, f"{cfg.path}: crio.image.pause_image"))
            pause_set = True
        pinned = image.get("pinned_images")
        for entry in pinned if isinstance(pinned, list) else ():
            if pattern := _text(entry):
                named.append(NamedImage(pattern, f"{cfg.path}: crio.image.pinned_images",
                                        "pinned image", MATCH_CRIO))  # fmt: skip
    return named, not pause_set


def crio_config_paths(host_root: Path) -> list[str]:
    """CRI-O's config files as host paths, in the order CRI-O reads them: `crio.conf` (when
    there), then every file below `crio.conf.d`, walked in lexical order, subdirectories
    included (`UpdateFromPath`: Go's `filepath.Walk` reads every file, whatever its name)."""
    out = [CRIO_CONFIG] if present(on_host(host_root, CRIO_CONFIG)) else []
    top = on_host(host_root, CRIO_DROP_INS)
    prefix = str(host_root).rstrip("/")

    def walk(directory: str) -> None:
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            return
        for name in names:
            local = os.path.join(directory, name)
            if os.path.isdir(local) and not os.path.islink(local):
                walk(local)
            elif len(out) < MAX_CONFIG_FILES:
                out.append("/" + local[len(prefix) :].lstrip("/") if prefix else local)

    walk(top)
    return out


# -- cri-dockerd ------------------------------------------------------------------------------

CRI_DOCKERD_FLAG = "--pod-infra-container-image"


def flag_value(argv: Sequence[str], flag: str) -> str | None:
    """The value of `flag` on a Go (pflag) command line: `--flag=value` or `--flag value`;
    the last one given wins. None when not given."""
    value = None
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith(flag + "="):
            value = arg[len(flag) + 1 :]
    return value


def go_flag_value(argv: Sequence[str], names: Sequence[str]) -> str | None:
    """The value of a string flag called any of `names` (`config`, `c`) on a command line
    parsed by Go's `flag` package, as containerd's urfave/cli parses it (`core.flags.long_flags`
    with `go_flag`): `-name value`, `--name value`, `-name=value`, `--name=value`; the last
    one given wins; nothing after a `--`. None when not given."""
    values = [v for _, v in long_flags(argv, names, go_flag=True) if v is not None]
    return values[-1] if values else None


#: containerd's flag for its config file (`cmd/containerd/command/main.go`: `--config`, `-c`).
CONTAINERD_CONFIG_FLAGS = ("config", "c")


def running_containerd_configs(host_root: Path, socket: str | None) -> list[str]:
    """The config files (host paths) of the running containerd: its `--config`/`-c`
    (`go_flag_value`; a relative path joined to its working directory), else
    `CONTAINERD_CONFIG` — of the containerd listening on `socket` (the CRI endpoint's path),
    or of every containerd running when none is known to (reading one file too many only
    names more images). Each path once; `[CONTAINERD_CONFIG]` when no containerd is seen
    (`host_root` other than `/`: the host's processes are not ours to see)."""
    running = find_processes(host_root, "containerd")
    if socket is not None:
        serving = set(socket_holders(socket, (pid for pid, _ in running)))
        if serving:
            running = [(pid, argv) for pid, argv in running if pid in serving]
    paths: list[str] = []
    for pid, argv in running:
        path = go_flag_value(argv, CONTAINERD_CONFIG_FLAGS) or CONTAINERD_CONFIG
        if not path.startswith("/"):
            path = os.path.join(process_cwd(pid) or "/", path)
        paths.append(os.path.normpath(path))
    return list(dict.fromkeys(paths)) or [CONTAINERD_CONFIG]


# -- all together -----------------------------------------------------------------------------


def _absent(local: str) -> bool:
    """Nothing is at `local` (a dangling link too): containerd then runs on its defaults
    (`LoadConfig`'s `os.IsNotExist`). A loop of links or any other error is no absence —
    containerd would refuse to start —, so the file is read and its error is a warning."""
    try:
        os.stat(local)
    except FileNotFoundError:
        return True
    except (OSError, ValueError):
        return False
    return False


def runtime_sandbox_images(
    client: CriClient | None,
    host_root: Path,
    runtime_config: Path | None,
    warn: Warn,
) -> SandboxImages:
    """Every image the node's runtimes keep for themselves (see the module's docstring):
    `client`'s `Status` (None: not asked), containerd's config (`runtime_config`, a host path
    given by `--runtime-config`, else the running containerd's `running_containerd_configs`;
    under `host_root`),
    CRI-O's config files, the running cri-dockerd's flag, Bottlerocket's pause image, and the
    runtimes' defaults (`KNOWN_DEFAULTS`) wherever one may be in force: a config file that
    names none, one that cannot be read, or no runtime saying at all.

    Files are read under `host.bounded.bounded`. Raises `BadInput` when `runtime_config` is
    given and there is no file there. A file that cannot be read is a warning (`warn`, and
    `SandboxImages.warnings`); a `Status` kubegc cannot read is `status_error` (the caller
    decides: `SandboxImageUnreadable`)."""
    out = SandboxImages()

    def note(message: str) -> None:
        out.warnings.append(message)
        warn(message)

    defaults_why: list[str] = []
    if client is not None:
        try:
            out.status_image = sandbox_image_from_info(client.status_info())
        except SandboxImageUnreadable as exc:
            out.status_error = exc.why

    if runtime_config is not None:
        configs = [str(runtime_config)]
        if not os.path.isfile(on_host(host_root, configs[0])):
            raise BadInput(f"invalid value for --runtime-config: {shown(configs[0])} is not a "
                           f"file (under --host-root {host_root})")  # fmt: skip
    else:
        socket = getattr(getattr(client, "endpoint", None), "path", None)
        configs = running_containerd_configs(host_root, socket if isinstance(socket, str) else None)

    containerd_read: list[ConfigFile] = []  # each of containerd's files as soon as it is read

    def read(watch: Watch) -> None:
        for config in configs:
            watch.at(on_host(host_root, config))
            if _absent(on_host(host_root, config)):
                continue
            files, complete = load_containerd_config(
                config, host_root, note, watch=watch,
                named_by="--runtime-config" if runtime_config is not None else "",
                read=containerd_read,
            )  # fmt: skip
            named, default = containerd_images(files)
            out.named.extend(named)
            if default or not complete:
                defaults_why.append("containerd's default")
        crio = crio_config_paths(host_root)
        if crio:
            files = []
            for path in crio:
                watch.at(on_host(host_root, path))
                try:
                    files.append(ConfigFile(path, read_toml(on_host(host_root, path),
                                                            "CRI-O config")))  # fmt: skip
                except (OSError, ValueError) as exc:
                    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
                    note(f"cannot read CRI-O config {path}: {why}")
                    defaults_why.append("CRI-O's default")
            named, default = crio_images(files)
            out.named.extend(named)
            if default:
                defaults_why.append("CRI-O's default")

    try:
        bounded(read)
    except Stalled as exc:
        note(f"cannot read the runtime's config: {exc.strerror} at {exc.filename}")
        defaults_why.append("a runtime's default")
        # what the files read before the stall name stays named (the walk given up on
        # may still append: a copy of the list as it stands)
        before = list(containerd_read)
        out.named.extend(n for n in containerd_images(before)[0] if n not in out.named)

    found = find_process_cmdline(host_root, "cri-dockerd")
    if found is not None:
        pid, argv = found
        ref = flag_value(argv, CRI_DOCKERD_FLAG)
        if ref:
            out.named.append(NamedImage(ref, f"cri-dockerd {CRI_DOCKERD_FLAG} (pid {pid})"))
        else:
            defaults_why.append("cri-dockerd's default")
    if out.status_image:  # after the files: a kept row names the file when both name it
        out.named.append(NamedImage(out.status_image, "the runtime's Status"))
    if not defaults_why and not out.named:
        defaults_why.append("no runtime named one")
    if defaults_why:
        source = f"{defaults_why[0]}: none named"
        out.named.extend(NamedImage(ref, source, assumed=True) for ref in KNOWN_DEFAULTS)
    out.named.append(NamedImage(BOTTLEROCKET_PAUSE, "Bottlerocket's sandbox image",
                                match=MATCH_GLOB, assumed=True))  # fmt: skip
    return out

"""kubegc's fast paths (containers, JSON rows) give exactly what the plain ones give."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.model import (
    LABEL_POD_UID,
    SNAPSHOT_KIND,
    Container,
    ContainerState,
    Image,
    NodeSnapshot,
    Sandbox,
    SandboxState,
    fill_listed_log,
    make_container,
)
from kubegc_cli.core.plan import ContainerAction, Plan, Result

TEXT = st.text(max_size=20)
LABELS = st.dictionaries(TEXT, TEXT, max_size=4)
INTS = st.integers(min_value=0, max_value=2**63 - 1)


@given(
    st.tuples(
        TEXT, TEXT, TEXT, INTS, st.sampled_from(list(ContainerState)), INTS, LABELS, LABELS,
        TEXT, TEXT, TEXT, INTS, st.integers(-255, 255), TEXT, st.none() | INTS,
    )
)  # fmt: skip
def test_make_container_is_the_constructor(values: tuple[object, ...]) -> None:
    made = make_container(*values)  # type: ignore[arg-type]
    plain = Container(*values)  # type: ignore[arg-type]
    assert made == plain
    assert [getattr(made, f.name) for f in dataclasses.fields(Container)] == list(values)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.id = "x"  # type: ignore[misc]


def test_with_status_sets_only_what_it_is_given() -> None:
    c = Container("c1", "s1", "app", 2, ContainerState.EXITED, 10, {"k": "v"}, {}, "i", "r", "d")
    d = c.with_status(log_path="/var/log/pods/a/app/2.log", log_bytes=5)
    assert d == dataclasses.replace(c, log_path="/var/log/pods/a/app/2.log", log_bytes=5)
    e = c.with_status(state=ContainerState.UNKNOWN, finished_at=20, exit_code=3,
                      log_path="", log_bytes=None)  # fmt: skip
    assert e == dataclasses.replace(c, state=ContainerState.UNKNOWN, finished_at=20, exit_code=3)


TEXTS = st.text()  # any text: quotes, backslashes, control characters, non-ASCII


@given(
    st.dictionaries(
        st.sampled_from(
            ["io.kubernetes.pod.uid", "io.kubernetes.pod.namespace", "io.kubernetes.pod.name",
             "io.kubernetes.container.name", "other"]
        ),
        TEXTS,
    ),
    st.tuples(TEXTS, TEXTS, TEXTS, TEXTS, TEXTS, TEXTS, TEXTS, TEXTS, TEXTS, TEXTS),
    st.tuples(INTS, INTS, st.integers(0, 2**32), st.none() | INTS, INTS),
    st.sampled_from(list(ContainerState)),
    st.sampled_from(list(Result)),
)  # fmt: skip
def test_json_row_is_json_dumps_of_to_dict(
    labels: dict[str, str],
    texts: tuple[str, ...],
    numbers: tuple[int, int, int, int | None, int],
    state: ContainerState,
    result: Result,
) -> None:
    """A container action's JSON row is exactly `json.dumps` of its dict, whatever it holds."""
    cid, sandbox, name, image, log_path, rule, reason, error, note, _ = texts
    created, finished, attempt, size, freed = numbers
    c = Container(cid, sandbox, name, attempt, state, created, labels, {}, image, "", "",
                  finished, 0, log_path, size)  # fmt: skip
    a = ContainerAction(c, rule, reason, result, error, False, freed, note)
    assert a.json_row() == json.dumps(a.to_dict())
    # Rows written together share their pod fields by labels object: another container with
    # the same labels dict, and one with an equal copy, give the same rows as alone.
    sibling = dataclasses.replace(c, id=cid + "-2", attempt=attempt + 1)
    copy = dataclasses.replace(c, id=cid + "-3", labels=dict(labels))
    other = dataclasses.replace(c, id=cid + "-4", labels={**labels, LABEL_POD_UID: "u-other"})
    shared: dict[Any, str] = {}
    for x in (c, sibling, copy, other, c, other):
        b = ContainerAction(x, rule, reason, result, error, False, freed, note)
        assert b.json_row(shared) == json.dumps(b.to_dict())
    # Rows that differ only in what the plan says of them (rule to log_note), or in one of the
    # texts kept by value (sandbox, name, image), through the same shared dict.
    for x, args in (
        (c, (reason, rule, Result.KEPT, note, False, freed + 1, error)),
        (c, (rule, reason, result, error, False, freed, note + "x")),
        (
            dataclasses.replace(c, pod_sandbox_id=image, image=sandbox, name=log_path),
            (rule, reason, result, error, False, freed, note),
        ),
        (dataclasses.replace(c, labels={}, name=rule), (rule, reason, result, error)),
    ):
        b = ContainerAction(x, *args)  # type: ignore[arg-type]
        assert b.json_row(shared) == json.dumps(b.to_dict())
    plan: Plan[ContainerAction] = Plan(kind="ContainerGCPlan", policy={}, now=created)
    plan.actions.append(a)
    plan.kept.append(ContainerAction(sibling, rule, reason, Result.KEPT))
    rows = plan.to_dict(rows_as_json=True)
    assert [json.loads(r) for r in (*rows["actions"], *rows["kept"])] == [
        *plan.to_dict()["actions"],
        *plan.to_dict()["kept"],
    ]


KUBELET_LABELS = {
    "io.kubernetes.pod.uid": "u1",
    "io.kubernetes.pod.namespace": "ns",
    "io.kubernetes.pod.name": "p",
    "io.kubernetes.container.name": "app",
}


@pytest.mark.parametrize(
    "labels",
    [
        KUBELET_LABELS,
        {**KUBELET_LABELS, "extra": "x"},
        {k: v for k, v in KUBELET_LABELS.items() if k != "io.kubernetes.pod.uid"} | {"a": "u1"},
        {"a": "1", "b": "2", "c": "3", "d": "4"},
        {},
    ],
)
def test_listed_labels_are_the_runtimes_and_shared_when_equal(labels: dict[str, str]) -> None:
    """`container_from_pb` gives each container exactly the runtime's labels; equal label maps
    in one listing share one dict, different ones never do."""
    from kubegc_cli.node.cri.client import Shared, container_from_pb
    from kubegc_cli.node.cri.v1 import api_pb2

    pb: Any = api_pb2

    def message(cid: str, labels: dict[str, str]) -> Any:
        return pb.Container(id=cid, metadata=pb.ContainerMetadata(name="app"), labels=labels)

    shared: Shared = {}
    a = container_from_pb(message("a", labels), False, shared)
    b = container_from_pb(message("b", dict(labels)), False, shared)
    other = container_from_pb(
        message("c", {**labels, "io.kubernetes.pod.uid": "u2"}), False, shared
    )
    assert a.labels == labels and b.labels == labels
    assert a.labels is b.labels
    assert (
        other.labels == {**labels, "io.kubernetes.pod.uid": "u2"} and other.labels is not a.labels
    )


def test_fill_listed_log_sets_the_log_fields_in_place() -> None:
    c = make_container("c1", "s1", "app", 2, ContainerState.EXITED, 10, {}, {}, "i", "r", "d")
    before = dataclasses.replace(c)
    fill_listed_log(c, "/var/log/pods/a/app/2.log", 7)
    assert c == dataclasses.replace(before, log_path="/var/log/pods/a/app/2.log", log_bytes=7)


def test_a_snapshot_listing_a_container_twice_is_bad_input() -> None:
    c = Container("c1", "s1", "app", 0, ContainerState.EXITED, 10**18).to_dict()
    doc: dict[str, Any] = {
        "kind": SNAPSHOT_KIND,
        "captured_at": "2026-01-01T00:00:00Z",
        "containers": [c, c],
        "sandboxes": [],
        "images": [],
    }
    with pytest.raises(BadInput, match=r"snapshot s\.json: container 'c1' is listed twice"):
        NodeSnapshot.from_dict(doc, source="snapshot s.json")
    doc["containers"] = [c]
    assert [x.id for x in NodeSnapshot.from_dict(doc).containers] == ["c1"]
    sandbox = Sandbox("s1", "p", "ns", "u1", 0, SandboxState.READY, 10**18).to_dict()
    with pytest.raises(BadInput, match="sandbox 's1' is listed twice"):
        NodeSnapshot.from_dict({**doc, "sandboxes": [sandbox, sandbox]})
    image = Image(id="sha256:1", repo_tags=("a:1",), size=1).to_dict()
    with pytest.raises(BadInput, match="image 'sha256:1' is listed twice"):
        NodeSnapshot.from_dict({**doc, "images": [image, image]})


@pytest.mark.parametrize("key", ["containers", "sandboxes", "images"])
def test_a_snapshot_without_one_of_its_lists_is_bad_input(key: str) -> None:
    """A snapshot writes every list, empty or not: one missing or null is a damaged file, not
    a node without such objects (read as empty, sandboxes in use would look removable)."""
    doc: dict[str, Any] = {"kind": SNAPSHOT_KIND, "captured_at": "2026-01-01T00:00:00Z",
                           "containers": [], "sandboxes": [], "images": []}  # fmt: skip
    assert NodeSnapshot.from_dict(doc).containers == ()
    with pytest.raises(BadInput, match=rf"snapshot s\.json: '{key}' is missing"):
        NodeSnapshot.from_dict({k: v for k, v in doc.items() if k != key}, source="snapshot s.json")
    with pytest.raises(BadInput, match=f"'{key}' is null, not a list"):
        NodeSnapshot.from_dict({**doc, key: None})


_SNAPSHOT_CONTAINER = {"id": "c1", "state": "EXITED", "created_at": "2026-01-01T00:00:00Z"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"containers": [_SNAPSHOT_CONTAINER, None]}, "containers[1] is null, not an object"),
        ({"containers": ["c1"]}, "containers[0] is a string, not an object"),
        ({"containers": [{**_SNAPSHOT_CONTAINER, "attempt": "x"}]},
         'containers[0]: attempt "x" is not a whole number from 0 to 4294967295'),
        ({"containers": [{**_SNAPSHOT_CONTAINER, "attempt": True}]},
         "containers[0]: attempt true is not a whole number from 0 to 4294967295"),
        ({"containers": [{**_SNAPSHOT_CONTAINER, "attempt": 1.5}]},
         "containers[0]: attempt 1.5 is not a whole number from 0 to 4294967295"),
        ({"containers": [{**_SNAPSHOT_CONTAINER, "log_bytes": -1}]},
         "containers[0]: log_bytes -1 is not a whole number from 0 to 18446744073709551615"),
        ({"containers": [{**_SNAPSHOT_CONTAINER, "exit_code": "0"}]},
         'containers[0]: exit_code "0" is not a whole number from -2147483648 to 2147483647'),
        ({"containers": [{**_SNAPSHOT_CONTAINER, "id": 7}]}, "containers[0]: id 7 is not a string"),
        ({"containers": [{**_SNAPSHOT_CONTAINER, "log_path": None}]},
         "containers[0]: log_path null is not a string"),
        ({"sandboxes": [{"id": "s1", "state": "READY", "created_at": "2026-01-01T00:00:00Z",
                         "uid": ["u"]}]}, 'sandboxes[0]: uid ["u"] is not a string'),
        ({"images": [{"id": "sha256:1", "pinned": "false"}]},
         'images[0]: pinned "false" is not true or false'),
        ({"images": [{"id": "sha256:1", "repo_tags": "a:1"}]},
         'images[0]: repo_tags "a:1" is not a list of strings'),
        ({"images": [{"id": "sha256:1", "size": -5}]}, "images[0]: size -5 is not a whole number"),
        ({"image_filesystems": [{"mountpoint": "/", "used_bytes": "1Gi"}]},
         'image_filesystems[0]: used_bytes "1Gi" is not a whole number from 0 to 1844674'),
        ({"containers": [{"state": "EXITED"}]}, "containers[0] has no 'id'"),
        ({"containers": [{**_SNAPSHOT_CONTAINER, "attempt": 2**32}]},
         "containers[0]: attempt 4294967296 is not a whole number from 0 to 4294967295"),
        ({"containers": [{**_SNAPSHOT_CONTAINER, "log_bytes": 10**309}]},
         "containers[0]: log_bytes 10000000000000000000"),
        ({"containers": [{**_SNAPSHOT_CONTAINER, "labels": {"io.kubernetes.pod.uid": None}}]},
         'containers[0]: labels {"io.kubernetes.pod.uid": null} is not a mapping of strings'),
        ({"containers": [{**_SNAPSHOT_CONTAINER, "annotations": {"n": 5}}]},
         'containers[0]: annotations {"n": 5} is not a mapping of strings to strings'),
        ({"containers": [{**_SNAPSHOT_CONTAINER, "created_at": 5}]},
         "containers[0]: invalid container created_at: 5 is not an RFC 3339 time"),
        ({"images": [{"id": "sha256:1", "repo_digests": False}]},
         "images[0]: repo_digests false is not a list of strings"),
        ({"runtime": "x"}, 'runtime "x" is not an object'),
        ({"runtime": {"name": 5}}, "name 5 is not a string"),
        ({"endpoint": ["x"]}, 'endpoint ["x"] is not a string'),
        ({"containers": [{**_SNAPSHOT_CONTAINER, "state": "GONE"}]},
         'containers[0]: state "GONE" is not one of CREATED, RUNNING, EXITED, UNKNOWN'),
        ({"sandboxes": [[]]}, "sandboxes[0] is a list, not an object"),
        ({"images": [7]}, "images[0] is a number, not an object"),
        ({"image_filesystems": "x"}, "'image_filesystems' is a string, not a list"),
        ({"container_filesystems": [True]}, "container_filesystems[0] is a boolean, not an object"),
    ],
)  # fmt: skip
def test_a_snapshot_item_that_does_not_fit_is_named(change: dict[str, Any], message: str) -> None:
    """A damaged snapshot item is bad input naming its list, its index and the value: a
    field of the wrong JSON type is not coerced (`"false"` is not false, `true` not 1)."""
    doc: dict[str, Any] = {"kind": SNAPSHOT_KIND, "captured_at": "2026-01-01T00:00:00Z",
                           "containers": [], "sandboxes": [], "images": [], **change}  # fmt: skip
    with pytest.raises(BadInput) as exc:
        NodeSnapshot.from_dict(doc, source="snapshot s.json")
    assert str(exc.value).startswith("snapshot s.json: ") and message in str(exc.value)
    assert "\n" not in str(exc.value)


def test_a_yaml_snapshot_may_write_times_unquoted() -> None:
    """YAML reads `2026-01-01T00:00:00Z` unquoted as a timestamp: taken as that time (one
    without a zone is not a time kubegc can place)."""
    import yaml

    doc = yaml.safe_load(
        "kind: NodeSnapshot\ncaptured_at: 2026-01-01T00:00:00Z\ncontainers:\n"
        "- {id: c1, state: EXITED, created_at: 2025-12-31T23:00:00.5Z}\nsandboxes: []\nimages: []\n"
    )
    snap = NodeSnapshot.from_dict(doc)
    assert (
        snap.captured_at
        == NodeSnapshot.from_dict({**doc, "captured_at": "2026-01-01T00:00:00Z"}).captured_at
    )
    assert snap.containers[0].created_at == snap.captured_at - 3_599_500_000_000
    naive = yaml.safe_load("t: 2026-01-01 00:00:00")
    with pytest.raises(BadInput, match="is not an RFC 3339 time"):
        NodeSnapshot.from_dict({**doc, "captured_at": naive["t"]})

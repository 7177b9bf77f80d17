"""Label selectors (`kubegc_cli.core.selector`): kubectl's grammar, Kubernetes' key and value rules,
matching, the canonical text; and `Scope` matching pods by the labels on their sandboxes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.model import LABEL_POD_NAME, LABEL_POD_NAMESPACE, LABEL_POD_UID, Sandbox
from kubegc_cli.core.model import SandboxState as State
from kubegc_cli.core.plan import Result
from kubegc_cli.core.pods import NO_POD_SOURCE
from kubegc_cli.core.selector import Requirement, Selector, parse
from kubegc_cli.policy.containers import ContainerGCPolicy, plan_containers
from kubegc_cli.policy.sandboxes import plan_sandboxes
from kubegc_cli.policy.scope import Scope
from tests.unit.factories import NOW, S, ctr

# ---- parsing: text → canonical text ----

PARSED = [
    ("app=web", "app=web"),
    ("app==web", "app=web"),
    ("app!=web", "app!=web"),
    ("app", "app"),
    ("!app", "!app"),
    ("  app  =  web  ", "app=web"),
    ("tier in (b, a, b)", "tier in (a,b)"),
    ("tier notin (a)", "tier notin (a)"),
    ("tier in(a)", "tier in (a)"),
    ("app=", "app="),
    ("app!=", "app!="),
    ("a in (,x)", "a in (,x)"),
    ("a in (,)", "a in (,)"),
    ("z=1,a=2,m", "a=2,m,z=1"),
    ("b=1,a=2,b!=3", "a=2,b=1,b!=3"),
    ("example.com/app=web", "example.com/app=web"),
    ("a.b-c.d/x_y.z-Q=V_1.-a", "a.b-c.d/x_y.z-Q=V_1.-a"),
    ("k" * 63 + "=" + "v" * 63, "k" * 63 + "=" + "v" * 63),
    (("p" * 63 + ".") * 3 + "p" * 61 + "/n", ("p" * 63 + ".") * 3 + "p" * 61 + "/n"),
    ("app in (web),!canary,tier notin (db,cache)", "app in (web),!canary,tier notin (cache,db)"),
    ("x\tin\n(a)", "x in (a)"),
]


@pytest.mark.parametrize(("text", "canonical"), PARSED)
def test_parse_gives_the_canonical_text(text: str, canonical: str) -> None:
    sel = parse(text)
    assert str(sel) == canonical
    assert parse(canonical) == sel  # the canonical text means the same


BAD = [
    ("", "empty selector"),
    ("   ", "empty selector"),
    ("a in (b", "expected ',' or ')' in a value list, at the end"),
    ("a in b", "expected '(' after in/notin, found 'b'"),
    ("a in ()", "at least one value"),
    ("a notin ()", "at least one value"),
    ("a in (b c)", "found 'c'"),
    ("a=b,", "expected a label key, at the end"),
    (",a=b", "expected a label key, found ','"),
    ("a=b,,c", "expected a label key, found ','"),
    ("a b", "found 'b'"),
    ("a=b=c", "found '='"),
    ("a=(b)", "expected a label value, found '('"),
    ("!a=b", "after !a, found '='"),
    ("!", "expected a label key, at the end"),
    ("!!a", "found '!'"),
    ("=b", "found '='"),
    ("in=x", "found 'in'"),
    ("a>1", "operator '>' is not supported"),
    ("a<1", "operator '<' is not supported"),
    ("-a=b", "key '-a'"),
    ("a-=b", "key 'a-'"),
    ("a=-b", "value '-b'"),
    ("a=b.", "value 'b.'"),
    ("k" * 64 + "=v", "longer than 63"),
    ("k=" + "v" * 64, "longer than 63"),
    ("p" * 254 + "/n=v", "prefix longer than 253"),
    ("Example.com/a=b", "not a DNS subdomain"),
    ("ex_ample.com/a=b", "not a DNS subdomain"),
    ("a..b/c=d", "not a DNS subdomain"),
    ("/a=b", "prefix before '/' is empty"),
    ("a/=b", "empty name"),
    ("a/b/c=d", "more than one '/'"),
    ("ä=b", "key 'ä'"),
    ("a=é", "value 'é'"),
    ("a=b\x00", "value 'b\\x00'"),
    ("a in (b,(c))", "found '('"),
]


@pytest.mark.parametrize(("text", "why"), BAD)
def test_bad_text_is_one_line_naming_it(text: str, why: str) -> None:
    with pytest.raises(BadInput) as exc:
        parse(text)
    message = str(exc.value)
    assert message.startswith(f"invalid label selector {text!r}: ")
    assert why in message and "\n" not in message
    assert exc.value.exit_code == 2


# ---- matching ----

LABELS: dict[str, dict[str, str]] = {
    "web": {"app": "web", "tier": "front"},
    "db": {"app": "db", "tier": "back", "canary": ""},
    "bare": {},
}

MATCHES = [
    ("app=web", {"web"}),
    ("app==web", {"web"}),
    ("app!=web", {"db", "bare"}),  # no label: != holds, as on Kubernetes
    ("app", {"web", "db"}),
    ("!app", {"bare"}),
    ("canary", {"db"}),  # an empty value still is a label
    ("canary=", {"db"}),
    ("canary!=", {"web", "bare"}),
    ("!canary", {"web", "bare"}),
    ("tier in (front,back)", {"web", "db"}),
    ("tier in (front)", {"web"}),
    ("tier notin (front)", {"db", "bare"}),  # no label: notin holds
    ("app=web,tier=front", {"web"}),
    ("app=web,tier=back", set()),
    ("app,!canary", {"web"}),
    ("app in (web,db),tier notin (back)", {"web"}),
    ("missing=", set()),  # = needs the label, even for the empty value
    ("missing in (,x)", set()),
]


@pytest.mark.parametrize(("text", "matching"), MATCHES)
def test_matching_as_kubernetes_does(text: str, matching: set[str]) -> None:
    sel = parse(text)
    assert {name for name, labels in LABELS.items() if sel.matches(labels)} == matching


def test_selector_is_immutable_and_hashable() -> None:
    sel = parse("b=1,a in (x,y)")
    assert sel.requirements == (
        Requirement("a", "in", ("x", "y")),
        Requirement("b", "=", ("1",)),
    )
    with pytest.raises(AttributeError):
        sel.requirements = ()  # type: ignore[misc]
    assert hash(sel) == hash(parse("a in (y,x),b==1"))


# ---- properties ----

NAME = st.from_regex(r"\A[A-Za-z0-9]([-A-Za-z0-9_.]{0,8}[A-Za-z0-9])?\Z")
KEY = st.one_of(NAME, st.tuples(st.from_regex(r"\A[a-z0-9]{1,5}(\.[a-z0-9]{1,5}){0,2}\Z"), NAME)
                .map("/".join))  # fmt: skip
VALUE = st.one_of(st.just(""), NAME)


@st.composite
def requirements(draw: st.DrawFn) -> str:
    key = draw(KEY)
    kind = draw(st.sampled_from(["=", "==", "!=", "in", "notin", "exists", "!"]))
    if kind == "exists":
        return key
    if kind == "!":
        return f"!{key}"
    if kind in ("in", "notin"):
        values = draw(st.lists(VALUE, min_size=1, max_size=3))
        joined = ", ".join(values) if values != [""] else ","  # `()` is no value at all
        return f"{key} {kind} ({joined})"
    return f"{key}{kind}{draw(VALUE)}"


SELECTORS = st.lists(requirements(), min_size=1, max_size=4).map(",".join)
LABEL_SETS = st.dictionaries(st.sampled_from(["a", "b", "x.io/a", "app"]), VALUE, max_size=4)


@settings(max_examples=300, deadline=None)
@given(text=SELECTORS, labels=LABEL_SETS)
def test_valid_selectors_round_trip_and_match_the_same(text: str, labels: dict[str, str]) -> None:
    sel = parse(text)
    again = parse(str(sel))
    assert again == sel and str(again) == str(sel)
    assert again.matches(labels) == sel.matches(labels)
    assert sel.matches(labels) == all(r.matches(labels) for r in sel.requirements)


NASTY_PIECES = ["a", "b", "=", "==", "!=", "!", ",", "(", ")", " ", "in", "notin", "/", ".", "-",
                "_", "<", ">", "é", "\x00", "\n", "x" * 70, "p" * 254 + "/"]  # fmt: skip


@settings(max_examples=1000, deadline=None)
@given(
    text=st.one_of(
        st.text(max_size=40),
        st.lists(st.sampled_from(NASTY_PIECES), max_size=12).map("".join),
        SELECTORS.map(lambda t: t[:-1]),
    )
)
def test_any_text_is_a_selector_or_one_line_of_bad_input(text: str) -> None:
    try:
        sel = parse(text)
    except BadInput as exc:
        assert str(exc).startswith(f"invalid label selector {text!r}: ")
        assert "\n" not in str(exc)
        return
    assert isinstance(sel, Selector) and sel.requirements
    assert parse(str(sel)) == sel


# ---- Scope: pods by the labels on their sandboxes ----


def sandbox(uid: str, labels: dict[str, str] | None, *, sid: str = "", age_s: int = 1000,
            state: State = State.NOTREADY, ns: str = "default") -> Sandbox:  # fmt: skip
    """A sandbox of pod `uid`; `labels` None: not made by the kubelet (no io.kubernetes.*)."""
    kubelet = {LABEL_POD_UID: uid, LABEL_POD_NAME: f"pod-{uid}", LABEL_POD_NAMESPACE: ns}
    return Sandbox(
        sid or f"sb-{uid}", f"pod-{uid}", ns, uid, 0, state, NOW - age_s * S,
        labels={} if labels is None else {**kubelet, **labels},
    )  # fmt: skip


def containers(*uids: str) -> list[Any]:
    """Three dead attempts of `app` per pod: MaxPerPodContainer 1 removes the two oldest."""
    return [ctr(f"{u}{i}", uid=u, attempt=i, age_s=900 - 100 * i) for u in uids for i in range(3)]


def test_scope_matches_containers_through_their_sandbox() -> None:
    sbs = [
        sandbox("a", {"app": "x"}),
        sandbox("b", {"app": "y"}),
        sandbox("c", None),  # no kubelet labels: its pod's labels are unknown
        # pod d's sandbox is gone
    ]
    scope = Scope(selector=parse("app")).with_sandboxes(sbs)
    plan = plan_containers(containers("a", "b", "c", "d"), ContainerGCPolicy(), NO_POD_SOURCE,
                           NOW, scope)  # fmt: skip
    assert sorted(a.id for a in plan.actions) == ["a0", "a1", "b0", "b1"]
    assert plan.out_of_scope == 4  # c's and d's: planned by the rules, left by the scope
    assert plan.policy["scope"]["selector"] == "app"
    x = Scope(selector=parse("app=x")).with_sandboxes(sbs)
    plan = plan_containers(containers("a", "b", "c", "d"), ContainerGCPolicy(), NO_POD_SOURCE,
                           NOW, x)  # fmt: skip
    assert sorted(a.id for a in plan.actions) == ["a0", "a1"] and plan.out_of_scope == 6
    # the kubelet's own io.kubernetes.pod.* are not pod labels; !app needs a known sandbox
    for text, expect in (("io.kubernetes.pod.uid", []), ("!app", []), ("app!=x", ["b0", "b1"])):
        s = Scope(selector=parse(text)).with_sandboxes(sbs)
        got = plan_containers(containers("a", "b", "c", "d"), ContainerGCPolicy(), NO_POD_SOURCE,
                              NOW, s)  # fmt: skip
        assert sorted(a.id for a in got.actions) == expect, text


def test_a_selector_without_sandboxes_matches_nothing() -> None:
    """A scope never given the runtime's sandboxes selects nothing: narrowing never widens."""
    plan = plan_containers(containers("a"), ContainerGCPolicy(), NO_POD_SOURCE, NOW,
                           Scope(selector=parse("!nothing")))  # fmt: skip
    assert plan.actions == [] and plan.out_of_scope == 2


def test_selector_and_namespace_both_apply() -> None:
    sbs = [sandbox("a", {"app": "x"}), sandbox("b", {"app": "x"}, ns="other")]
    cs = containers("a") + [ctr(f"b{i}", uid="b", ns="other", attempt=i) for i in range(3)]
    scope = Scope(namespaces=frozenset({"default"}), selector=parse("app=x")).with_sandboxes(sbs)
    plan = plan_containers(cs, ContainerGCPolicy(), NO_POD_SOURCE, NOW, scope)
    assert sorted(a.id for a in plan.actions) == ["a0", "a1"] and plan.out_of_scope == 2
    assert scope.to_dict() == {"namespaces": ["default"], "exclude_namespaces": [], "pods": [],
                               "selector": "app=x", "older_than": None}  # fmt: skip


def test_sandboxes_match_by_their_own_labels_and_count_what_is_left() -> None:
    sbs = [
        sandbox("a", {"app": "x"}, sid="a-old", age_s=2000),
        sandbox("a", {"app": "x"}, sid="a-new"),
        sandbox("b", {"app": "y"}, sid="b-old", age_s=2000),
        sandbox("b", {"app": "y"}, sid="b-new"),
        sandbox("c", None, sid="c-old", age_s=2000),
        sandbox("c", None, sid="c-new"),
    ]
    scope = Scope(selector=parse("app in (x)"))
    plan = plan_sandboxes(sbs, [], NO_POD_SOURCE, NOW, scope=scope)
    assert [a.id for a in plan.actions] == ["a-old"]
    assert [(k.id, k.rule) for k in plan.kept] == [("a-new", "newest-of-pod")]
    assert plan.out_of_scope == 2  # b-old and c-old
    assert plan.policy["scope"]["selector"] == "app in (x)"
    assert any("2 removal(s) outside" in n for n in plan.notes)
    whole = plan_sandboxes(sbs, [], NO_POD_SOURCE, NOW)
    assert sorted(a.id for a in whole.actions) == ["a-old", "b-old", "c-old"]
    assert whole.out_of_scope == 0 and all(a.result is Result.PLANNED for a in whole.actions)


def test_pods_known_by_uid_take_the_labels_of_their_newest_sandbox() -> None:
    sbs = [
        sandbox("a", {"app": "old"}, sid="a1", age_s=2000),
        sandbox("a", {"app": "new"}, sid="a2", age_s=10),
    ]
    scope = Scope(selector=parse("app=new")).with_sandboxes(sbs)
    assert scope.selects_pod("default", "pod-a", "a")
    assert not scope.selects_pod("default", "pod-a", "")  # no UID: no labels known
    assert not scope.selects_pod("default", "pod-z", "z")
    assert Scope().with_sandboxes(sbs) == Scope()  # no selector: nothing to bind

"""What it takes to pull an image again: the kubelet's pull records (KEP-2535) as data.

The kubelet (feature KubeletEnsureSecretPulledImages, v1.33+) keeps one `ImagePulledRecord`
per image it pulled, under `<root-dir>/image_manager/pulled/`: for each image name (a pod's
`image` without tag or digest), the credentials it was pulled with — node-wide ones (or none
needed: `nodePodsAccessible`), a pod's pull secrets (`kubernetesSecrets`), or a service
account's token handed to a credential provider (`kubernetesServiceAccounts`). Source:
kubelet `pkg/kubelet/images/pullmanager` and `k8s.io/kubelet/config/v1alpha1`
(`ImagePulledRecord`, `ImagePullCredentials`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: `PullRecord.state`: the kubelet's record of the image was read.
RECORDED = "recorded"
#: The kubelet keeps pull records, but none names this image (pulled before, or not by it).
NO_RECORD = "none"
#: A record is there but kubegc cannot read it (not a regular file, too large, not the JSON
#: the kubelet writes): nothing is concluded from it.
UNREADABLE = "unreadable"
#: The kubelet keeps no pull records on this node (no `image_manager/pulled/`: an older
#: kubelet, or the feature off).
NOT_KEPT = "not-kept"

#: Credential kinds, as `ImagePullCredentials` holds them.
NODE_WIDE = "node-wide"  # nodePodsAccessible: node credentials, or none needed
SECRET = "secret"  # kubernetesSecrets: a pod's imagePullSecrets
SERVICE_ACCOUNT = "service-account"  # kubernetesServiceAccounts: a credential provider's token
KINDS = (NODE_WIDE, SECRET, SERVICE_ACCOUNT)


@dataclass(frozen=True, slots=True)
class PullRecord:
    """The kubelet's record of an image's pulls: `state` (RECORDED, NO_RECORD, UNREADABLE,
    NOT_KEPT); `credentials` the kinds it was pulled with (in `KINDS` order; empty in a record
    that maps no credentials: the kubelet then checks them again at the next use); `why` says
    why an UNREADABLE record was not read."""

    state: str
    credentials: tuple[str, ...] = ()
    why: str = ""


@dataclass(frozen=True, slots=True)
class RepullRisk:
    """What pulling `image` again would take: `digest` whether the runtime lists a repo digest
    (a name a registry serves by content); `registry` the registry its names point at ("" when
    it has no name); `record` the kubelet's pull record (`PullRecord`)."""

    digest: bool
    registry: str
    record: PullRecord

    @property
    def credentials(self) -> str:
        """The credential kinds as one word: `node-wide`, `secret+service-account`; `none`
        for a record that maps none; `-` without a record; `?` for an unreadable one."""
        if self.record.state == UNREADABLE:
            return "?"
        if self.record.state != RECORDED:
            return "-"
        return "+".join(self.record.credentials) or "none"

    @property
    def summary(self) -> str:
        """One cell: `quay.io secret`, `docker.io node-wide`, `docker.io, no pull record`,
        `docker.io` (the kubelet keeps no records), `no digest`..."""
        if not self.digest:
            return "no digest"
        registry = self.registry or "?"
        state = self.record.state
        if state == RECORDED:
            return f"{registry} {self.credentials}"
        if state == NO_RECORD:
            return f"{registry}, no pull record"
        if state == UNREADABLE:
            return f"{registry}, pull record unreadable"
        return registry

    def to_dict(self) -> dict[str, Any]:
        return {
            "digest": self.digest,
            "registry": self.registry,
            "pull_record": self.record.state,
            "credentials": list(self.record.credentials),
            **({"pull_record_error": self.record.why} if self.record.why else {}),
        }

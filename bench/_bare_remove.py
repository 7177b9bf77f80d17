"""The bare contender of ``bench/whole_process.py``, run as a fresh process.

``python bench/_bare_remove.py ENDPOINT CONCURRENCY [status]``: one ``ListContainers`` of the
EXITED containers, then ``RemoveContainer`` for each from a pool of CONCURRENCY threads, nothing
else (no re-check, no log, no output but the count). The floor a whole process removing
containers over CRI can reach from Python: start-up and imports included. With ``status``, a
``ContainerStatus`` before each ``RemoveContainer`` (a running one is left), as ``crictl rm``
does: crictl's own calls, made from Python.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc

from kubegc_cli.node.cri.v1 import api_pb2, api_pb2_grpc


def main(endpoint: str, concurrency: int, status: bool = False) -> int:
    stubs: Any = api_pb2_grpc  # generated, untyped
    channel = grpc.insecure_channel(endpoint, options=[("grpc.enable_http_proxy", 0)])
    runtime = stubs.RuntimeServiceStub(channel)
    exited = api_pb2.ContainerFilter()
    exited.state.state = api_pb2.CONTAINER_EXITED
    listed = runtime.ListContainers(api_pb2.ListContainersRequest(filter=exited), timeout=60)
    ids = [c.id for c in listed.containers]

    def remove(container_id: str) -> bool:
        try:
            if status:
                got = runtime.ContainerStatus(
                    api_pb2.ContainerStatusRequest(container_id=container_id), timeout=60
                )
                if got.status.state == api_pb2.CONTAINER_RUNNING:
                    return False
            runtime.RemoveContainer(
                api_pb2.RemoveContainerRequest(container_id=container_id), timeout=60
            )
        except grpc.RpcError:
            return False
        return True

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        removed = sum(pool.map(remove, ids))
    channel.close()
    print(removed)
    return 0 if removed == len(ids) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), sys.argv[3:] == ["status"]))

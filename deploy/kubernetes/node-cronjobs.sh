#!/usr/bin/env bash
# Render the per-node cleanup CronJob (cronjob-gc-node.yaml) for every node, or for the nodes
# given, to stdout:
#
#   deploy/kubernetes/node-cronjobs.sh | kubectl apply -f -
#   deploy/kubernetes/node-cronjobs.sh node-a node-b > cronjobs.yaml
#
# CronJob names are at most 52 characters: kubegc-gc-<node> (dots as dashes), or for a long
# node name its first 32 characters and a hash of the whole name.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -eq 0 ]; then
    mapfile -t nodes < <(kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
else
    nodes=("$@")
fi
for node in "${nodes[@]}"; do
    [ -n "$node" ] || continue
    short=${node//./-}
    if [ ${#short} -gt 42 ]; then
        short="${short:0:32}-$(printf '%s' "$node" | sha256sum | cut -c1-8)"
    fi
    echo "---"
    sed -e "s/kubegc-gc-NODE_NAME_HERE/kubegc-gc-${short}/" -e "s/NODE_NAME_HERE/${node}/g" \
        "$here/cronjob-gc-node.yaml"
done

#!/usr/bin/env bash
# Starts a local Redis Cluster of three masters (no replicas) on loopback
# ports 7001-7003, for the store's conformance suite:
#
#   .ci/redis-cluster.sh
#   export BRIDGE_TEST_REDIS_CLUSTER=127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003
#
# Nothing is persisted (--save "" --appendonly no); each node keeps its
# nodes.conf in a directory of its own under /tmp. Idempotent: when the
# cluster already answers with cluster_state:ok, it does nothing. It never
# touches any other Redis.
set -euo pipefail

ports=(7001 7002 7003)
base=/tmp/askbridge-redis-cluster

cluster_ok() { redis-cli -h 127.0.0.1 -p "${ports[0]}" cluster info 2>/dev/null | grep -q '^cluster_state:ok'; }
up() { redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null | grep -q PONG; }

if cluster_ok; then
  echo "redis cluster on ${ports[*]} is already up"
  exit 0
fi

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server redis-tools
fi

for p in "${ports[@]}"; do
  if up "$p"; then
    continue
  fi
  # A node that is down starts afresh: a stale nodes.conf would make it
  # believe in a cluster that no longer exists.
  rm -rf "$base/$p"
  mkdir -p "$base/$p"
  redis-server --daemonize yes --bind 127.0.0.1 --port "$p" \
    --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
    --save "" --appendonly no --dir "$base/$p" --logfile "$base/$p/redis.log"
done
for p in "${ports[@]}"; do
  for _ in $(seq 50); do up "$p" && break; sleep 0.1; done
  up "$p" || { echo "redis on port $p did not start; see $base/$p/redis.log" >&2; exit 1; }
done

# Create the cluster unless the nodes already form one that is settling.
known=$(redis-cli -h 127.0.0.1 -p "${ports[0]}" cluster info | sed -n 's/^cluster_known_nodes:\([0-9]*\).*/\1/p')
if [ "${known:-1}" -lt "${#ports[@]}" ]; then
  addrs=()
  for p in "${ports[@]}"; do addrs+=("127.0.0.1:$p"); done
  redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes >/dev/null
fi

for _ in $(seq 100); do cluster_ok && break; sleep 0.1; done
cluster_ok || { echo "redis cluster on ${ports[*]} did not reach cluster_state:ok" >&2; exit 1; }
echo "redis cluster on ${ports[*]} is up"

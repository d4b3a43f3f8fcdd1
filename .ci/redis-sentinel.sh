#!/usr/bin/env bash
# Starts a Redis master on loopback port 7010, one replica of it on 7011 and
# one Sentinel on 7020 that watches it under the name "askbridge", for the
# store's conformance suite through redis.addrs + redis.master_name:
#
#   .ci/redis-sentinel.sh
#   export BRIDGE_TEST_REDIS_SENTINEL=127.0.0.1:7020/askbridge
#
# BRIDGE_TEST_REDIS_SENTINEL is the Sentinels' host:port addresses
# (comma-separated), a slash, and the master's name.
#
# Nothing is persisted (--save "" --appendonly no); each server keeps its
# files in a directory of its own under /tmp/askbridge-redis-sentinel, where
# the Sentinel also rewrites its sentinel.conf. Idempotent: when the Sentinel
# names a master that answers and has the other node as an in-sync replica,
# it does nothing. Either node may be the master (after a failover the
# Sentinel follows the replica); a node that is down is started as the
# Sentinel's master or as a replica of it. It never touches any other Redis.
set -euo pipefail

data=(7010 7011)
sentinel=7020
name=askbridge
base=/tmp/askbridge-redis-sentinel

up() { redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null | grep -q PONG; }
# The master's port, as the Sentinel names it; empty when it does not answer.
named_master() { { redis-cli -h 127.0.0.1 -p "$sentinel" sentinel get-master-addr-by-name "$name" 2>/dev/null || true; } | sed -n 2p; }
# A node's role (master or slave); empty when it does not answer.
role() { { redis-cli -h 127.0.0.1 -p "$1" role 2>/dev/null || true; } | head -1; }
other() { if [ "$1" = "${data[0]}" ]; then echo "${data[1]}"; else echo "${data[0]}"; fi; }
# The setup is healthy when the Sentinel's master answers as master and
# the other node replicates it with its link up.
healthy() {
  local m r
  m=$(named_master)
  [ -n "$m" ] && [ "$(role "$m")" = master ] || return 1
  r=$(other "$m")
  redis-cli -h 127.0.0.1 -p "$r" info replication 2>/dev/null | tr -d '\r' |
    grep -qx "master_port:$m" &&
    redis-cli -h 127.0.0.1 -p "$r" info replication 2>/dev/null | tr -d '\r' |
    grep -qx 'master_link_status:up'
}

if healthy; then
  echo "redis sentinel on $sentinel (master $name on $(named_master)) is already up"
  exit 0
fi

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server redis-tools
fi

# Which node is the master: the Sentinel's, when it answers; else a node
# that is up as master; else the first.
master=$(named_master)
if [ -z "$master" ]; then
  master=${data[0]}
  for p in "${data[@]}"; do
    if [ "$(role "$p")" = master ]; then master=$p; break; fi
  done
fi

for p in "$master" "$(other "$master")"; do
  if up "$p"; then
    continue
  fi
  rm -rf "${base:?}/$p"
  mkdir -p "$base/$p"
  args=()
  [ "$p" = "$master" ] || args=(--replicaof 127.0.0.1 "$master")
  redis-server --daemonize yes --bind 127.0.0.1 --port "$p" "${args[@]}" \
    --save "" --appendonly no --repl-diskless-sync-delay 0 \
    --dir "$base/$p" --logfile "$base/$p/redis.log" \
    --pidfile "$base/$p/redis.pid"
  for _ in $(seq 50); do up "$p" && break; sleep 0.1; done
  up "$p" || { echo "redis on port $p did not start; see $base/$p/redis.log" >&2; exit 1; }
done

if ! up "$sentinel"; then
  # A Sentinel that is down starts afresh, watching the master found above:
  # a stale sentinel.conf may name a master that is gone.
  rm -rf "${base:?}/$sentinel"
  mkdir -p "$base/$sentinel"
  cat >"$base/$sentinel/sentinel.conf" <<EOF
bind 127.0.0.1
port $sentinel
daemonize yes
dir $base/$sentinel
logfile $base/$sentinel/sentinel.log
pidfile $base/$sentinel/sentinel.pid
sentinel monitor $name 127.0.0.1 $master 1
sentinel down-after-milliseconds $name 5000
sentinel failover-timeout $name 10000
sentinel parallel-syncs $name 1
EOF
  redis-server "$base/$sentinel/sentinel.conf" --sentinel
  for _ in $(seq 50); do [ -n "$(named_master)" ] && break; sleep 0.1; done
  [ -n "$(named_master)" ] || { echo "redis sentinel on port $sentinel did not start; see $base/$sentinel/sentinel.log" >&2; exit 1; }
fi

for _ in $(seq 100); do healthy && break; sleep 0.1; done
healthy || { echo "redis sentinel on $sentinel: master $name on $(named_master) has no in-sync replica" >&2; exit 1; }
echo "redis sentinel on $sentinel (master $name on $(named_master)) is up"

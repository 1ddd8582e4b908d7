#!/usr/bin/env bash
# Runs inside a fresh network namespace (the caller uses `unshare -n`): starts real coturn with
# Duet's TURN secret, then checks the credentials Duet issued.
#   env: TURN_SECRET, TURN_USER, TURN_PASS, EXPIRES_AT (unix seconds)
# Prints one line per check: "good: <result>", "tampered: <result>", "expired: <result>".
set -u
here=$(cd "$(dirname "$0")" && pwd)
ip link set lo up
log=$(mktemp)
turnserver -n --listening-ip=127.0.0.1 --relay-ip=127.0.0.1 --listening-port=3478 \
  --use-auth-secret --static-auth-secret="$TURN_SECRET" --realm=duet.test --allow-loopback-peers \
  --no-tls --no-dtls --no-cli --log-file=stdout --simple-log >"$log" 2>&1 &
turn=$!
trap 'kill -9 $turn 2>/dev/null; rm -f "$log" "$log.uclient"' EXIT
for _ in $(seq 1 100); do ss -lun | grep -q ':3478 ' && break; sleep 0.05; done

echo "good-allocate: $(python3 "$here/stun_allocate.py" 127.0.0.1 3478 "$TURN_USER" "$TURN_PASS")"
swap=x; [ "${TURN_PASS:0:1}" = x ] && swap=y
echo "tampered: $(python3 "$here/stun_allocate.py" 127.0.0.1 3478 "$TURN_USER" "$swap${TURN_PASS#?}")"
# A real relay allocation and a data round trip through it.
if timeout 15 turnutils_uclient -y -n 2 -m 1 -l 100 -u "$TURN_USER" -w "$TURN_PASS" 127.0.0.1 >"$log.uclient" 2>&1 \
  && grep -q "tot_recv_msgs=[1-9]" "$log.uclient"; then
  echo "good: relayed"
else
  echo "good: failed"; cat "$log.uclient" >&2
fi
while [ "$(date +%s)" -le "$EXPIRES_AT" ]; do sleep 0.2; done
echo "expired: $(python3 "$here/stun_allocate.py" 127.0.0.1 3478 "$TURN_USER" "$TURN_PASS")"

#!/bin/sh
# Ask a human through dshq with nothing but POSIX sh: write the request into the inbox
# atomically, then wait for the outcome file.
#
#   DSHQ_ROOT=/path/to/root ask.sh ID < request.json
#
# The request JSON should have no "id" (the file name gives it) or the same ID.
# Prints the outcome document; exits 0 when answered, 1 when it ended without an answer,
# 2 on usage errors, 3 on timeout (ASK_TIMEOUT seconds, default 3600).
set -eu

id=${1:?usage: ask.sh ID < request.json}
root=${DSHQ_ROOT:?set DSHQ_ROOT to the dshq state root}
timeout=${ASK_TIMEOUT:-3600}

case $id in
  [A-Za-z0-9]*) ;;
  *) echo "ask.sh: bad id: $id" >&2; exit 2 ;;
esac

tmp="$root/inbox/tmp/$id.json"
cat > "$tmp"
# fsync where the platform's sync(1) takes a file; otherwise a whole-system sync.
sync "$tmp" 2>/dev/null || sync
mv "$tmp" "$root/inbox/new/$id.json"

outcome="$root/outbox/$id.json"
waited=0
while [ ! -f "$outcome" ]; do
  if [ "$waited" -ge "$timeout" ]; then
    echo "ask.sh: no outcome for $id after ${timeout}s" >&2
    exit 3
  fi
  sleep 1  # POSIX sleep takes whole seconds
  waited=$((waited + 1))
done

cat "$outcome"
if grep -q '"status": "answered"' "$outcome"; then
  exit 0
fi
exit 1

#!/bin/sh
# Ask a human through dshq with POSIX sh, jq and sha256sum: write the request into the
# inbox atomically, then wait for the outcome of *this* request.
#
#   DSHQ_ROOT=/path/to/root ask.sh ID < request.json
#
# The request JSON should have no "id" (ID is set) or the same ID.
# Prints the outcome document; exits 0 when answered, 1 when it ended without an answer or
# was not accepted (rejected; DUPLICATE_ID: the id belongs to another request), 2 on usage
# errors, 3 on timeout (ASK_TIMEOUT seconds, default 3600).
#
# An id can be reused with other content: dshq rejects that (DUPLICATE_ID) and the earlier
# request's outcome stays in outbox/ID.json. So the outcome counts only when its
# requestDigest is the digest of what this script asked (see docs/protocol.md, section 8),
# and the rejection of the file it dropped (rejected/NAME.error.json) is reported as such.
#
# Limits of computing the digest with jq: the request is passed through jq and written as
# jq prints it, so jq's number handling applies (jq 1.6 turns integers beyond 2^53 into
# doubles: 100000000000000000001 becomes 1e+20); and a string holding U+007F (DEL), which
# jq escapes and dshq does not, gives another digest: this script then never sees its
# outcome and times out (it never reports another request's answer).
set -eu

id=${1:?usage: ask.sh ID < request.json}
root=${DSHQ_ROOT:?set DSHQ_ROOT to the dshq state root}
timeout=${ASK_TIMEOUT:-3600}

case $id in
  [A-Za-z0-9]*) ;;
  *) echo "ask.sh: bad id: $id" >&2; exit 2 ;;
esac

sha256() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum | cut -d' ' -f1
  else shasum -a 256 | cut -d' ' -f1
  fi
}

# The request with its id set (the file name will not give it).
if ! req=$(jq -c --arg id "$id" '
    if type != "object" then error("the request must be a JSON object") else . end
    | if has("id") and .id != $id then error("the request has another id: \(.id)") else . end
    | .id = $id'); then
  echo "ask.sh: the request is not usable JSON" >&2
  exit 2
fi

# The canonical form: no id, multi_select spelled multiSelect, null fields left out (not
# inside meta), keys sorted, no whitespace, no trailing newline.
digest=sha256:$(printf '%s' "$req" | jq -jcS '
  def nonull: with_entries(select(.value != null));
  del(.id) | nonull
  | if (.agent | type) == "object" then .agent |= nonull else . end
  | if (.questions | type) == "array" then .questions |= map(
      if type == "object" then
        nonull
        | if has("multi_select") and (has("multiSelect") | not)
          then .multiSelect = .multi_select | del(.multi_select) else . end
        | if (.options | type) == "array"
          then .options |= map(if type == "object" then nonull else . end) else . end
        | if (.intent | type) == "object" then .intent |= nonull else . end
      else . end) else . end' | sha256)

# A file name of our own, so rejected/NAME.error.json can only be about this file.
name="$id.$$-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
tmp="$root/inbox/tmp/$name.json"
printf '%s\n' "$req" > "$tmp"
# fsync where the platform's sync(1) takes a file; otherwise a whole-system sync.
sync "$tmp" 2>/dev/null || sync
mv "$tmp" "$root/inbox/new/$name.json"

outcome="$root/outbox/$id.json"
rejected="$root/rejected/$name.error.json"
waited=0
while :; do
  # Ours only when it has our digest and is not a rejection (an earlier attempt with the
  # same content, rejected NO_PROVIDER say, left one with our digest; our own file's
  # rejection shows as $rejected). Accepted requests end answered, ASK_CANCELLED,
  # ASK_ABORTED or ASK_EXPIRED.
  if [ -f "$outcome" ] && [ "$(jq -r --arg d "$digest" '
        if .requestDigest == $d and (.status != "error"
          or .error.code == "ASK_CANCELLED" or .error.code == "ASK_ABORTED"
          or .error.code == "ASK_EXPIRED")
        then "ours" else empty end' "$outcome" 2>/dev/null)" = ours ]; then
    cat "$outcome"
    if [ "$(jq -r .status "$outcome")" = answered ]; then
      exit 0
    fi
    jq -r '"ended without an answer: \(.error.code): \(.error.message)"' "$outcome" >&2
    exit 1
  fi
  if [ -f "$rejected" ]; then
    cat "$rejected"
    jq -r '"not accepted: \(.code): \(.message)"' "$rejected" >&2
    if [ -f "$outcome" ]; then
      echo "outbox/$id.json answers another request with this id (not this one's outcome)" >&2
    fi
    exit 1
  fi
  # No outcome, or one that answers another request (an earlier attempt's, replaced once
  # ours is accepted): keep waiting.
  if [ "$waited" -ge "$timeout" ]; then
    echo "ask.sh: no outcome for $id after ${timeout}s" >&2
    exit 3
  fi
  sleep 1  # POSIX sleep takes whole seconds
  waited=$((waited + 1))
done

#!/bin/sh
# Record docs/screens/follow.md: `dshq answer --follow` over a queue of 50 requests from
# 10 agents, as a series of screens captured with `tmux capture-pane` (100x30, no colour).
# Run from the repository root after `cargo build`: sh docs/screens/record-follow.sh
set -eu
DSHQ=${DSHQ:-$(pwd)/target/debug/dshq}
OUT=${OUT:-docs/screens/follow.md}
root=$(mktemp -d)
trap 'tmux kill-session -t dshq-rec 2>/dev/null || true; rm -rf "$root"' EXIT
export DSHQ_ROOT="$root" USER=reviewer NO_COLOR=1 TERM=xterm-256color
unset DSHQ_LEASE EDITOR VISUAL || true

topics="storage auth search billing deploy cache queue logging metrics docs"
a=0
for topic in $topics; do
    inst=$("$DSHQ" agent enter --id "agent-$topic")
    for k in 1 2 3 4 5; do
        timeout=""
        # A few carry deadlines: the walk takes those first.
        if [ $((a * 5 + k)) -eq 12 ] || [ $((a * 5 + k)) -eq 37 ]; then timeout=', "timeout": "2h"'; fi
        cat >"$root/q.json" <<JSON
{"id": "$topic-$k", "agent": {"id": "agent-$topic", "instance": "$inst"}$timeout,
 "questions": [{"id": "q", "header": "$topic", "question": "Step $k of the $topic work: which way?",
   "options": [{"label": "Keep it simple", "description": "the smallest change that works"},
               {"label": "Do it properly", "description": "refactor first"},
               {"label": "Not now"}]}],
 "meta": {"task": "$topic refactor, step $k", "pr": "https://git.example.com/shop/pull/$((100 + a * 5 + k))",
          "notes": "The agent ran the $topic test suite (412 passed) and needs a direction before editing more files."}}
JSON
        "$DSHQ" ask "$root/q.json" >/dev/null 2>&1
    done
    a=$((a + 1))
done

# A short --idle-release (5s) so the recording can show the lease given up and taken back.
tmux new-session -d -s dshq-rec -x 100 -y 30 "$DSHQ answer --follow --idle-release 5s; sleep 30"

TMUX_SESSION=dshq-rec
. "$(dirname "$0")/capture.sh"

cat >"$OUT" <<'MD'
# `dshq answer --follow` over 50 requests from 10 agents

Captured by `docs/screens/record-follow.sh` (tmux `capture-pane`, 100x30, no colour): ten
agents asked five questions each; two carry a deadline, so they come first. The session
runs with `--idle-release 5s` (default 5m) to show an idle screen giving its lease up at
the end. Each screen below is what the reviewer saw at that moment.
MD

wait_for "Your answer"
shot "Start: the first request with a deadline, 1 of 50"
keys 2
wait_for "(y/N)"
shot "Number key 2 picks an option; nothing is sent before y"
keys y Enter
wait_for "2 of 50"
wait_for "Your answer"
keys i
wait_for "this agent's last questions"
shot "i: the asking agent's context (meta whole, links, lineage, its last questions)"
keys q
wait_for "Your answer"
keys 1
wait_for "(y/N)"
keys y Enter
n=3
while [ $n -le 50 ]; do
    wait_for "$n of 50"
    wait_for "Your answer"
    if [ $n -eq 25 ]; then shot "Halfway: 25 of 50"; fi
    keys 1
    wait_for "(y/N)"
    keys y Enter
    n=$((n + 1))
done
wait_for "waiting for new requests"
shot "The queue is empty: the screen waits instead of ending"
sed -e 's/"docs-5"/"docs-6"/' -e 's/Step 5 of/Step 6 of/' -e 's/step 5"/step 6"/' "$root/q.json" >"$root/late.json"
"$DSHQ" ask "$root/late.json" >/dev/null 2>&1
wait_for "51 of 51"
wait_for "Your answer"
shot "A new request arrives: the bell rings and it is shown, 51 of 51"
keys 1
wait_for "(y/N)"
keys y Enter
wait_for "lease released after 5s without a key"
shot "Nobody at the screen: after --idle-release the lease is released for other reviewers"
sed -e 's/"docs-5"/"docs-7"/' -e 's/Step 5 of/Step 7 of/' -e 's/step 5"/step 7"/' "$root/q.json" >"$root/late2.json"
"$DSHQ" ask "$root/late2.json" >/dev/null 2>&1
wait_for "1 new request waiting"
shot "A request arrives while the lease is released: the bell, and nothing is claimed"
keys x
wait_for "52 of 52"
wait_for "Your answer"
shot "Any key takes the lease back and the walk goes on, 52 of 52"
keys C-c
wait_for "interrupted"

#!/bin/sh
# Record docs/screens/plan-review.md: a plan review on `dshq answer` at 80 columns (the
# plan's Markdown with a table and a link, the decision list, the whole feedback at the
# confirm step), captured with `tmux capture-pane` (80x50, no colour).
# Run from the repository root after `cargo build`: sh docs/screens/record-plan.sh
set -eu
DSHQ=${DSHQ:-$(pwd)/target/debug/dshq}
OUT=${OUT:-docs/screens/plan-review.md}
root=$(mktemp -d)
sock="$root/tmux.sock"
trap 'tmux -S "$sock" kill-server 2>/dev/null || true; rm -rf "$root"' EXIT
export DSHQ_ROOT="$root" USER=reviewer NO_COLOR=1 TERM=xterm-256color
unset DSHQ_LEASE EDITOR VISUAL || true

cat >"$root/p.json" <<'JSON'
{"id": "orders-plan", "timeout": "2h",
 "meta": {"task": "orders migration", "pr": "https://git.example.com/shop/pull/112"},
 "questions": [{"id": "plan", "header": "Plan review", "question": "Approve the migration plan for the orders table?",
   "detail": "# Migrate the orders table\n\n1. Add `orders_v2` beside `orders`.\n2. Backfill in batches of **10k** rows.\n3. Switch reads, then writes.\n\n| step | risk | rollback |\n|---|---|---|\n| backfill | load on the primary | stop the job |\n| switch reads | stale rows for a minute | flip the flag back |\n\nSee [the runbook](https://wiki.example.com/runbooks/orders-v2) before step 3.\n",
   "options": [{"label": "Revise", "description": "send it back"}, {"label": "Ship it"}],
   "intent": {"kind": "plan-review", "approve": "Ship it"}}]}
JSON
"$DSHQ" ask "$root/p.json" >/dev/null 2>&1

tmux -S "$sock" -f /dev/null new-session -d -s rec -x 80 -y 50 "$DSHQ answer orders-plan; sleep 30"

TMUX_SESSION=rec
TMUX_SOCKET="$root/tmux.sock"
. "$(dirname "$0")/capture.sh"

cat >"$OUT" <<'MD'
# A plan review on the terminal, 80 columns

Captured by `docs/screens/record-plan.sh` (tmux `capture-pane`, 80x50, no colour). The
plan is the asker's Markdown, rendered by the same front end as the web page: its table
drawn to fit, its link shown with its target. Every line is broken at words by dshq, so
the terminal never cuts one. The choices are the asker's options in their order, then
"Decline with feedback", where the cursor starts (never on the approval).
MD

wait_for "Esc: more]"
shot "The plan and the decision; the cursor starts on Decline with feedback"
keys Enter
wait_for "Feedback for the author"
keys -l "Split the backfill into two jobs, one per shard, so that each can be stopped and resumed alone; and keep the old table until the reads have moved."
keys Enter
wait_for "(y/N)"
shot "Before anything is sent, the whole feedback"
keys y Enter
wait_for "answered by reviewer"

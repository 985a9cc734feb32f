#!/bin/sh
# A dshq --on-question hook: a desktop notification for each new question.
#
#   dshq daemon --on-question /path/to/contrib/hooks/notify-desktop.sh
#
# The daemon runs this once per newly accepted request, with the request document (the
# same JSON as `dshq --json show ID`) on stdin and DSHQ_REQUEST_ID / DSHQ_CONTEXT in the
# environment. Needs notify-send (libnotify) and a session bus: run the daemon in your
# desktop session (e.g. a systemd --user unit), not as a system service. With jq the
# notification shows the questions; without it, only the id.
#
# The request's text is only ever read from stdin and passed to notify-send as one
# argument; it is never evaluated by the shell.
set -eu

id="${DSHQ_REQUEST_ID:?this script is run by dshq daemon --on-question}"
context="${DSHQ_CONTEXT:-default}"

if command -v jq >/dev/null 2>&1; then
    # Notification servers read the body as simple markup: escape it.
    body=$(jq -r '[.questions[] | ((if .header then "[" + .header + "] " else "" end) + .question)]
                  | join("\n") | @html' | head -c 600)
else
    cat >/dev/null
    body="Answer it with: dshq answer $id"
fi

exec notify-send --app-name=dshq --icon=dialog-question \
    "dshq: a question is waiting ($context · $id)" "$body"

#!/bin/sh
# A dshq --on-question hook: POST each new request to a webhook with curl.
#
#   DSHQ_WEBHOOK_URL=https://example.invalid/hook \
#     dshq daemon --on-question /path/to/contrib/hooks/webhook.sh
#
# The daemon runs this once per newly accepted request, with the request document (the
# same JSON as `dshq --json show ID`) on stdin and DSHQ_REQUEST_ID / DSHQ_CONTEXT in the
# environment. The body is posted as it came, unless DSHQ_WEBHOOK_FORMAT=slack, which
# posts {"text": "..."} (chat webhooks; needs jq).
#
#   DSHQ_WEBHOOK_URL     where to post (required)
#   DSHQ_WEBHOOK_TOKEN   optional bearer token; passed to curl in a config on a file
#                        descriptor, so it never shows in the process list
#   DSHQ_WEBHOOK_FORMAT  raw (default) or slack
#
# A failing post exits non-zero and the daemon logs it; the daemon kills a post that
# outlives --hook-timeout. The request's text is never evaluated by the shell.
set -eu

: "${DSHQ_WEBHOOK_URL:?set DSHQ_WEBHOOK_URL to the URL to post to}"
id="${DSHQ_REQUEST_ID:?this script is run by dshq daemon --on-question}"

auth=""
if [ -n "${DSHQ_WEBHOOK_TOKEN:-}" ]; then
    auth="header = \"Authorization: Bearer $DSHQ_WEBHOOK_TOKEN\""
fi

post() {
    # The URL and the token go in a curl config on fd 3, not on the command line.
    curl --silent --show-error --fail --max-time 20 --retry 2 \
        --header 'Content-Type: application/json' \
        --header "X-Dshq-Request-Id: $id" \
        --data-binary @- --config /dev/fd/3 3<<CONFIG
url = "$DSHQ_WEBHOOK_URL"
$auth
CONFIG
}

case "${DSHQ_WEBHOOK_FORMAT:-raw}" in
    raw)
        post
        ;;
    slack)
        jq -c --arg id "$id" --arg ctx "${DSHQ_CONTEXT:-default}" \
            '{text: ("dshq: question " + $id + " in " + $ctx + "\n"
                     + ([.questions[] | "• " + .question] | join("\n"))
                     + "\nAnswer it with `dshq answer " + $id + "`")}' | post
        ;;
    *)
        echo "webhook.sh: DSHQ_WEBHOOK_FORMAT must be raw or slack" >&2
        exit 2
        ;;
esac

# Shared by the recording scripts (sourced, not run): read a tmux session's screen, wait
# for text on it, type into it, append a screen to $OUT. The caller sets TMUX_SESSION
# and, for a private server, TMUX_SOCKET.
tm() {
    if [ -n "${TMUX_SOCKET:-}" ]; then tmux -S "$TMUX_SOCKET" "$@"; else tmux "$@"; fi
}
screen() { tm capture-pane -p -t "$TMUX_SESSION" | sed -e 's/[[:space:]]*$//' | cat -s; }
wait_for() {
    i=0
    while ! screen | grep -qF -- "$1"; do
        i=$((i + 1))
        if [ $i -gt 300 ]; then
            echo "timed out waiting for: $1" >&2
            screen >&2
            exit 1
        fi
        sleep 0.1
    done
}
keys() { tm send-keys -t "$TMUX_SESSION" "$@"; }
shot() {
    {
        printf '\n### %s\n\n```text\n' "$1"
        screen
        printf '```\n'
    } >>"$OUT"
}

//! Closed sets on the command line are typed: clap lists the values and refuses others as
//! `USAGE` before any command runs (issue 12: typed CLI values).

use crate::helpers::*;

#[test]
fn closed_set_flags_list_their_values_and_refuse_others() {
    let env = Env::new();
    for (cmd, flag, good, bad) in [
        ("list", "--status", "pending", "done"),
        ("history", "--status", "rejected", "done"),
        ("history", "--code", "ASK_CANCELLED", "ASK_CANCELED"),
        ("history", "--decision", "declined", "maybe"),
    ] {
        env.run(&[cmd, flag, good]).ok();
        let r = env.json(&[cmd, flag, bad]);
        assert_eq!(r.code, 2, "{cmd} {flag} {bad}: {r:?}");
        assert_eq!(r.error_code(), "USAGE", "{cmd} {flag} {bad}: {r:?}");
        let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
        assert!(msg.contains(good), "the message lists {good}: {msg}");
    }
    // Every stable code is offered, including the last one declared.
    let help = env.run(&["history", "--help"]).ok().stdout;
    for code in ["BAD_REQUEST", "DAEMON_RUNNING", "IO"] {
        assert!(help.contains(code), "{code} not in --help:\n{help}");
    }
}

//! The one shape of a channel flag's value: `CONTEXT=TARGET`, one per occurrence of the
//! flag (`--webhook ops=http://…`, `--email ops=alice@example.com`, `--slack ops=C0123`),
//! repeated for another context or another target; in the config file, a TOML array of
//! such strings under the flag's key (`webhook = ["ops=http://…", "dev=http://…"]`).
//!
//! Why one rule and no separators: a URL may hold commas, a mail address's display name
//! commas and semicolons, so a separator inside the value means something else on each
//! channel. One occurrence, one context and one target means the same on every channel,
//! and the config file's array is the same list the repeated flag gives. A value in the
//! earlier comma- or semicolon-separated form is refused with the way to write it, never
//! read as one odd target.

/// Split `CONTEXT=TARGET` (the value of `--FLAG`): a valid context id and a non-empty
/// target, with no second `CONTEXT=` joined by `,` or `;`. `example` is a whole value,
/// for the messages.
pub fn split<'a>(
    flag: &str,
    s: &'a str,
    example: &str,
) -> std::result::Result<(String, &'a str), String> {
    let (context, target) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: give CONTEXT=TARGET, such as {example}"))?;
    let context = context.trim();
    if !crate::protocol::check::is_valid_id(context) {
        return Err(format!(
            "{context:?} is not a context id (give CONTEXT=TARGET, such as {example})"
        ));
    }
    let target = target.trim();
    if target.is_empty() {
        return Err(format!("{s:?}: no target after {context}="));
    }
    if joins_another(target) {
        return Err(format!(
            "{s:?}: one CONTEXT=TARGET per --{flag}; repeat --{flag} for another (a TOML \
             array in the config file)"
        ));
    }
    Ok((context.to_string(), target))
}

/// Whether `target` holds `,CONTEXT=` or `;CONTEXT=` (followed, when the target is a URL,
/// by a URL of the same scheme): the earlier form joining several contexts in one value. A
/// URL's own query (`?a=1,b=2`) is not taken for one.
fn joins_another(target: &str) -> bool {
    let scheme = target.split_once("://").map(|(s, _)| format!("{s}://"));
    target
        .split([',', ';'])
        .skip(1)
        .any(|part| match part.split_once('=') {
            Some((c, rest)) if crate::protocol::check::is_valid_id(c.trim()) => {
                scheme.as_deref().is_none_or(|s| rest.trim().starts_with(s))
            }
            _ => false,
        })
}

/// The values of `--FLAG` by context, for a channel with one target per context (a
/// webhook receiver, a Slack channel): a context given twice is refused, never a silent
/// replacement of the first.
pub fn one_per_context<T>(
    flag: &str,
    values: Vec<(String, T)>,
) -> std::result::Result<std::collections::BTreeMap<String, T>, String> {
    let mut by_context = std::collections::BTreeMap::new();
    for (context, target) in values {
        if by_context.contains_key(&context) {
            return Err(format!(
                "--{flag}: context {context:?} is given twice (one per context)"
            ));
        }
        by_context.insert(context, target);
    }
    Ok(by_context)
}

/// The message refusing a target list where one target is taken (`ops=a@x,b@x`).
pub fn one_target(flag: &str, s: &str) -> String {
    format!("{s:?}: one target per --{flag}; repeat --{flag} CONTEXT=TARGET for each")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_context_and_one_target_per_value() {
        assert_eq!(
            split("webhook", "ops=http://h/x?a=1,b=2", "ops=http://h/").unwrap(),
            ("ops".to_string(), "http://h/x?a=1,b=2")
        );
        assert!(split("webhook", "ops", "x")
            .unwrap_err()
            .contains("CONTEXT=TARGET"));
        assert!(split("webhook", "../x=http://h/", "x").is_err());
        assert!(split("webhook", "ops=", "x").is_err());
        for joined in ["a=http://h/1,b=http://h/2", "a=x@y.z;b=y@y.z"] {
            let e = split("webhook", joined, "x").unwrap_err();
            assert!(e.contains("repeat --webhook"), "{e}");
        }
    }
}

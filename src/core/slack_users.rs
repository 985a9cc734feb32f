//! Who a Slack user is in dshq: the config file's `[slack.users]` table, one line per
//! Slack user id (`U0123ABCD = "alice"`), naming the dshq reviewer a press of theirs
//! answers as. A Slack user not named there is refused: being in the Slack channel is
//! not being a reviewer.

use std::collections::BTreeMap;

use toml::de::{DeTable, DeValue};

/// Whether `s` is a Slack user id as Slack writes them (`U` or `W`, then capitals and
/// digits).
pub fn is_user_id(s: &str) -> bool {
    let b = s.as_bytes();
    (3..=32).contains(&b.len())
        && matches!(b[0], b'U' | b'W')
        && b[1..]
            .iter()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
}

/// The `[slack]` table's users: Slack user id → reviewer name (an id: letters, digits,
/// `.`, `_`, `-`). An error is (the offset it is at, the key, why).
pub fn parse_table(t: &DeTable<'_>) -> Result<BTreeMap<String, String>, (usize, String, String)> {
    let mut users = BTreeMap::new();
    for (k, v) in t.iter() {
        let key = format!("slack.{}", k.get_ref());
        let at = k.span().start;
        if k.get_ref() != "users" {
            return Err((
                at,
                key,
                "the [slack] table has one table: [slack.users]".into(),
            ));
        }
        let DeValue::Table(u) = v.get_ref() else {
            return Err((
                at,
                key,
                "give a table: [slack.users] with lines such as U0123ABCD = \"alice\"".into(),
            ));
        };
        for (user, reviewer) in u.iter() {
            let at = user.span().start;
            let key = format!("slack.users.{}", user.get_ref());
            if !is_user_id(user.get_ref()) {
                return Err((
                    at,
                    key,
                    "a Slack user id is U or W and capitals and digits, such as U0123ABCD (the member id in the user's Slack profile)".into(),
                ));
            }
            let DeValue::String(name) = reviewer.get_ref() else {
                return Err((at, key, "give the reviewer's name as a string".into()));
            };
            if !crate::protocol::check::is_valid_id(name) {
                return Err((
                    at,
                    key,
                    format!("{name:?} is not a reviewer name: letters, digits, '.', '_', '-'"),
                ));
            }
            users.insert(user.get_ref().to_string(), name.to_string());
        }
    }
    Ok(users)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<BTreeMap<String, String>, String> {
        let top = DeTable::parse(text).unwrap();
        let t = match top.get_ref().get("slack").unwrap().get_ref() {
            DeValue::Table(t) => t.clone(),
            _ => panic!(),
        };
        parse_table(&t).map_err(|e| e.2)
    }

    #[test]
    fn users_map_slack_ids_to_reviewers() {
        let u = parse("[slack.users]\nU0123ABCD = \"alice\"\nW99 = \"bob\"\n").unwrap();
        assert_eq!(u.get("U0123ABCD").map(String::as_str), Some("alice"));
        assert_eq!(u.len(), 2);
        assert!(parse("[slack.users]\nalice = \"alice\"\n").is_err());
        assert!(parse("[slack.users]\nU0123 = \"web:alice\"\n").is_err());
        assert!(parse("[slack.users]\nU0123 = 3\n").is_err());
        assert!(parse("[slack.people]\nU0123 = \"a\"\n").is_err());
        assert!(is_user_id("U0123ABCD") && !is_user_id("u0123") && !is_user_id("U1"));
    }
}

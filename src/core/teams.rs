//! The Microsoft Teams channel's vocabulary, pure: its settings as the config file's
//! `[teams]` table writes them ([`parse_table`]), what a card's action carries
//! ([`ActionData`]), and the checks of an action against the card dshq sent
//! ([`Misdirected`]). The sending, the Bot Framework's calls and the messaging endpoint are
//! [`crate::channels`]'s.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use toml::de::{DeTable, DeValue};

use crate::protocol::{Answer, AnswerItem, Code};

/// The Bot Framework's OpenID metadata: where the keys that sign its calls are published.
pub const DEFAULT_OPENID_METADATA: &str =
    "https://login.botframework.com/v1/.well-known/openidconfiguration";

/// The Bot Framework's token endpoint (client credentials, for the bot's own calls).
pub const DEFAULT_TOKEN_URL: &str =
    "https://login.microsoftonline.com/botframework.com/oauth2/v2.0/token";

/// The issuer of the Bot Framework's tokens on its calls to a bot.
pub const ISSUER: &str = "https://api.botframework.com";

/// The scope of the bot's own token (its calls to the Bot Connector).
pub const SCOPE: &str = "https://api.botframework.com/.default";

/// The verb of every action dshq puts on a card.
pub const VERB: &str = "dshq-answer";

/// The `[teams]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The bot's Microsoft App ID (the audience of the Bot Framework's tokens).
    pub app_id: String,
    /// The file holding the app's client secret (mode 0600).
    pub app_password_file: PathBuf,
    /// The Bot Connector's service URL the cards are sent to
    /// (`https://smba.trafficmanager.net/teams/`).
    pub service_url: String,
    /// Where the keys of the Bot Framework's tokens are published.
    pub openid_metadata: String,
    /// Where the bot gets its own token.
    pub token_url: String,
    /// The page's base URL as reviewers reach it (for "open on the page"); unset, the
    /// daemon's `--listen` address.
    pub page_url: Option<String>,
    /// Context → the Teams conversation its cards go to (`19:…@thread.tacv2`).
    pub conversations: BTreeMap<String, String>,
    /// How long one delivery's calls may take in all.
    pub timeout: Duration,
}

/// The keys of `[teams]` with what each holds, for the default file and the errors.
pub const KEYS: &[(&str, &str)] = &[
    (
        "app-id",
        "the bot's Microsoft App ID (its Azure Bot resource's)",
    ),
    (
        "app-password-file",
        "a file (mode 0600) holding the app's client secret",
    ),
    (
        "service-url",
        "the Bot Connector's service URL (https://smba.trafficmanager.net/teams/)",
    ),
    (
        "openid-metadata",
        "where the Bot Framework publishes its signing keys (default: the Bot Framework's)",
    ),
    (
        "token-url",
        "where the bot gets its own token (default: the Bot Framework's)",
    ),
    (
        "page-url",
        "the page's URL as reviewers reach it (default: http:// and --listen)",
    ),
    (
        "timeout",
        "how long one delivery's calls may take in all (default \"10s\")",
    ),
    (
        "conversations",
        "a table: context = the Teams conversation id its cards go to",
    ),
];

/// Whether `url` may be used: HTTPS, or plain HTTP to this machine's loopback (a
/// stand-in), so the app's secret and the bot's token never cross a network in the clear.
pub fn check_url(what: &str, url: &str) -> Result<(), String> {
    crate::core::sign_in::check_url(what, url)
}

/// Whether `s` looks like a Teams conversation id: printable, no spaces, at most 512.
pub fn is_conversation_id(s: &str) -> bool {
    !s.is_empty() && s.len() <= 512 && s.chars().all(|c| c.is_ascii_graphic())
}

/// The `[teams]` table `t`: the settings, or (the offset it is at, the key, why not).
pub fn parse_table(t: &DeTable<'_>) -> Result<Settings, (usize, String, String)> {
    let mut s = Settings {
        app_id: String::new(),
        app_password_file: PathBuf::new(),
        service_url: String::new(),
        openid_metadata: DEFAULT_OPENID_METADATA.into(),
        token_url: DEFAULT_TOKEN_URL.into(),
        page_url: None,
        conversations: BTreeMap::new(),
        timeout: Duration::from_secs(10),
    };
    let mut seen = Vec::new();
    for (k, v) in t.iter() {
        let key = k.get_ref().to_string();
        let at = k.span().start;
        let name = format!("teams.{key}");
        let fail = |why: String| (at, name.clone(), why);
        let string = || match v.get_ref() {
            DeValue::String(x) if !x.trim().is_empty() => Ok(x.to_string()),
            _ => Err(fail(format!("{name} is a string"))),
        };
        match key.as_str() {
            "app-id" => s.app_id = string()?,
            "app-password-file" => s.app_password_file = string()?.into(),
            "service-url" => {
                s.service_url = string()?;
                check_url("service-url", &s.service_url).map_err(fail)?;
            }
            "openid-metadata" => {
                s.openid_metadata = string()?;
                check_url("openid-metadata", &s.openid_metadata).map_err(fail)?;
            }
            "token-url" => {
                s.token_url = string()?;
                check_url("token-url", &s.token_url).map_err(fail)?;
            }
            "page-url" => {
                let u = string()?;
                let parsed = url::Url::parse(&u).map_err(|e| fail(format!("{u:?}: {e}")))?;
                if !matches!(parsed.scheme(), "http" | "https") {
                    return Err(fail(format!("{u:?}: give an http:// or https:// URL")));
                }
                s.page_url = Some(u.trim_end_matches('/').to_string());
            }
            "timeout" => {
                s.timeout = humantime::parse_duration(&string()?)
                    .map_err(|e| fail(format!("{name}: {e} (such as \"10s\")")))?
                    .max(Duration::from_millis(100));
            }
            "conversations" => {
                let DeValue::Table(c) = v.get_ref() else {
                    return Err(fail(
                        "give a table: [teams.conversations] with lines such as default = \"19:…@thread.tacv2\"".into(),
                    ));
                };
                for (ctx, conv) in c.iter() {
                    let at = ctx.span().start;
                    let key = format!("teams.conversations.{}", ctx.get_ref());
                    crate::protocol::check::check_id("context", ctx.get_ref())
                        .map_err(|e| (at, key.clone(), e.message))?;
                    let DeValue::String(id) = conv.get_ref() else {
                        return Err((at, key, "give the conversation id as a string".into()));
                    };
                    if !is_conversation_id(id) {
                        return Err((at, key, "a conversation id is printable, without spaces (such as 19:abc@thread.tacv2)".into()));
                    }
                    s.conversations
                        .insert(ctx.get_ref().to_string(), id.to_string());
                }
            }
            _ => {
                let keys: Vec<&str> = KEYS.iter().map(|(k, _)| *k).collect();
                return Err(fail(format!(
                    "unknown key {name:?}: [teams] takes {}",
                    keys.join(", ")
                )));
            }
        }
        seen.push(key);
    }
    for required in [
        "app-id",
        "app-password-file",
        "service-url",
        "conversations",
    ] {
        if !seen.iter().any(|k| k == required) {
            return Err((0, "teams".into(), format!("[teams] needs {required}")));
        }
    }
    Ok(s)
}

/// What a card's action carries (`Action.Execute`'s `data`): the request, the question,
/// the label it picks, and the request's digest when the card was sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionData {
    /// The request id.
    #[serde(rename = "r")]
    pub request: String,
    /// The question id.
    #[serde(rename = "q")]
    pub question: String,
    /// The option's label (what the answer selects).
    #[serde(rename = "l")]
    pub label: String,
    /// The request's digest (`sha256:HEX`) the card showed.
    #[serde(rename = "d")]
    pub digest: String,
}

impl ActionData {
    /// The answer the action gives: the label selected on the question.
    pub fn answer(&self) -> Answer {
        Answer {
            answers: vec![AnswerItem {
                id: self.question.clone(),
                selected: vec![self.label.clone()],
                custom: None,
                edited: None,
            }],
        }
    }
}

/// Why an action may not act on the request it names (each a stable code).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Misdirected {
    /// Not from a card dshq sent for that request (a forged action, or one copied onto
    /// another card): `FORBIDDEN`.
    #[error("this action is not on a card dshq sent for request {0:?}: nothing was recorded")]
    NotItsCard(String),
    /// The card shows another version of the request than the one stored: `FORBIDDEN`.
    #[error("this card shows another version of request {0:?}: nothing was recorded; open it on the page")]
    Changed(String),
    /// The card was sent to a conversation that is not the one of the context the request
    /// is in now (it was escalated): `WRONG_CONTEXT`.
    #[error("request {id:?} moved to context {context:?} (escalated): this card no longer answers it, and nothing was recorded")]
    Moved {
        /// The request.
        id: String,
        /// The context it is in now.
        context: String,
    },
}

impl Misdirected {
    /// The stable code.
    pub fn code(&self) -> Code {
        match self {
            Misdirected::NotItsCard(_) | Misdirected::Changed(_) => Code::Forbidden,
            Misdirected::Moved { .. } => Code::WrongContext,
        }
    }
}

/// Whether an action from card `activity` in `conversation` (both as the Bot Framework
/// names them) with `data` may act on its request: the card is one of `sent` (the
/// request's cards, as `(conversation, activity)`), the request's digest is still the
/// card's, and the card's conversation is `context_conversation`, the one of the context
/// the request is in now.
pub fn check_action<'a>(
    data: &ActionData,
    conversation: &str,
    activity: &str,
    mut sent: impl Iterator<Item = (&'a str, &'a str)>,
    digest_now: Option<&str>,
    context: &str,
    context_conversation: Option<&str>,
) -> Result<(), Misdirected> {
    if !sent.any(|(c, a)| c == conversation && a == activity) {
        return Err(Misdirected::NotItsCard(data.request.clone()));
    }
    if digest_now != Some(data.digest.as_str()) {
        return Err(Misdirected::Changed(data.request.clone()));
    }
    if context_conversation != Some(conversation) {
        return Err(Misdirected::Moved {
            id: data.request.clone(),
            context: context.to_string(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Settings, String> {
        let top = DeTable::parse(text).unwrap();
        let t = match top.get_ref().get("teams").unwrap().get_ref() {
            DeValue::Table(t) => t.clone(),
            _ => panic!(),
        };
        parse_table(&t).map_err(|e| e.2)
    }

    const OK: &str = "[teams]\napp-id = \"a\"\napp-password-file = \"/p\"\nservice-url = \"https://smba.trafficmanager.net/teams/\"\n[teams.conversations]\ndefault = \"19:x@thread.tacv2\"\n";

    #[test]
    fn the_table_parses_with_its_defaults_and_refuses_what_is_wrong() {
        let s = parse(OK).unwrap();
        assert_eq!(s.openid_metadata, DEFAULT_OPENID_METADATA);
        assert_eq!(s.conversations["default"], "19:x@thread.tacv2");
        assert!(parse(&OK.replace("https://smba", "http://smba")).is_err());
        assert!(parse(&OK.replace("app-id = \"a\"\n", "")).is_err());
        assert!(parse(&format!("{OK}nope = 1\n").replace(
            "[teams.conversations]\ndefault = \"19:x@thread.tacv2\"\n",
            ""
        ))
        .is_err());
        assert!(parse(&OK.replace("default = ", "\"../x\" = ")).is_err());
        assert!(parse(&OK.replace("19:x@thread.tacv2", "19 x")).is_err());
    }

    #[test]
    fn an_action_acts_only_from_its_card_on_the_request_as_shown_where_it_is() {
        let data = ActionData {
            request: "r1".into(),
            question: "q".into(),
            label: "Yes".into(),
            digest: "sha256:aa".into(),
        };
        let sent = [("c1", "a1"), ("c2", "a2")];
        let check = |conv: &str, act: &str, digest: &str, ctx_conv: Option<&str>| {
            check_action(
                &data,
                conv,
                act,
                sent.iter().copied(),
                Some(digest),
                "ops",
                ctx_conv,
            )
            .map_err(|e| e.code())
        };
        assert_eq!(check("c1", "a1", "sha256:aa", Some("c1")), Ok(()));
        assert_eq!(
            check("c1", "a2", "sha256:aa", Some("c1")),
            Err(Code::Forbidden)
        );
        assert_eq!(
            check("c1", "a1", "sha256:bb", Some("c1")),
            Err(Code::Forbidden)
        );
        assert_eq!(
            check("c1", "a1", "sha256:aa", Some("c2")),
            Err(Code::WrongContext)
        );
        assert_eq!(
            check("c1", "a1", "sha256:aa", None),
            Err(Code::WrongContext)
        );
    }
}

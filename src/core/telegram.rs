//! The Telegram channel's rules that need no I/O: its settings (the config file's
//! `[telegram]` table), which requests a button press can answer and what each button
//! answers, and what a button carries back (its `callback_data`). Who a Telegram user is:
//! [`super::telegram_users`].
//!
//! Why a button carries only a reference: Telegram bounds `callback_data` at 64 bytes, and
//! anyone who can post to the webhook with its secret could write any value there. So a
//! button carries its delivery (the message dshq recorded when it sent it) and the
//! button's position, nothing else; a press is judged against the recorded message (its
//! chat and message id, the request and its digest then), and the answer is what that
//! position means in the request as it is now ([`choices`]), which the digest proves is
//! the request the message showed.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use toml::de::{DeTable, DeValue};

use crate::protocol::{Answer, AnswerItem, Request};

/// Telegram's Bot API, where the daemon reaches it by default.
pub const DEFAULT_API: &str = "https://api.telegram.org";

/// The table's name in the config file.
pub const TABLE: &str = "telegram";

/// The keys of `[telegram]` besides `[telegram.chats]`, with what each holds, for the
/// default file and the errors.
pub const KEYS: &[(&str, &str)] = &[
    ("bot-token-file", "a file (mode 0600) holding the bot token BotFather gave (default: the root's telegram.token)"),
    ("secret-token-file", "a file (mode 0600) holding the webhook's secret token, the one given to setWebhook as secret_token (default: the root's telegram-secret-token)"),
    ("api-url", "the Bot API's base URL (default https://api.telegram.org; plain http only to loopback)"),
    ("page-url", "the page's URL as reviewers reach it, for the \"Open on the page\" buttons (default: http://ADDR of --listen)"),
    ("timeout", "how long one delivery's Bot API calls may take in all, and one call a press makes (default \"10s\")"),
];

/// The Telegram channel as the config file's `[telegram]` table sets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Context → the chats its requests are sent to (`[telegram.chats]`).
    pub chats: BTreeMap<String, Vec<i64>>,
    /// `bot-token-file`, else the root's `telegram.token`.
    pub bot_token_file: Option<PathBuf>,
    /// `secret-token-file`, else the root's `telegram-secret-token`.
    pub secret_token_file: Option<PathBuf>,
    /// `api-url`, without a trailing `/`.
    pub api_url: String,
    /// `page-url`, without a trailing `/`.
    pub page_url: Option<String>,
    /// `timeout`.
    pub timeout: Duration,
}

/// The `[telegram]` table `t`: the settings, or (the offset it is at, the key, why not).
pub fn parse_table(t: &DeTable<'_>) -> Result<Settings, (usize, String, String)> {
    let mut s = Settings {
        chats: BTreeMap::new(),
        bot_token_file: None,
        secret_token_file: None,
        api_url: DEFAULT_API.to_string(),
        page_url: None,
        timeout: Duration::from_secs(10),
    };
    for (k, v) in t.iter() {
        let key = k.get_ref().to_string();
        let at = k.span().start;
        let name = format!("{TABLE}.{key}");
        let fail = |why: String| (at, name.clone(), why);
        let string = || match v.get_ref() {
            DeValue::String(x) if !x.trim().is_empty() => Ok(x.trim().to_string()),
            _ => Err(fail(format!("{name} is a string"))),
        };
        match key.as_str() {
            "chats" => {
                let DeValue::Table(chats) = v.get_ref() else {
                    return Err(fail(format!(
                        "give a table: [{TABLE}.chats] with lines such as default = -1001234567890"
                    )));
                };
                for (context, ids) in chats.iter() {
                    let at = context.span().start;
                    let key = format!("{TABLE}.chats.{}", context.get_ref());
                    if !crate::protocol::check::is_valid_id(context.get_ref()) {
                        return Err((at, key, "the key is a context name".into()));
                    }
                    let list = chat_ids(ids.get_ref()).map_err(|why| (at, key.clone(), why))?;
                    s.chats.insert(context.get_ref().to_string(), list);
                }
            }
            "bot-token-file" => s.bot_token_file = Some(string()?.into()),
            "secret-token-file" => s.secret_token_file = Some(string()?.into()),
            "api-url" => {
                let u = string()?.trim_end_matches('/').to_string();
                crate::core::sign_in::check_url("api-url", &u).map_err(fail)?;
                s.api_url = u;
            }
            "page-url" => {
                let u = string()?.trim_end_matches('/').to_string();
                check_page_url(&u).map_err(fail)?;
                s.page_url = Some(u);
            }
            "timeout" => {
                let d = humantime::parse_duration(&string()?)
                    .map_err(|e| fail(format!("{name}: {e} (such as \"10s\")")))?;
                if d < Duration::from_millis(100) || d > Duration::from_secs(600) {
                    return Err(fail(format!("{name}: give 100ms to 10m")));
                }
                s.timeout = d;
            }
            _ => {
                let keys: Vec<&str> = KEYS.iter().map(|(k, _)| *k).collect();
                return Err(fail(format!(
                    "unknown key {name:?}: [{TABLE}] takes {}, and the table [{TABLE}.chats]",
                    keys.join(", ")
                )));
            }
        }
    }
    if s.chats.is_empty() {
        return Err((
            0,
            TABLE.to_string(),
            format!(
                "[{TABLE}] needs [{TABLE}.chats]: a context and the chat id its requests go to"
            ),
        ));
    }
    Ok(s)
}

/// A chat id, or a list of them: whole numbers, not 0 (a group's is negative).
fn chat_ids(v: &DeValue<'_>) -> Result<Vec<i64>, String> {
    let one = |v: &DeValue<'_>| match v {
        DeValue::Integer(i) => i
            .as_str()
            .replace('_', "")
            .parse::<i64>()
            .ok()
            .filter(|n| *n != 0),
        _ => None,
    };
    let why =
        || "give a chat id (a whole number, such as -1001234567890) or a list of them".to_string();
    let list = match v {
        DeValue::Array(items) => items
            .iter()
            .map(|i| one(i.get_ref()))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(why)?,
        v => vec![one(v).ok_or_else(why)?],
    };
    if list.is_empty() {
        return Err(why());
    }
    Ok(list)
}

/// The page URL goes into a URL button as it is: an http(s) URL with a host, no spaces.
fn check_page_url(u: &str) -> Result<(), String> {
    let parsed = url::Url::parse(u).map_err(|e| format!("page-url {u:?} is no URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(format!("page-url {u:?}: give an http:// or https:// URL"));
    }
    Ok(())
}

/// What a button's `callback_data` names: the delivery whose message it is on and the
/// button's position among the message's [`choices`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ButtonRef {
    /// The delivery that sent the message (`msg_` and 32 hex digits).
    pub delivery: String,
    /// The button's position.
    pub index: usize,
}

/// The prefix of every `callback_data` dshq writes.
const DATA_PREFIX: &str = "dshq1:";

/// Telegram's bound on `callback_data`, in bytes.
pub const DATA_MAX: usize = 64;

impl ButtonRef {
    /// The button's `callback_data`: `dshq1:DELIVERY:INDEX` (at most 45 bytes).
    pub fn to_data(&self) -> String {
        format!("{DATA_PREFIX}{}:{}", self.delivery, self.index)
    }

    /// Parse a `callback_data`; `None` for anything dshq does not write.
    pub fn parse(data: &str) -> Option<ButtonRef> {
        let rest = data.strip_prefix(DATA_PREFIX)?;
        let (delivery, index) = rest.split_once(':')?;
        let hex = delivery.strip_prefix("msg_")?;
        if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        if index.is_empty() || index.len() > 2 || !index.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some(ButtonRef {
            delivery: delivery.to_string(),
            index: index.parse().ok()?,
        })
    }
}

/// One button of a message: its text and what a press answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The button's text (the option's label, or Approve / Deny).
    pub title: String,
    /// What a press answers.
    pub answer: Answer,
}

/// The most option buttons a message has (more options: the page).
pub const CHOICES_MAX: usize = 20;

/// The buttons of `request`, when one press is a whole answer: a plan review's approve
/// and deny (the push notification's one-tap rule, [`crate::core::push_action::one_taps`]),
/// or one per option of its one single-select question. None for anything else (several
/// questions, pick-any, free text, more than [`CHOICES_MAX`] options): the page answers it.
pub fn choices(request: &Request) -> Vec<Choice> {
    let [q] = request.questions.as_slice() else {
        return Vec::new();
    };
    if q.plan_review_approve().is_some() {
        return crate::core::push_action::one_taps(request)
            .into_iter()
            .map(|t| Choice {
                title: t.title,
                answer: t.answer,
            })
            .collect();
    }
    let options = q.options();
    if q.is_multi() || options.is_empty() || options.len() > CHOICES_MAX {
        return Vec::new();
    }
    options
        .iter()
        .map(|o| Choice {
            title: o.label.clone(),
            answer: Answer {
                answers: vec![AnswerItem {
                    id: q.id.clone(),
                    selected: vec![o.label.clone()],
                    custom: None,
                    edited: None,
                }],
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Result<Settings, String> {
        let top = DeTable::parse(text).unwrap();
        let t = match top.get_ref().get("telegram").unwrap().get_ref() {
            DeValue::Table(t) => t.clone(),
            _ => panic!(),
        };
        parse_table(&t).map_err(|e| e.2)
    }

    #[test]
    fn the_table_reads_chats_files_and_urls() {
        let s = table(
            "[telegram]\nbot-token-file = \"/etc/t\"\napi-url = \"http://127.0.0.1:9/\"\ntimeout = \"2s\"\n[telegram.chats]\ndefault = -1001234567890\nops = [1, -2]\n",
        )
        .unwrap();
        assert_eq!(s.chats["default"], [-1001234567890]);
        assert_eq!(s.chats["ops"], [1, -2]);
        assert_eq!(s.api_url, "http://127.0.0.1:9");
        assert_eq!(s.timeout, Duration::from_secs(2));
        assert!(table("[telegram]\napi-url = \"https://x\"\n")
            .unwrap_err()
            .contains("[telegram.chats]"));
        assert!(table("[telegram.chats]\ndefault = \"@ops\"\n").is_err());
        assert!(table("[telegram.chats]\ndefault = 0\n").is_err());
        assert!(table("[telegram.chats]\ndefault = []\n").is_err());
        assert!(table("[telegram.chats]\n\"../x\" = 1\n").is_err());
        assert!(
            table("[telegram]\napi-url = \"http://api.example\"\n[telegram.chats]\na = 1\n")
                .unwrap_err()
                .contains("https")
        );
        assert!(
            table("[telegram]\ntoken = \"x\"\n[telegram.chats]\na = 1\n")
                .unwrap_err()
                .contains("unknown key")
        );
    }

    #[test]
    fn a_button_carries_its_delivery_and_position_in_64_bytes() {
        let b = ButtonRef {
            delivery: format!("msg_{}", "ab".repeat(16)),
            index: 19,
        };
        let data = b.to_data();
        assert!(data.len() <= DATA_MAX, "{data}");
        assert_eq!(ButtonRef::parse(&data), Some(b));
        for bad in [
            "",
            "dshq1:msg_zz:1",
            "other",
            &format!("dshq1:msg_{}:", "a".repeat(32)),
            &format!("dshq1:msg_{}:123", "a".repeat(32)),
            &format!("dshq1:msg_{}:-1", "a".repeat(32)),
        ] {
            assert_eq!(ButtonRef::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn one_press_answers_a_select_or_a_plan_review_and_nothing_else() {
        let r = |v: serde_json::Value| -> Request { serde_json::from_value(v).unwrap() };
        let pick = r(
            serde_json::json!({"questions": [{"id": "q", "question": "Which?",
            "options": [{"label": "A"}, {"label": "B"}, {"label": "C"}]}]}),
        );
        let c = choices(&pick);
        assert_eq!(c.len(), 3);
        assert_eq!(c[2].answer.answers[0].selected, ["C"]);
        let plan = r(
            serde_json::json!({"questions": [{"id": "p", "question": "Plan?",
            "detail": "x", "options": [{"label": "Go"}, {"label": "Stop"}, {"label": "Later"}],
            "intent": {"kind": "plan-review", "approve": "Go"}}]}),
        );
        let titles: Vec<_> = choices(&plan).into_iter().map(|c| c.title).collect();
        assert_eq!(titles, ["Approve", "Deny"]);
        let free = r(serde_json::json!({"questions": [{"id": "q", "question": "Why?"}]}));
        assert!(choices(&free).is_empty());
        let many = r(
            serde_json::json!({"questions": [{"id": "q", "question": "Which?",
            "multiSelect": true, "options": [{"label": "A"}, {"label": "B"}]}]}),
        );
        assert!(choices(&many).is_empty());
    }
}

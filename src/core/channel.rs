//! The channels a delivery goes out on: a webhook, a mail, a Slack message, a Web Push
//! message, a Telegram message.
//!
//! Why a closed set in the core: a delivery row names its channel, so the outbox holds one
//! row per channel of an event and each row has its own id, attempts and retry state (a
//! mail server that is down does not hold back the webhook, and a webhook receiver that
//! drops duplicates by `webhook-id` never sees a mail's retry). Which events a channel
//! takes is a rule of the channel, written here once and applied when the rows are
//! written ([`crate::store::queue::deliveries`]): a mail goes out when a person is needed
//! (a new request, a reminder, an escalation), not for every step of the trail.

use crate::core::audit::EventKind;

/// A channel a delivery goes out on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Channel {
    /// An HTTP POST signed as Standard Webhooks describes.
    Webhook,
    /// A mail over SMTP, with a signed expiring link to the request on the page.
    Email,
    /// A Slack message with buttons, updated when the request ends.
    Slack,
    /// A Web Push message to each subscribed device of the context's reviewers, with
    /// one-tap actions where the request allows them.
    Push,
    /// A Telegram message with an inline keyboard, edited when the request ends.
    Telegram,
    /// A Microsoft Teams Adaptive Card with actions, updated when the request ends.
    Teams,
}

impl Channel {
    /// Every channel.
    pub const ALL: [Channel; 6] = [
        Channel::Webhook,
        Channel::Email,
        Channel::Slack,
        Channel::Push,
        Channel::Telegram,
        Channel::Teams,
    ];

    /// The name stored in the outbox and shown in `dshq events --deliveries`.
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Webhook => "webhook",
            Channel::Email => "email",
            Channel::Slack => "slack",
            Channel::Push => "push",
            Channel::Telegram => "telegram",
            Channel::Teams => "teams",
        }
    }

    /// The channel named `s`.
    pub fn parse(s: &str) -> Option<Channel> {
        Channel::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// Whether an event of `kind` goes out on this channel.
    pub fn takes(self, kind: EventKind) -> bool {
        use EventKind::*;
        match self {
            Channel::Webhook => matches!(
                kind,
                Accepted
                    | Claimed
                    | Reminded
                    | Escalated
                    | Answered
                    | Expired
                    | Cancelled
                    | Aborted
            ),
            // A mail or a push message asks a person to act: the request is new, or
            // nobody answered yet.
            Channel::Email | Channel::Push => matches!(kind, Accepted | Reminded | Escalated),
            // A message is posted when a person is needed and updated when the request
            // ends, so the buttons never stay live on a request that is over.
            Channel::Slack | Channel::Telegram | Channel::Teams => matches!(
                kind,
                Accepted | Reminded | Escalated | Answered | Expired | Cancelled | Aborted
            ),
        }
    }

    /// Whether an event of `kind` goes out on this channel to a context that was told of
    /// the request before and that the request has left (escalated elsewhere): who was
    /// told hears how it goes on and how it ends, as each medium can say it.
    ///
    /// - A webhook is a machine's record of the request: it gets every step it takes.
    /// - A mail asks a person to act; the old context's reviewers can no longer (their
    ///   links stop acting when the request moves, [`crate::core::mail_link::sent_for`]),
    ///   so they get one mail saying where it went, and no reminder.
    /// - A Slack message is updated when the request ends, in every channel it was
    ///   posted in; nothing new is posted in a channel whose context is no longer asked.
    ///   A Telegram message likewise: edited at the end in every chat it was sent to;
    ///   a Teams card: updated at the end in every conversation it was sent to.
    pub fn tells_former(self, kind: EventKind) -> bool {
        use EventKind::*;
        match self {
            Channel::Webhook => self.takes(kind),
            Channel::Email => kind == Escalated,
            Channel::Slack | Channel::Telegram | Channel::Teams => {
                matches!(kind, Answered | Expired | Cancelled | Aborted)
            }
            // A notification asks a person to act; one on a request that moved on to
            // another context asks nothing of them (its actions are refused there,
            // WRONG_CONTEXT), and its end needs no message of its own.
            Channel::Push => false,
        }
    }
}

impl std::fmt::Display for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_channel_round_trips_its_name() {
        for c in Channel::ALL {
            assert_eq!(Channel::parse(c.as_str()), Some(c));
        }
        assert_eq!(Channel::parse("pager"), None);
    }

    #[test]
    fn a_mail_is_sent_only_when_a_person_is_needed() {
        assert!(Channel::Email.takes(EventKind::Accepted));
        assert!(Channel::Email.takes(EventKind::Escalated));
        assert!(!Channel::Email.takes(EventKind::Claimed));
        assert!(!Channel::Email.takes(EventKind::Answered));
        assert!(Channel::Webhook.takes(EventKind::Claimed));
        assert!(Channel::Slack.takes(EventKind::Answered));
        assert!(!Channel::Slack.takes(EventKind::Claimed));
        assert!(Channel::Push.takes(EventKind::Reminded));
        assert!(!Channel::Push.takes(EventKind::Answered));
    }

    #[test]
    fn a_context_the_request_left_hears_what_its_medium_can_say() {
        use EventKind::*;
        for k in [
            Claimed, Reminded, Escalated, Answered, Expired, Cancelled, Aborted,
        ] {
            assert_eq!(Channel::Webhook.tells_former(k), Channel::Webhook.takes(k));
        }
        assert!(Channel::Teams.tells_former(Answered));
        assert!(!Channel::Teams.tells_former(Reminded));
        assert!(Channel::Email.tells_former(Escalated));
        assert!(!Channel::Email.tells_former(Reminded));
        assert!(Channel::Slack.tells_former(Answered));
        assert!(Channel::Slack.tells_former(Expired));
        assert!(!Channel::Slack.tells_former(Escalated));
        assert!(!Channel::Slack.tells_former(Reminded));
        assert!(!Channel::Push.tells_former(Answered));
        assert!(Channel::Telegram.tells_former(Answered));
        assert!(Channel::Telegram.tells_former(Cancelled));
        assert!(!Channel::Telegram.tells_former(Reminded));
        assert!(!Channel::Telegram.tells_former(Escalated));
    }
}

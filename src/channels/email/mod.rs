//! The email channel: a delivery becomes one mail per recipient of its context,
//! sent over SMTP with lettre, each with a signed, expiring link to the request on the page
//! ([`crate::core::mail_link`]).
//!
//! - **Transport.** `smtps://HOST[:PORT]` is TLS from the first byte (port 465 by
//!   default); `smtp://HOST[:PORT]` requires STARTTLS (587) and fails when the server does
//!   not offer it; plain SMTP only with `--smtp-plain` (a relay on loopback). rustls with
//!   the system's CA store, and the operator's CA (`--smtp-ca-file`) for a relay with a
//!   private certificate. The password is read from `--smtp-password-file` (refused
//!   when group or others may read it), never from argv or the URL.
//! - **Retries.** A server that refuses or is down fails the attempt; the sender loop
//!   ([`crate::channels::deliveries`]) tries the row again after its backoff. Nothing is lost: the
//!   row is marked delivered only after every recipient's mail was accepted. A resend
//!   (after a failure for a later recipient, or after a crash) is the same mail: its
//!   `Message-ID` is derived from the delivery id and the recipient, and its link from
//!   the same two ([`LinkKey::link_id`]), with the expiry counted from the delivery's
//!   creation.
//! - **Untrusted text.** What the asker wrote is made one-line (the subject) or
//!   multi-line safe with the project's sanitiser ([`crate::text`]), so no control
//!   character, terminal escape or line break reaches a header; lettre encodes the
//!   subject (RFC 2047 for non-ASCII) and the bodies (quoted-printable). The HTML part is
//!   a template that escapes every value, with the one rule for untrusted text that the
//!   page follows too ([`crate::html`]); the plain part is always there.
//! - **What it reads.** The request's row at send time, through the sender's own store
//!   connection: a request that is final by then gets no mail (nobody needs to act).

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::future::BoxFuture;
use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::transport::smtp::AsyncSmtpTransportBuilder;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use crate::channels::sender::{Attempt, Sender, StoreCalls};
use crate::clock::{rfc3339, Millis};
use crate::core::channel::Channel;
use crate::core::mail_link::{LinkClaims, LinkKey};
use crate::error::{Error, Result};
use crate::html::{html, Block, Line, PreEscaped};
use crate::protocol::{Question, Request};
use crate::root::Root;
use crate::store::{Delivery, RequestRow};
use crate::text::{multi_line, one_line};

/// How the connection to the SMTP server is protected (a closed set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Security {
    /// TLS from the first byte (`smtps://`).
    Tls,
    /// STARTTLS, required (`smtp://`).
    StartTls,
    /// None (`smtp://` with `--smtp-plain`): only for a relay on loopback.
    Plain,
}

/// The SMTP server.
#[derive(Clone)]
pub struct Smtp {
    /// Its host name (checked against its certificate under TLS).
    pub host: String,
    /// Its port.
    pub port: u16,
    /// How the connection is protected.
    pub security: Security,
    /// The user and the password read from `--smtp-password-file`.
    pub credentials: Option<(String, String)>,
    /// A CA certificate (PEM) trusted beside the system's (`--smtp-ca-file`).
    pub ca_pem: Option<Vec<u8>>,
    /// How long one connection (and one mail) may take.
    pub timeout: Duration,
}

impl std::fmt::Debug for Smtp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Smtp")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("security", &self.security)
            .field("user", &self.credentials.as_ref().map(|(u, _)| u))
            .finish_non_exhaustive()
    }
}

/// The email channel of a daemon, as configured.
#[derive(Debug, Clone)]
pub struct Email {
    /// The SMTP server.
    pub smtp: Smtp,
    /// The `From` of every mail.
    pub from: Mailbox,
    /// Context → who its mails go to.
    pub recipients: BTreeMap<String, Vec<Mailbox>>,
    /// The page's public base URL (no trailing `/`): links are `BASE/mail/TOKEN`.
    pub page_url: String,
    /// How long a link opens its request, from the delivery's creation.
    pub link_ttl: Duration,
}

/// Parse `smtp://HOST[:PORT]` or `smtps://HOST[:PORT]`: the host, the port, and whether
/// it is `smtps`. A user or password in the URL is refused (give `--smtp-user` and
/// `--smtp-password-file`).
pub fn parse_smtp_url(s: &str) -> std::result::Result<(String, Option<u16>, bool), String> {
    let (tls, rest) = if let Some(r) = s.strip_prefix("smtps://") {
        (true, r)
    } else if let Some(r) = s.strip_prefix("smtp://") {
        (false, r)
    } else {
        return Err(format!(
            "{s:?}: give smtp://HOST[:PORT] (STARTTLS) or smtps://HOST[:PORT] (TLS)"
        ));
    };
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.contains('@') {
        return Err(
            "the SMTP URL holds a user or password: give --smtp-user and --smtp-password-file \
             instead (a password in argv is visible to every user of the machine)"
                .into(),
        );
    }
    if authority.is_empty() || authority.contains(['/', '?', '#']) {
        return Err(format!("{s:?}: give only a host and a port"));
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() && !p.contains(']') => {
            let port = p
                .parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| format!("{p:?} is not a port"))?;
            (h, Some(port))
        }
        _ => (authority, None),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(format!("{s:?}: no host"));
    }
    Ok((host.to_string(), port, tls))
}

/// Parse `--email CONTEXT=ADDR` ([`crate::channels::target`]): a valid context id and
/// one mail address (`alice@example.com` or `Alice <alice@example.com>`); a context's
/// recipients are the flag repeated.
pub fn parse_recipient(s: &str) -> std::result::Result<(String, Mailbox), String> {
    let (context, addr) = crate::channels::target::split("email", s, "default=alice@example.com")?;
    let mailbox = addr.parse::<Mailbox>().map_err(|e| {
        if addr.contains([',', ';']) {
            crate::channels::target::one_target("email", s)
        } else {
            format!("{addr:?} is not a mail address: {e}")
        }
    })?;
    Ok((context, mailbox))
}

/// The email channel's sender: the configuration, the root's link key, an SMTP transport.
pub struct EmailSender {
    email: Email,
    key: LinkKey,
    /// The transport as configured (checked at start)...
    builder: AsyncSmtpTransportBuilder,
    /// ...and built at the first mail, on the sender's own runtime: its connection pool
    /// (kept open between mails, closed after a minute unused) runs a task there.
    transport: std::sync::OnceLock<AsyncSmtpTransport<Tokio1Executor>>,
}

impl EmailSender {
    /// The sender of `email`, signing links with the root's `mail.key` (created at the
    /// first start).
    pub fn new(root: &Root, email: Email) -> Result<EmailSender> {
        let key = crate::app::mail_key::load_or_create(root.dir())?;
        let s = &email.smtp;
        let tls = || -> std::result::Result<TlsParameters, lettre::transport::smtp::Error> {
            let mut b = TlsParameters::builder(s.host.clone());
            if let Some(pem) = &s.ca_pem {
                b = b.add_root_certificate(Certificate::from_pem(pem)?);
            }
            b.build_rustls()
        };
        let plain = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&s.host);
        let builder = match s.security {
            Security::Tls => tls().map(|p| plain.tls(Tls::Wrapper(p))),
            Security::StartTls => tls().map(|p| plain.tls(Tls::Required(p))),
            Security::Plain => Ok(plain),
        }
        .map_err(|e| Error::Usage(format!("--smtp: {e}")))?;
        let mut builder = builder.port(s.port).timeout(Some(s.timeout));
        if let Some((user, password)) = &s.credentials {
            builder = builder.credentials(Credentials::new(user.clone(), password.clone()));
        }
        Ok(EmailSender {
            builder,
            transport: std::sync::OnceLock::new(),
            email,
            key,
        })
    }

    /// One attempt of `d`: the request is read through the loop's store, then every
    /// recipient's mail is sent, the whole bounded by `--smtp-timeout` (the loop's bound,
    /// [`Sender::timeout`]; lettre's own, the same, bounds each read and write).
    async fn send_all(&self, store: &StoreCalls, d: &Delivery) -> Attempt {
        let recipients = self
            .email
            .recipients
            .get(&d.context)
            .ok_or_else(|| format!("no recipients for context {:?}", d.context))?;
        let id = d.request_id.clone();
        // The context's recipients, and the delegates of those away now (the ladder's
        // reminders and escalations reach them too: `crate::core::delegation`).
        let addresses: Vec<String> = recipients.iter().map(|m| m.email.to_string()).collect();
        let (row, extra) = store
            .call(move |s| {
                let row = s.get(&id)?;
                Ok((
                    row,
                    crate::app::delegation::delegate_addresses(s, &addresses)?,
                ))
            })
            .await?;
        let mut to_all: Vec<Mailbox> = recipients.clone();
        for a in extra {
            match a.parse::<lettre::Address>() {
                Ok(addr) => to_all.push(Mailbox::new(None, addr)),
                Err(e) => {
                    tracing::warn!(error = %e, "mail: a delegate's address does not parse; skipped")
                }
            }
        }
        let Some(row) = row.filter(|r| !r.status.is_final()) else {
            tracing::info!(id = %d.id, request = %d.request_id, "no mail: the request is over (or gone)");
            return Ok(());
        };
        let Some(request) = row.request() else {
            return Err("the request's body does not parse".into());
        };
        let expires_ms = d.created_ms + crate::clock::duration_ms(self.email.link_ttl);
        // Built at the first mail, inside the deliveries' runtime: its pool runs a task
        // there.
        let transport = self.transport.get_or_init(|| self.builder.clone().build());
        for to in &to_all {
            let mail = self.message(d, &row, &request, to, expires_ms)?;
            transport
                .send(mail)
                .await
                .map_err(|e| format!("the SMTP server did not take the mail: {e}"))?;
        }
        Ok(())
    }

    /// The mail of delivery `d` about `row` to `to`.
    fn message(
        &self,
        d: &Delivery,
        row: &RequestRow,
        request: &Request,
        to: &Mailbox,
        expires_ms: Millis,
    ) -> std::result::Result<Message, String> {
        let recipient = to.email.to_string();
        let link_id = self.key.link_id(&d.id, &recipient);
        let token = self.key.sign(&LinkClaims {
            request_id: d.request_id.clone(),
            context: d.context.clone(),
            recipient: recipient.clone(),
            expires_ms,
            link_id: link_id.clone(),
            issued_ms: d.created_ms,
        });
        let link = format!("{}/mail/{token}", self.email.page_url);
        let content = Content::of(d, row, request, &recipient, &link, expires_ms);
        let domain = self.email.from.email.domain().to_string();
        Message::builder()
            .from(self.email.from.clone())
            .to(to.clone())
            .subject(content.subject())
            .message_id(Some(format!("<{}.{}@{domain}>", d.id, &link_id[..16])))
            .date(std::time::UNIX_EPOCH + Duration::from_millis(d.created_ms.max(0) as u64))
            .multipart(MultiPart::alternative_plain_html(
                content.plain(),
                content.html(),
            ))
            .map_err(|e| format!("the mail cannot be built: {e}"))
    }
}

impl Sender for EmailSender {
    fn channel(&self) -> Channel {
        Channel::Email
    }

    fn contexts(&self) -> Vec<String> {
        self.email.recipients.keys().cloned().collect()
    }

    fn timeout(&self) -> Duration {
        self.email.smtp.timeout
    }

    fn send<'a>(&'a self, store: &'a StoreCalls, d: &'a Delivery) -> BoxFuture<'a, Attempt> {
        Box::pin(self.send_all(store, d))
    }
}

/// The deadline ladder's rungs of `r`, each with its time, "(done)" once it
/// ran: what the reviewer has before the request is escalated or expires.
fn ladder_facts(r: &RequestRow) -> Vec<(&'static str, String)> {
    use crate::protocol::ladder::{Rung, Rungs};
    let Some(rungs) = r
        .ladder
        .as_deref()
        .and_then(|l| serde_json::from_str::<Rungs>(l).ok())
    else {
        return Vec::new();
    };
    rungs
        .steps()
        .into_iter()
        .enumerate()
        .map(|(i, (rung, at))| {
            let done = if (i as i64) < r.ladder_done {
                " (done)"
            } else {
                ""
            };
            let (name, what) = match rung {
                Rung::Remind => ("Reminder", String::new()),
                Rung::Escalate => (
                    "Escalates",
                    rungs
                        .escalate_to
                        .as_deref()
                        .map(|c| format!(" to context {c}"))
                        .unwrap_or_default(),
                ),
                Rung::Expire => (
                    "Expires",
                    match rungs.on_expire {
                        crate::protocol::OnExpire::Fail => {
                            " (unanswered: ASK_EXPIRED, nothing is chosen)".to_string()
                        }
                        crate::protocol::OnExpire::Default => {
                            " (unanswered: the asker's default, decided by policy)".to_string()
                        }
                    },
                ),
            };
            (name, format!("{}{what}{done}", rfc3339(at)))
        })
        .collect()
}

/// What one mail says, before it is written as text or HTML.
struct Content<'a> {
    kind: &'a str,
    /// The context the recipients were told of the request for (the delivery's).
    context: &'a str,
    body: serde_json::Value,
    row: &'a RequestRow,
    request: &'a Request,
    recipient: &'a str,
    link: &'a str,
    expires_ms: Millis,
    delivery: &'a str,
}

impl<'a> Content<'a> {
    fn of(
        d: &'a Delivery,
        row: &'a RequestRow,
        request: &'a Request,
        recipient: &'a str,
        link: &'a str,
        expires_ms: Millis,
    ) -> Content<'a> {
        Content {
            kind: &d.kind,
            context: &d.context,
            body: serde_json::from_str(&d.body).unwrap_or_default(),
            row,
            request,
            recipient,
            link,
            expires_ms,
            delivery: &d.id,
        }
    }

    /// Whether the request has left the context this mail's recipients were told of it
    /// for (escalated elsewhere): the mail then only says so, with no link (a link acts
    /// only in the context it was sent for, [`crate::core::mail_link::sent_for`]).
    fn moved(&self) -> bool {
        self.row.context != self.context
    }

    fn rung(&self) -> Option<i64> {
        self.body.pointer("/data/rung").and_then(|v| v.as_i64())
    }

    /// The subject: what happened, the context, the first question (one line, at most
    /// 120 characters).
    fn subject(&self) -> String {
        let first = self
            .request
            .questions
            .first()
            .map(|q| one_line(&q.question).into_owned())
            .unwrap_or_default();
        let mut first: String = first.chars().take(120).collect();
        if self.request.questions.len() > 1 {
            first.push_str(&format!(" (+{} more)", self.request.questions.len() - 1));
        }
        let what = match self.kind {
            "reminded" => "Reminder: ",
            "escalated" => "Escalated: ",
            _ => "",
        };
        format!("[dshq] {what}{}: {first}", one_line(&self.row.context))
    }

    /// The first paragraph: why this mail came.
    fn lead(&self) -> String {
        if self.moved() {
            return format!(
                "Escalated to context {}: nobody answered this request in time, so it is \
                 theirs to answer now. This mail asks nothing of you: it says where the \
                 request you were sent went.",
                one_line(&self.row.context)
            );
        }
        match self.kind {
            "reminded" => format!(
                "Reminder{}: this request is still waiting for an answer.",
                self.rung()
                    .map(|r| format!(" (rung {r})"))
                    .unwrap_or_default()
            ),
            "escalated" => {
                let from = self
                    .body
                    .pointer("/data/from")
                    .and_then(|v| v.as_str())
                    .map(|f| format!(" from context {}", one_line(f)))
                    .unwrap_or_default();
                format!(
                    "Escalated{from}: nobody answered this request in time, so it comes to you."
                )
            }
            _ => "A request waits for your answer.".to_string(),
        }
    }

    fn facts(&self) -> Vec<(&'static str, String)> {
        let r = self.row;
        let mut f = vec![
            ("Request", r.id.clone().unwrap_or_default()),
            ("Context", r.context.clone()),
            ("From", r.source.clone()),
        ];
        if let Some(a) = &r.agent_id {
            f.push(("Agent", a.clone()));
        }
        f.push(("Asked", rfc3339(r.created_ms)));
        if let Some(d) = r.deadline_ms {
            f.push(("Deadline", rfc3339(d)));
        }
        f.extend(ladder_facts(r));
        f
    }

    fn kind_of(q: &Question) -> &'static str {
        if q.plan_review_approve().is_some() {
            "plan review"
        } else if q.options().is_empty() {
            "free text"
        } else if q.is_multi() {
            "pick any"
        } else {
            "pick one"
        }
    }

    fn footer(&self) -> String {
        format!(
            "The link opens this request only, for {} (mail:{}), until {}. Following it \
             answers nothing: you confirm on the page. The page must be reachable (a dshq \
             daemon with --listen).",
            self.recipient,
            self.recipient,
            rfc3339(self.expires_ms)
        )
    }

    /// The plain-text part (always sent).
    fn plain(&self) -> String {
        let mut t = format!("{}\n\n", self.lead());
        for (k, v) in self.facts() {
            t.push_str(&format!("{k:<9} {}\n", one_line(&v)));
        }
        let n = self.request.questions.len();
        for (i, q) in self.request.questions.iter().enumerate() {
            t.push_str(&format!("\nQuestion {} of {n}", i + 1));
            if let Some(h) = &q.header {
                t.push_str(&format!(": {}", one_line(h)));
            }
            t.push_str(&format!(
                " ({})\n{}\n",
                Self::kind_of(q),
                multi_line(&q.question)
            ));
            if let Some(detail) = &q.detail {
                for line in multi_line(detail).lines() {
                    t.push_str(&format!("  | {line}\n"));
                }
            }
            for o in q.options() {
                t.push_str(&format!("  - {}", one_line(&o.label)));
                if let Some(desc) = &o.description {
                    t.push_str(&format!(": {}", one_line(desc)));
                }
                t.push('\n');
            }
        }
        if !self.moved() {
            t.push_str(&format!(
                "\nOpen it on the page to answer:\n{}\n\n{}\n",
                self.link,
                self.footer()
            ));
        }
        t.push_str(&format!("\n-- \ndshq, delivery {}\n", self.delivery));
        t
    }

    /// The HTML part: a template, every value escaped ([`crate::html`]).
    fn html(&self) -> String {
        let n = self.request.questions.len();
        html! {
            (PreEscaped("<!DOCTYPE html>"))
            html { head { meta charset="utf-8"; } body {
                p { (Line(&self.lead())) }
                table {
                    @for (k, v) in self.facts() {
                        tr { th align="left" { (k) } td { (Line(&v)) } }
                    }
                }
                @for (i, q) in self.request.questions.iter().enumerate() {
                    h3 {
                        "Question " (i + 1) " of " (n)
                        @if let Some(hd) = &q.header { ": " (Line(hd)) }
                        " " small { "(" (Self::kind_of(q)) ")" }
                    }
                    p style="white-space: pre-wrap" { (Block(&q.question)) }
                    @if let Some(detail) = &q.detail { pre { (Block(detail)) } }
                    @if !q.options().is_empty() {
                        ul { @for o in q.options() {
                            li { strong { (Line(&o.label)) } @if let Some(desc) = &o.description { ": " (Line(desc)) } }
                        } }
                    }
                }
                @if !self.moved() {
                    p { a href=(self.link) { "Open the request on the page" } }
                    p { small { (Line(&self.footer())) } }
                }
                p { small { "dshq, delivery " (Line(self.delivery)) } }
            } }
        }
        .into_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_smtp_url_is_a_host_and_a_port_without_credentials() {
        assert_eq!(
            parse_smtp_url("smtps://mail.example.com").unwrap(),
            ("mail.example.com".into(), None, true)
        );
        assert_eq!(
            parse_smtp_url("smtp://127.0.0.1:2525/").unwrap(),
            ("127.0.0.1".into(), Some(2525), false)
        );
        assert_eq!(
            parse_smtp_url("smtp://[::1]:25").unwrap(),
            ("::1".into(), Some(25), false)
        );
        assert!(parse_smtp_url("smtp://u:p@h")
            .unwrap_err()
            .contains("--smtp-password-file"));
        assert!(parse_smtp_url("http://h").is_err());
        assert!(parse_smtp_url("smtp://h:0").is_err());
        assert!(parse_smtp_url("smtp://h/x").is_err());
    }

    #[test]
    fn a_recipient_is_a_context_and_one_address() {
        let (c, a) = parse_recipient("ops=Bob <bob@example.com>").unwrap();
        assert_eq!(c, "ops");
        assert_eq!(a.email.to_string(), "bob@example.com");
        assert!(parse_recipient("ops=\"Doe, Bob\" <bob@example.com>").is_ok());
        assert!(parse_recipient("ops=").is_err());
        assert!(parse_recipient("ops=not an address").is_err());
        assert!(parse_recipient("../x=a@b.c").is_err());
        let e = parse_recipient("ops=a@example.com,b@example.com").unwrap_err();
        assert!(e.contains("repeat --email"), "{e}");
    }
}

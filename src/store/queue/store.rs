//! [`Queue`]: the queue over any [`Driver`], one method per use-case's transaction; the
//! [`crate::store::Store`] every face takes is this type over the driver chosen at run
//! time ([`crate::store::drivers::AnyDriver`]).
//!
//! Each use-case's transaction is composed here, once: which rule runs, in which kind of
//! transaction ([`Write`], or a read), and at which time. A backend is only its
//! [`Driver`] (`SqliteStore` and `PgStore` are this type over theirs).

use std::path::PathBuf;

use super::{
    agents, answers, audit, feed, history, leases, outbox, prune, requests, sweep, tokens,
};
use crate::clock::Millis;
use crate::core::audit::{Actor, EventKind};
use crate::core::lifecycle::RequestRow;
use crate::error::{Error, Result};
use crate::protocol::{Answer, Outcome};
use crate::store::anchor::Anchor;
use crate::store::calls::{
    Answered, AskInput, Asked, EventPage, ExportSink, FeedPage, FeedPos, InboxInput, InboxVerdict,
    LeaseRef, ProviderFile, PruneExport, Record, Verified, Wakeups,
};
use crate::store::driver::push::PushSubscription;
use crate::store::driver::slack::SlackMessage;
use crate::store::driver::telegram::TelegramMessage;
use crate::store::driver::{Driver, Write};
use crate::store::types::{
    AgentInfo, Delivery, DeliveryCounts, Entered, Event, HistoryFilter, HistoryRow, HostMark,
    Lease, LeaseInfo, ListFilter, OpenCounts, Pruned, Registered, Revoked, Route, Stats, Swept,
    TokenCredential, WebToken,
};

/// The queue over one driver: every method is a rule of [`super`] run in a transaction
/// of `D`. Synchronous and `Send`: a host may give it to one blocking thread.
#[derive(Debug)]
pub struct Queue<D> {
    driver: D,
    /// The config file's quorum policy, applied to every ask.
    policy: std::sync::Arc<crate::core::quorum::Policy>,
}

impl<D: Driver> Queue<D> {
    /// The queue over `driver`.
    pub fn new(driver: D) -> Queue<D> {
        Queue {
            driver,
            policy: Default::default(),
        }
    }

    /// The driver, for its own tools and tests (a connection, a client).
    pub fn driver(&mut self) -> &mut D {
        &mut self.driver
    }

    /// The driver, to read what it was built with.
    pub fn driver_ref(&self) -> &D {
        &self.driver
    }

    /// The driver back, with what it holds.
    pub fn into_driver(self) -> D {
        self.driver
    }

    /// The same queue (its policy kept) over `f` of its driver: a driver's typed store
    /// made the [`crate::store::Store`] every face takes.
    pub fn map_driver<E: Driver>(self, f: impl FnOnce(D) -> E) -> Queue<E> {
        Queue {
            driver: f(self.driver),
            policy: self.policy,
        }
    }
}

/// The use-cases' transactions, one method each.
impl<D: Driver> Queue<D> {
    // ---- asking ----------------------------------------------------------------------

    /// Accept a request, or record its rejection (with `input.actor`), in one transaction.
    pub fn ask(&mut self, input: AskInput) -> Result<Asked> {
        let policy = self.policy.clone();
        self.driver.write(Write::Swept, |db, now| {
            requests::accept_or_reject(db, now, input, &policy)
        })
    }

    /// Hold the requests asked from now on to the quorum policy of the config file
    /// (a context's policy wins over the asker's `quorum`); none until set.
    pub fn set_quorum_policy(&mut self, policy: std::sync::Arc<crate::core::quorum::Policy>) {
        self.policy = policy;
    }

    /// Ingest an inbox batch in one transaction: each input accepted, aborted or rejected
    /// on its own (one input's refusal never rolls back another's verdict). The verdicts
    /// come in input order; the files may be removed only after this returns.
    pub fn ingest(&mut self, inputs: Vec<InboxInput>) -> Result<Vec<InboxVerdict>> {
        let policy = self.policy.clone();
        self.driver.write(Write::Swept, |db, now| {
            requests::ingest(db, now, inputs, &policy)
        })
    }

    /// The asker aborts an open request (`ASK_ABORTED`); needs no lease.
    pub fn abort(&mut self, id: &str, reason: Option<&str>, actor: &Actor) -> Result<Outcome> {
        self.driver.write(Write::Swept, |db, now| {
            answers::abort(db, now, id, reason, actor)
        })
    }

    // ---- providing -------------------------------------------------------------------

    /// Claim `id` with `lease` (live at the time of the write, or a transient lease
    /// registered and released inside the same transaction); idempotent for the lease's
    /// own claims.
    pub fn claim(&mut self, lease: &LeaseRef, id: &str) -> Result<RequestRow> {
        self.driver.write(Write::Swept, |db, now| {
            answers::claim_with(db, now, lease, id)
        })
    }

    /// Claim the oldest pending request of the lease's context.
    pub fn claim_next(&mut self, lease: &LeaseRef) -> Result<RequestRow> {
        self.driver.write(Write::Swept, |db, now| {
            answers::claim_next_with(db, now, lease)
        })
    }

    /// Answer `id` with `lease` (claiming it implicitly when pending). On a request with a
    /// quorum the answer is a vote, and it may leave the request open.
    pub fn answer(&mut self, lease: &LeaseRef, id: &str, answer: &Answer) -> Result<Answered> {
        self.answer_for(lease, id, answer, None)
    }

    /// [`Queue::answer`], made for the away person `for_person` by their delegate (who
    /// acts) when given: "D for P" ([`super::delegation`]).
    pub fn answer_for(
        &mut self,
        lease: &LeaseRef,
        id: &str,
        answer: &Answer,
        for_person: Option<&str>,
    ) -> Result<Answered> {
        let policy = self.policy.clone();
        self.driver.write(Write::Swept, |db, now| {
            answers::answer_with(db, now, lease, id, answer, &policy.people, for_person)
        })
    }

    /// Set `person` away until `until_ms`, `delegate` answering for them, by `by`
    /// ([`super::delegation::set`]).
    pub fn set_away(
        &mut self,
        person: &str,
        delegate: &str,
        until_ms: Millis,
        by: &Actor,
    ) -> Result<crate::core::delegation::Away> {
        let policy = self.policy.clone();
        self.driver.write(Write::Plain, |db, now| {
            super::delegation::set(db, now, &policy.people, person, delegate, until_ms, by)
        })
    }

    /// Cancel `person`'s away notice, by `by` (`NOT_AWAY` when none holds).
    pub fn cancel_away(
        &mut self,
        person: &str,
        by: &Actor,
    ) -> Result<crate::core::delegation::Away> {
        self.driver.write(Write::Plain, |db, now| {
            super::delegation::cancel(db, now, person, by)
        })
    }

    /// The away notices that hold now, by person.
    pub fn aways(&mut self) -> Result<Vec<crate::core::delegation::Away>> {
        let now = self.driver.now()?;
        self.driver.read(|db| super::delegation::holding(db, now))
    }

    /// The people directory of the config file.
    pub fn people(&self) -> &crate::core::people::People {
        &self.policy.people
    }

    /// Cancel `id` with `lease` (`ASK_CANCELLED`).
    pub fn cancel(&mut self, lease: &LeaseRef, id: &str, reason: Option<&str>) -> Result<Outcome> {
        self.driver.write(Write::Swept, |db, now| {
            answers::cancel_with(db, now, lease, id, reason)
        })
    }

    /// Answer through a mail's link: [`Queue::answer`] of the link's request, recording
    /// `link` as used in the same transaction; `LINK_USED` when an answer was already sent
    /// through it (nothing changes).
    pub fn answer_by_link(
        &mut self,
        link: &crate::store::driver::links::LinkUse,
        lease: &LeaseRef,
        answer: &Answer,
    ) -> Result<Answered> {
        let policy = self.policy.clone();
        self.driver.write(Write::Swept, |db, now| {
            super::links::answer_by_link(db, now, link, lease, answer, &policy.people)
        })
    }

    /// Whether an answer was sent through mail link `link_id`.
    pub fn link_used(&mut self, link_id: &str) -> Result<bool> {
        self.driver.read(|db| super::links::used(db, link_id))
    }

    /// Apply a batch of answer and cancel files in one transaction, each on its own: an
    /// identical answer (or cancel) the same lease already made is a replay and applies
    /// once. Per file: the outcome and whether it was an answer, or its error.
    /// A file's vote on a request with a quorum that left it open is `Ok(None)`.
    pub fn apply_answer_files(
        &mut self,
        files: &[ProviderFile],
    ) -> Result<Vec<std::result::Result<Option<Outcome>, Error>>> {
        let policy = self.policy.clone();
        self.driver.write(Write::Swept, |db, now| {
            answers::apply_answer_files(db, now, files, &policy.people)
        })
    }

    /// The next request of `context` after `after` that is pending, or already claimed by
    /// `lease_id` (the reviewer's screen walks the queue with it).
    pub fn next_for_lease(
        &mut self,
        context: &str,
        lease_id: i64,
        after: FeedPos,
    ) -> Result<Option<String>> {
        self.driver
            .read(|db| answers::next_for_lease(db, context, lease_id, after))
    }

    // ---- leases ----------------------------------------------------------------------

    /// Register a provider lease; `DUPLICATE_PROVIDER` when one is live in the context.
    pub fn register(
        &mut self,
        context: &str,
        name: &str,
        ttl_ms: Millis,
    ) -> Result<(Registered, Lease)> {
        self.register_as(context, name, ttl_ms, None)
    }

    /// [`Queue::register`], recording the host that holds the lease for its web page
    /// (`host`), or none.
    pub fn register_as(
        &mut self,
        context: &str,
        name: &str,
        ttl_ms: Millis,
        host: Option<&HostMark>,
    ) -> Result<(Registered, Lease)> {
        self.driver.write(Write::Swept, |db, now| {
            let reg = leases::register(db, now, context, name, ttl_ms, host)?;
            let lease = leases::authenticate(db, &reg.lease, now)?;
            Ok((reg, lease))
        })
    }

    /// End every unended lease recorded as held by the host `host_id` (a restarted host
    /// taking over the leases of its earlier life); their claims go back to `pending`.
    /// Leases of other hosts, and leases held by no host, are never touched.
    pub fn take_over_host(&mut self, host_id: &str) -> Result<Vec<Revoked>> {
        self.driver
            .write(Write::Swept, |db, now| leases::take_over(db, now, host_id))
    }

    /// Extend the live lease by its ttl.
    pub fn heartbeat(&mut self, token: &str) -> Result<Lease> {
        self.driver
            .write(Write::Swept, |db, now| leases::heartbeat(db, now, token))
    }

    /// End the lease (its claims go back to `pending`); `false` when already ended.
    pub fn release(&mut self, token: &str) -> Result<bool> {
        self.driver
            .write(Write::Swept, |db, now| leases::release(db, now, token))
    }

    /// End the live lease of `context` on purpose (someone other than its holder, `by`,
    /// for `reason`); its claims go back to `pending`. `NO_PROVIDER` when none is live.
    pub fn revoke(&mut self, context: &str, by: &str, reason: Option<&str>) -> Result<Revoked> {
        self.driver.write(Write::Swept, |db, now| {
            leases::revoke(db, now, context, by, reason)
        })
    }

    /// The live lease of `token` (read).
    pub fn authenticate(&mut self, token: &str) -> Result<Lease> {
        let now = self.driver.now()?;
        self.driver.read(|db| leases::authenticate(db, token, now))
    }

    /// One lease by token, live or not.
    pub fn lease_info(&mut self, token: &str) -> Result<LeaseInfo> {
        let now = self.driver.now()?;
        self.driver.read(|db| leases::info(db, token, now))
    }

    /// The unended lease of each context, or of one.
    pub fn lease_status(&mut self, context: Option<&str>) -> Result<Vec<LeaseInfo>> {
        let now = self.driver.now()?;
        self.driver.read(|db| leases::status(db, context, now))
    }

    // ---- agents ----------------------------------------------------------------------

    /// Enter the registry (or re-enter as a new instance).
    pub fn agent_enter(
        &mut self,
        id: &str,
        owner: Option<&str>,
        lineage: Option<&str>,
        ttl_ms: Option<Millis>,
    ) -> Result<Entered> {
        self.driver.write(Write::Swept, |db, now| {
            agents::enter(db, now, id, owner, lineage, ttl_ms)
        })
    }

    /// Extend a live agent's ttl.
    pub fn agent_heartbeat(&mut self, id: &str, instance: &str) -> Result<AgentInfo> {
        self.driver.write(Write::Swept, |db, now| {
            agents::heartbeat(db, now, id, instance)
        })
    }

    /// Exit (with everything it owns); returns the ended ids.
    pub fn agent_exit(&mut self, id: &str, instance: &str) -> Result<Vec<String>> {
        self.driver
            .write(Write::Swept, |db, now| agents::exit(db, now, id, instance))
    }

    /// The registry.
    pub fn agents(&mut self, live_only: bool) -> Result<Vec<AgentInfo>> {
        let now = self.driver.now()?;
        self.driver.read(|db| agents::list(db, now, live_only))
    }

    // ---- time ------------------------------------------------------------------------

    /// End what fell due (expired leases, deadlines, agent ttls); `None` when nothing
    /// had (a cheap read).
    pub fn sweep(&mut self) -> Result<Option<Swept>> {
        // A cheap indexed read first: almost always, nothing is due.
        let now = self.driver.now()?;
        match self.driver.read(|db| db.next_due())? {
            Some(due) if due < now => {}
            _ => return Ok(None),
        }
        self.driver
            .write(Write::Plain, |db, now| sweep::sweep(db, now).map(Some))
    }

    /// The earliest future time something falls due.
    pub fn next_due(&mut self) -> Result<Option<Millis>> {
        self.driver.read(|db| db.next_due())
    }

    /// Replace the operator's ladder policies (context, the policy's `ladder` JSON): what
    /// a daemon started with `--context-ladder` does at start.
    pub fn set_context_ladders(&mut self, policies: &[(String, String)]) -> Result<()> {
        self.driver
            .write(Write::Plain, |db, _| db.replace_context_ladders(policies))
    }

    // ---- the deliveries outbox ----------------------------------------------

    /// Record that a daemon sends the deliveries of these contexts on these channels: from
    /// now on their events write delivery rows ([`queue::deliveries`]).
    pub fn add_delivery_routes(&mut self, routes: &[Route]) -> Result<()> {
        self.driver
            .write(Write::Plain, |db, _| db.insert_delivery_routes(routes))
    }

    /// The undelivered rows of `routes` due at `now`, oldest first, at most `limit`.
    pub fn deliveries_due(
        &mut self,
        routes: &[Route],
        now: Millis,
        limit: usize,
    ) -> Result<Vec<Delivery>> {
        self.driver.read(|db| db.deliveries_due(routes, now, limit))
    }

    /// When the next undelivered row of `routes` falls due.
    pub fn next_delivery_due(&mut self, routes: &[Route]) -> Result<Option<Millis>> {
        self.driver.read(|db| db.next_delivery_due(routes))
    }

    /// Mark delivery `id` delivered at `now` (a 2xx came back).
    pub fn mark_delivered(&mut self, id: &str, now: Millis) -> Result<()> {
        self.driver.read(|db| db.mark_delivered(id, now))
    }

    /// Record a failed attempt of delivery `id`, next tried at `next_ms`.
    pub fn mark_delivery_failed(&mut self, id: &str, next_ms: Millis, error: &str) -> Result<()> {
        self.driver
            .read(|db| db.mark_delivery_failed(id, next_ms, error))
    }

    /// The deliveries of request `id`, oldest first.
    pub fn deliveries(&mut self, request_id: &str) -> Result<Vec<Delivery>> {
        self.driver.read(|db| db.deliveries_of_request(request_id))
    }

    /// The outbox's counts (pending, delivered, failed attempts), one entry per channel
    /// that has rows.
    pub fn delivery_counts(&mut self) -> Result<Vec<DeliveryCounts>> {
        self.driver.read(|db| db.delivery_counts())
    }

    /// Record the Slack message delivery `delivery_id` posted for request `request_id`
    /// (its Slack `channel` and `ts`), unless the delivery recorded one already: whether
    /// this call recorded it ([`queue::slack`]).
    pub fn record_slack_message(
        &mut self,
        delivery_id: &str,
        request_id: &str,
        channel: &str,
        ts: &str,
    ) -> Result<bool> {
        let now = self.driver.now()?;
        self.driver.write(Write::Plain, |db, _| {
            super::slack::record_message(db, now, delivery_id, request_id, channel, ts)
        })
    }

    /// Record that `actor` signed in through the identity provider, with `data` (the
    /// claims and what they decided): one `signed-in` event, and the person's quorum
    /// groups by sign-in replaced by `quorum_groups` ([`super::sign_in`]).
    pub fn record_sign_in(
        &mut self,
        actor: &crate::core::audit::Actor,
        quorum_groups: &[String],
        data: serde_json::Value,
    ) -> Result<()> {
        self.driver.write(Write::Plain, |db, now| {
            super::sign_in::record(db, now, actor, quorum_groups, data)
        })
    }

    /// The quorum groups `person`'s latest sign-in through the identity provider put them
    /// in ([`super::sign_in`]).
    pub fn sign_in_groups(
        &mut self,
        person: &str,
    ) -> Result<Vec<crate::store::driver::sign_in::SignInGroup>> {
        self.driver.read(|db| super::sign_in::groups_of(db, person))
    }

    /// The Slack messages posted for request `request_id`, oldest first.
    pub fn slack_messages(&mut self, request_id: &str) -> Result<Vec<SlackMessage>> {
        self.driver
            .read(|db| super::slack::messages(db, request_id))
    }

    /// The Slack message delivery `delivery_id` posted, if one is recorded.
    pub fn slack_message_of_delivery(&mut self, delivery_id: &str) -> Result<Option<SlackMessage>> {
        self.driver
            .read(|db| super::slack::message_of_delivery(db, delivery_id))
    }

    /// Record the Telegram message `m` (at the store's time), unless its delivery recorded
    /// one in its chat already: whether this call recorded it ([`queue::telegram`]).
    pub fn record_telegram_message(&mut self, m: &TelegramMessage) -> Result<bool> {
        self.driver.write(Write::Plain, |db, now| {
            super::telegram::record_message(db, now, m)
        })
    }

    /// The Telegram messages sent for request `request_id`, oldest first.
    pub fn telegram_messages(&mut self, request_id: &str) -> Result<Vec<TelegramMessage>> {
        self.driver
            .read(|db| super::telegram::messages(db, request_id))
    }

    /// The Telegram message delivery `delivery_id` sent to chat `chat_id`, if recorded.
    pub fn telegram_message_of_delivery(
        &mut self,
        delivery_id: &str,
        chat_id: i64,
    ) -> Result<Option<TelegramMessage>> {
        self.driver
            .read(|db| super::telegram::message_of_delivery(db, delivery_id, chat_id))
    }

    /// The person an identity belongs to, by the config file's people directory.
    pub fn person_of(&self, id: &crate::core::people::Identity) -> String {
        self.policy.people.person_of(id)
    }

    /// Subscribe a device for Web Push (replacing the subscription of its endpoint), at
    /// the store's time ([`queue::push`]).
    pub fn push_subscribe(&mut self, s: &PushSubscription) -> Result<()> {
        self.driver
            .write(Write::Plain, |db, _| super::push::subscribe(db, s))
    }

    /// Remove the subscription of `endpoint` (its person unsubscribed it from the page,
    /// `by` the web identity that subscribed it; or its push service said it is gone,
    /// `by` none); whether there was one ([`queue::push`]).
    pub fn push_unsubscribe(&mut self, endpoint: &str, by: Option<&str>) -> Result<bool> {
        self.driver.write(Write::Plain, |db, _| {
            super::push::unsubscribe(db, endpoint, by)
        })
    }

    /// The subscriptions live now (none past its browser's expiry), oldest first.
    pub fn push_subscriptions(&mut self) -> Result<Vec<PushSubscription>> {
        let now = self.driver.now()?;
        self.driver.read(|db| super::push::live(db, now))
    }

    /// Record that delivery `delivery_id` of request `request_id` reached the device of
    /// `endpoint`, at the store's time; whether this call recorded it ([`queue::push`]).
    pub fn record_push_reached(
        &mut self,
        delivery_id: &str,
        request_id: &str,
        endpoint: &str,
    ) -> Result<bool> {
        self.driver.write(Write::Plain, |db, now| {
            super::push::record_reached(db, now, delivery_id, request_id, endpoint)
        })
    }

    /// The endpoints of the devices delivery `delivery_id` reached.
    pub fn push_reached(&mut self, delivery_id: &str) -> Result<Vec<String>> {
        self.driver.read(|db| db.push_reached(delivery_id))
    }

    /// The subscription of `endpoint`, when it is live now.
    pub fn push_subscription(&mut self, endpoint: &str) -> Result<Option<PushSubscription>> {
        let now = self.driver.now()?;
        self.driver
            .read(|db| super::push::of_endpoint(db, endpoint, now))
    }

    /// The time now on the clock the store judges by (the database's, for a shared store):
    /// what [`Queue::next_due`] is compared with, so a host whose own clock is wrong
    /// neither spins nor oversleeps.
    pub fn clock_now(&mut self) -> Result<Millis> {
        self.driver.now()
    }

    // ---- the outbox ------------------------------------------------------------------

    /// Final requests whose outcome file is not written yet, oldest first, after the key
    /// `after` (a cursor: an outcome whose file failed does not hide the ones after it),
    /// at most `limit`, each with its key to mark it written.
    pub fn outbox_pending(&mut self, after: i64, limit: usize) -> Result<Vec<(i64, Outcome)>> {
        let origin = self.driver.origin().map(str::to_string);
        self.driver
            .read(|db| outbox::pending(db, origin.as_deref(), after, limit))
    }

    /// Mark outcome files written.
    pub fn mark_outbox_written(&mut self, keys: &[i64]) -> Result<()> {
        self.driver
            .write(Write::Unsynced, |db, _| outbox::mark_written(db, keys))
    }

    /// Under the write lock, call `remove` with each open request among `ids` (all open
    /// requests for `None`): its outcome file, if any, is a stale error outcome. Returns
    /// what `remove` counted.
    pub fn while_open(
        &mut self,
        ids: Option<&[&str]>,
        remove: &mut dyn FnMut(&[String]) -> Result<usize>,
    ) -> Result<usize> {
        self.driver
            .write(Write::Plain, |db, _| outbox::while_open(db, ids, remove))
    }

    // ---- reads -----------------------------------------------------------------------

    /// Present the store as it is now to the reads that follow, without making anything
    /// durable: what fell due (an expired lease, a passed deadline) reads as ended, but a
    /// read never commits. Held until the store is dropped (it may hold the write lock:
    /// drop the store before a slow output). A store that cannot be written (a read-only
    /// copy) reads as stored.
    pub fn view_now(&mut self) -> Result<()> {
        self.driver.view_now()
    }

    /// The accepted request `id` (not a rejection).
    pub fn get(&mut self, id: &str) -> Result<Option<RequestRow>> {
        self.driver.read(|db| db.request(id))
    }

    /// The request `id`, or else its newest rejection.
    pub fn get_any(&mut self, id: &str) -> Result<Option<RequestRow>> {
        self.driver.read(|db| db.request_or_rejection(id))
    }

    /// Requests by filter.
    pub fn list(&mut self, filter: &ListFilter) -> Result<Vec<RequestRow>> {
        self.driver.read(|db| db.requests(filter))
    }

    // ---- feeds -----------------------------------------------------------------------

    /// New accepted requests after event position `after` (at most `limit` positions
    /// read): each one's `accepted` event. A feed started at [`Queue::events_head`] sees
    /// only what arrives from then on.
    pub fn feed(&mut self, after: FeedPos, limit: usize) -> Result<FeedPage> {
        self.driver.read(|db| feed::new_requests(db, after, limit))
    }

    /// The newest position in the event log (0 for an empty log): a feed started here
    /// sees only what happens from now on. Positions are in commit order on both drivers
    /// ([`driver::feed`]).
    pub fn events_head(&mut self) -> Result<FeedPos> {
        self.driver.read(|db| db.events_head())
    }

    /// Events of `kinds` about accepted requests that match `filter` (its contexts,
    /// agent, intent and text; status, limit and order are ignored), after event position
    /// `after`, at most `limit` positions read.
    pub fn request_events(
        &mut self,
        after: FeedPos,
        kinds: &[EventKind],
        filter: &ListFilter,
        limit: usize,
    ) -> Result<EventPage> {
        self.driver
            .read(|db| feed::request_events(db, after, kinds, filter, limit))
    }

    /// The open requests (of one context), oldest first.
    pub fn open_requests(&mut self, context: Option<&str>) -> Result<Vec<RequestRow>> {
        self.driver.read(|db| db.open_requests(context))
    }

    // ---- the audit -------------------------------------------------------------------

    /// Final and open requests with their questions, by filter.
    pub fn history(&mut self, filter: &HistoryFilter) -> Result<Vec<HistoryRow>> {
        let now = self.driver.now()?;
        self.driver.read(|db| history::history(db, filter, now))
    }

    /// Counts, waits and approval rates since a time.
    pub fn stats(&mut self, since: Option<Millis>) -> Result<Stats> {
        let now = self.driver.now()?;
        self.driver.read(|db| history::stats(db, since, now))
    }

    /// The open requests (pending and claimed) counted by status and context, and the
    /// creation time of the oldest pending one: what the metrics show, read through the
    /// status index, so its cost follows the open requests, not the history.
    pub fn open_counts(&mut self) -> Result<OpenCounts> {
        self.driver.read(|db| history::open_counts(db))
    }

    /// The events of one request.
    pub fn events(&mut self, request_id: &str) -> Result<Vec<Event>> {
        self.driver.read(|db| db.events_of_request(request_id))
    }

    /// Verify the record in one snapshot: the store's own integrity, the event chain, the
    /// `anchors` given, and every request row against its events.
    pub fn verify(&mut self, anchors: &[(PathBuf, Anchor)]) -> Result<Verified> {
        let key_dir = self.driver.key_dir();
        self.driver
            .snapshot(|db| audit::verify(db, key_dir.as_deref(), anchors))
    }

    /// Every record in one snapshot, as (type, fields) in a stable order.
    pub fn export(&mut self, sink: ExportSink<'_>) -> Result<()> {
        self.driver.export(sink)
    }

    /// Load another store's [`Queue::export`] into this one, which must be empty, in one
    /// transaction: every row as it was (positions, times, the chain's hashes), so that
    /// `audit verify` passes on the copy. Returns how many records were loaded.
    pub fn import(&mut self, records: &mut dyn Iterator<Item = Result<Record>>) -> Result<u64> {
        self.driver.import(records)
    }

    /// Remove the final requests (answered, cancelled, aborted, rejected) finished before
    /// `before`, with their questions and the prefix of the event log that concerns them,
    /// in one write transaction: every removed record goes to `export` first, and
    /// [`PruneExport::sync`] makes it durable before the commit. The removed prefix is
    /// summarised by a `pruned` event carrying its head (a [`chain::Checkpoint`]), so the
    /// chain still verifies from there ([`chain::walk_start`]). Pending and claimed
    /// requests are never removed; neither is any event of a request that stays, so the
    /// prefix stops at the first such event ([`Pruned::stopped_at`]), or before the
    /// request that would exceed `limit` (one transaction holds the write lock while it
    /// runs: a limit keeps it short).
    pub fn prune(
        &mut self,
        before: Millis,
        limit: Option<u64>,
        actor: &Actor,
        export: &mut dyn PruneExport,
    ) -> Result<Pruned> {
        let (mut pruned, ids) = self.driver.write(Write::Alone, |db, now| {
            prune::prune(db, now, before, limit, actor, &mut *export)
        })?;
        if ids.is_empty() {
            return Ok(pruned);
        }
        self.driver.write(Write::Plain, |db, _| {
            prune::free_outcomes(db, ids, &mut pruned, &mut *export)
        })?;
        Ok(pruned)
    }

    // ---- other writers -----------------------------------------------------------------

    /// A way to learn of commits other processes or hosts make, when the backend has one
    /// (`None`: SQLite, whose writers on the one host publish their own outcomes): the
    /// commits that make an outcome of this store's origin due, and with `feed` every
    /// commit that appended an event (for a host that serves reviewers or runs hooks).
    pub fn wakeups(&mut self, feed: bool) -> Result<Option<Box<dyn Wakeups>>> {
        self.driver.wakeups(feed)
    }

    // ---- web tokens ------------------------------------------------------------------

    /// Record a new web token by its lookup key and hash (the token itself is never
    /// stored); `Error::Invalid` when the name is taken.
    pub fn token_create(
        &mut self,
        name: &str,
        role: crate::core::access::Role,
        context: Option<&str>,
        lookup: &str,
        hash: &[u8],
    ) -> Result<WebToken> {
        self.driver.write(Write::Swept, |db, now| {
            tokens::create(db, now, name, role, context, lookup, hash)
        })
    }

    /// Every web token, revoked ones included, by name.
    pub fn tokens(&mut self) -> Result<Vec<WebToken>> {
        self.driver.read(|db| tokens::list(db))
    }

    /// Revoke the token `name`; `false` when it was revoked already,
    /// `Error::TokenNotFound` when there is none.
    pub fn token_revoke(&mut self, name: &str) -> Result<bool> {
        self.driver
            .write(Write::Swept, |db, now| tokens::revoke(db, now, name))
    }

    /// The token with this lookup key, revoked or not (a read).
    pub fn token_credential(&mut self, lookup: &str) -> Result<Option<TokenCredential>> {
        self.driver.read(|db| tokens::by_lookup(db, lookup))
    }
}

//! [`Queue`]: the one implementation of [`Store`], over any [`Driver`].
//!
//! Each use-case's transaction is composed here, once: which rule runs, in which kind of
//! transaction (a write that sweeps first, a write without the sweep, a write alone, a
//! read), and at which time. The backends used to compose the same rules twice, in two
//! `impl Store` blocks that were one-line calls of the same functions in the same order;
//! now a backend is only its [`Driver`] (`SqliteStore` and `PgStore` are this type over
//! theirs).

use std::path::PathBuf;

use super::{
    agents, answers, audit, feed, history, leases, outbox, prune, requests, sweep, tokens,
};
use crate::clock::Millis;
use crate::core::audit::{Actor, EventKind};
use crate::error::{Error, Result};
use crate::protocol::Outcome;
use crate::store::driver::{Driver, Write};
use crate::store::{
    AgentInfo, Anchor, AskInput, Asked, Delivery, DeliveryCounts, Entered, Event, EventPage,
    ExportSink, FeedPage, FeedPos, HistoryFilter, HistoryRow, HostMark, InboxInput, InboxVerdict,
    Lease, LeaseInfo, LeaseRef, ListFilter, OpenCounts, Provided, ProviderAct, ProviderFile,
    PruneExport, Pruned, Record, Registered, RequestRow, Revoked, Route, SlackMessage, Stats,
    Store, Swept, TokenCredential, Verified, Wakeups, WebToken,
};

/// The queue over one driver: every [`Store`] method is a rule of [`super`] run in a
/// transaction of `D`.
#[derive(Debug)]
pub struct Queue<D> {
    driver: D,
    /// The config file's quorum policy (issue 30), applied to every ask.
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
}

impl<D: Driver> Store for Queue<D> {
    fn set_quorum_policy(&mut self, policy: std::sync::Arc<crate::core::quorum::Policy>) {
        self.policy = policy;
    }

    fn ask(&mut self, input: AskInput) -> Result<Asked> {
        let policy = self.policy.clone();
        self.driver.write(Write::Swept, |db, now| {
            requests::accept_or_reject(db, now, input, &policy)
        })
    }

    fn ingest(&mut self, inputs: Vec<InboxInput>) -> Result<Vec<InboxVerdict>> {
        let policy = self.policy.clone();
        self.driver.write(Write::Swept, |db, now| {
            requests::ingest(db, now, inputs, &policy)
        })
    }

    fn abort(&mut self, id: &str, reason: Option<&str>, actor: &Actor) -> Result<Outcome> {
        self.driver.write(Write::Swept, |db, now| {
            answers::abort(db, now, id, reason, actor)
        })
    }

    fn provide(&mut self, lease: &LeaseRef, act: ProviderAct) -> Result<Provided> {
        let policy = self.policy.clone();
        self.driver.write(Write::Swept, |db, now| {
            answers::provide(db, now, lease, &act, &policy.people)
        })
    }

    fn provide_by_link(
        &mut self,
        link: &crate::store::driver::links::LinkUse,
        lease: &LeaseRef,
        act: ProviderAct,
    ) -> Result<Provided> {
        let policy = self.policy.clone();
        self.driver.write(Write::Swept, |db, now| {
            super::links::provide_by_link(db, now, link, lease, &act, &policy.people)
        })
    }

    fn link_used(&mut self, link_id: &str) -> Result<bool> {
        self.driver.read(|db| super::links::used(db, link_id))
    }

    fn apply_answer_files(
        &mut self,
        files: &[ProviderFile],
    ) -> Result<Vec<std::result::Result<Option<Outcome>, Error>>> {
        let policy = self.policy.clone();
        self.driver.write(Write::Swept, |db, now| {
            answers::apply_answer_files(db, now, files, &policy.people)
        })
    }

    fn next_for_lease(
        &mut self,
        context: &str,
        lease_id: i64,
        after: FeedPos,
    ) -> Result<Option<String>> {
        self.driver
            .read(|db| answers::next_for_lease(db, context, lease_id, after))
    }

    fn register_as(
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

    fn take_over_host(&mut self, host_id: &str) -> Result<Vec<Revoked>> {
        self.driver
            .write(Write::Swept, |db, now| leases::take_over(db, now, host_id))
    }

    fn heartbeat(&mut self, token: &str) -> Result<Lease> {
        self.driver
            .write(Write::Swept, |db, now| leases::heartbeat(db, now, token))
    }

    fn release(&mut self, token: &str) -> Result<bool> {
        self.driver
            .write(Write::Swept, |db, now| leases::release(db, now, token))
    }

    fn revoke(&mut self, context: &str, by: &str, reason: Option<&str>) -> Result<Revoked> {
        self.driver.write(Write::Swept, |db, now| {
            leases::revoke(db, now, context, by, reason)
        })
    }

    fn authenticate(&mut self, token: &str) -> Result<Lease> {
        let now = self.driver.now()?;
        self.driver.read(|db| leases::authenticate(db, token, now))
    }

    fn lease_info(&mut self, token: &str) -> Result<LeaseInfo> {
        let now = self.driver.now()?;
        self.driver.read(|db| leases::info(db, token, now))
    }

    fn lease_status(&mut self, context: Option<&str>) -> Result<Vec<LeaseInfo>> {
        let now = self.driver.now()?;
        self.driver.read(|db| leases::status(db, context, now))
    }

    fn agent_enter(
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

    fn agent_heartbeat(&mut self, id: &str, instance: &str) -> Result<AgentInfo> {
        self.driver.write(Write::Swept, |db, now| {
            agents::heartbeat(db, now, id, instance)
        })
    }

    fn agent_exit(&mut self, id: &str, instance: &str) -> Result<Vec<String>> {
        self.driver
            .write(Write::Swept, |db, now| agents::exit(db, now, id, instance))
    }

    fn agents(&mut self, live_only: bool) -> Result<Vec<AgentInfo>> {
        let now = self.driver.now()?;
        self.driver.read(|db| agents::list(db, now, live_only))
    }

    fn sweep(&mut self) -> Result<Option<Swept>> {
        // A cheap indexed read first: almost always, nothing is due.
        let now = self.driver.now()?;
        match self.driver.read(|db| db.next_due())? {
            Some(due) if due < now => {}
            _ => return Ok(None),
        }
        self.driver
            .write(Write::Plain, |db, now| sweep::sweep(db, now).map(Some))
    }

    fn next_due(&mut self) -> Result<Option<Millis>> {
        self.driver.read(|db| db.next_due())
    }

    fn clock_now(&mut self) -> Result<Millis> {
        self.driver.now()
    }

    fn set_context_ladders(&mut self, policies: &[(String, String)]) -> Result<()> {
        self.driver
            .write(Write::Plain, |db, _| db.replace_context_ladders(policies))
    }

    fn add_delivery_routes(&mut self, routes: &[Route]) -> Result<()> {
        self.driver
            .write(Write::Plain, |db, _| db.insert_delivery_routes(routes))
    }

    fn deliveries_due(
        &mut self,
        routes: &[Route],
        now: Millis,
        limit: usize,
    ) -> Result<Vec<Delivery>> {
        self.driver.read(|db| db.deliveries_due(routes, now, limit))
    }

    fn next_delivery_due(&mut self, routes: &[Route]) -> Result<Option<Millis>> {
        self.driver.read(|db| db.next_delivery_due(routes))
    }

    fn mark_delivered(&mut self, id: &str, now: Millis) -> Result<()> {
        self.driver.read(|db| db.mark_delivered(id, now))
    }

    fn mark_delivery_failed(&mut self, id: &str, next_ms: Millis, error: &str) -> Result<()> {
        self.driver
            .read(|db| db.mark_delivery_failed(id, next_ms, error))
    }

    fn deliveries(&mut self, request_id: &str) -> Result<Vec<Delivery>> {
        self.driver.read(|db| db.deliveries_of_request(request_id))
    }

    fn delivery_counts(&mut self) -> Result<Vec<DeliveryCounts>> {
        self.driver.read(|db| db.delivery_counts())
    }

    fn record_slack_message(
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

    fn slack_messages(&mut self, request_id: &str) -> Result<Vec<SlackMessage>> {
        self.driver
            .read(|db| super::slack::messages(db, request_id))
    }

    fn slack_message_of_delivery(&mut self, delivery_id: &str) -> Result<Option<SlackMessage>> {
        self.driver
            .read(|db| super::slack::message_of_delivery(db, delivery_id))
    }

    fn outbox_pending(&mut self, after: i64, limit: usize) -> Result<Vec<(i64, Outcome)>> {
        let origin = self.driver.origin().map(str::to_string);
        self.driver
            .read(|db| outbox::pending(db, origin.as_deref(), after, limit))
    }

    fn mark_outbox_written(&mut self, keys: &[i64]) -> Result<()> {
        self.driver
            .write(Write::Unsynced, |db, _| outbox::mark_written(db, keys))
    }

    fn while_open(
        &mut self,
        ids: Option<&[&str]>,
        remove: &mut dyn FnMut(&[String]) -> Result<usize>,
    ) -> Result<usize> {
        self.driver
            .write(Write::Plain, |db, _| outbox::while_open(db, ids, remove))
    }

    fn view_now(&mut self) -> Result<()> {
        self.driver.view_now()
    }

    fn get(&mut self, id: &str) -> Result<Option<RequestRow>> {
        self.driver.read(|db| db.request(id))
    }

    fn get_any(&mut self, id: &str) -> Result<Option<RequestRow>> {
        self.driver.read(|db| db.request_or_rejection(id))
    }

    fn list(&mut self, filter: &ListFilter) -> Result<Vec<RequestRow>> {
        self.driver.read(|db| db.requests(filter))
    }

    fn feed(&mut self, after: FeedPos, limit: usize) -> Result<FeedPage> {
        self.driver.read(|db| feed::new_requests(db, after, limit))
    }

    fn events_head(&mut self) -> Result<FeedPos> {
        self.driver.read(|db| db.events_head())
    }

    fn request_events(
        &mut self,
        after: FeedPos,
        kinds: &[EventKind],
        filter: &ListFilter,
        limit: usize,
    ) -> Result<EventPage> {
        self.driver
            .read(|db| feed::request_events(db, after, kinds, filter, limit))
    }

    fn open_requests(&mut self, context: Option<&str>) -> Result<Vec<RequestRow>> {
        self.driver.read(|db| db.open_requests(context))
    }

    fn history(&mut self, filter: &HistoryFilter) -> Result<Vec<HistoryRow>> {
        let now = self.driver.now()?;
        self.driver.read(|db| history::history(db, filter, now))
    }

    fn stats(&mut self, since: Option<Millis>) -> Result<Stats> {
        let now = self.driver.now()?;
        self.driver.read(|db| history::stats(db, since, now))
    }

    fn open_counts(&mut self) -> Result<OpenCounts> {
        self.driver.read(|db| history::open_counts(db))
    }

    fn events(&mut self, request_id: &str) -> Result<Vec<Event>> {
        self.driver.read(|db| db.events_of_request(request_id))
    }

    fn verify(&mut self, anchors: &[(PathBuf, Anchor)]) -> Result<Verified> {
        let key_dir = self.driver.key_dir();
        self.driver
            .snapshot(|db| audit::verify(db, key_dir.as_deref(), anchors))
    }

    fn export(&mut self, sink: ExportSink<'_>) -> Result<()> {
        self.driver.export(sink)
    }

    fn import(&mut self, records: &mut dyn Iterator<Item = Result<Record>>) -> Result<u64> {
        self.driver.import(records)
    }

    fn prune(
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

    fn wakeups(&mut self, feed: bool) -> Result<Option<Box<dyn Wakeups>>> {
        self.driver.wakeups(feed)
    }

    fn token_create(
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

    fn tokens(&mut self) -> Result<Vec<WebToken>> {
        self.driver.read(|db| tokens::list(db))
    }

    fn token_revoke(&mut self, name: &str) -> Result<bool> {
        self.driver
            .write(Write::Swept, |db, now| tokens::revoke(db, now, name))
    }

    fn token_credential(&mut self, lookup: &str) -> Result<Option<TokenCredential>> {
        self.driver.read(|db| tokens::by_lookup(db, lookup))
    }
}

//! The store's tests, outside the library: one conformance suite of the queue's behaviour
//! and, beside it, the tests of one driver.
//!
//! The conformance suite is [`scenarios`], [`lifecycle`] and [`rules`]: every lifecycle rule written once as a function
//! generic over [`Store`], reached only through the trait and the drivers' public
//! constructors. [`conformance!`] instantiates each one per driver, so the same scenario runs
//! as `sqlite::NAME` (a real SQLite file in a temporary directory) and `postgres::NAME` (a
//! fresh database on the throwaway server of [`throwaway::shared`]: the one named by
//! `DSHQ_TEST_POSTGRES`, as `contrib/test/run` starts it, else one this process starts). A
//! PostgreSQL scenario that cannot reach its server fails, saying why; none is skipped.
//!
//! The driver-specific modules test what only one driver has: SQLite's migrations, pragmas,
//! file locking and its internal functions ([`sqlite_driver`]); PostgreSQL's races between
//! connections ([`pg_queue`]), its audit side, export and import ([`pg_audit`]), prune
//! ([`pg_prune`]) and TLS ([`pg_tls`]).

#[path = "../support/throwaway.rs"]
#[allow(dead_code)]
mod throwaway;

mod delegation;
mod drivers;
mod ladder;
mod lifecycle;
mod links;
mod pg_audit;
mod pg_prune;
mod pg_queue;
mod pg_tls;
mod push;
mod quorum;
mod rules;
mod scenarios;
mod sign_in;
mod slack;
mod sqlite_driver;
mod telegram;
mod throwaway_server;

#[allow(unused_imports)]
use dshq::store::Store;

/// Instantiates each named scenario (`module::function`) once per driver: `sqlite::NAME` and
/// `postgres::NAME`, each calling the one generic function with that driver's constructor.
macro_rules! conformance {
    ($($module:ident :: $name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[test]
                fn $name() {
                    crate::$module::$name(crate::drivers::sqlite);
                }
            )*
        }

        mod postgres {
            $(
                #[test]
                fn $name() {
                    crate::$module::$name(crate::drivers::postgres);
                }
            )*
        }
    };
}

conformance!(
    quorum::quorum_two_of_three_is_met_once_by_distinct_reviewers,
    quorum::quorum_a_decline_vetoes_unless_it_is_a_vote,
    quorum::quorum_the_policy_wins_and_a_group_restricts_the_voters,
    quorum::quorum_counts_a_slack_reviewer_once_whichever_account,
    quorum::quorum_counts_persons_not_faces,
    scenarios::ask_claim_answer_outcome,
    scenarios::lease_expiry_returns_the_claim,
    scenarios::a_stale_lease_cannot_act,
    scenarios::a_rejection_records_its_actor,
    scenarios::the_use_cases_compose,
    scenarios::the_event_feed_pages_in_order,
    scenarios::the_request_feed_sees_each_accepted_request_once,
    scenarios::prune_keeps_open_requests_and_verifies,
    scenarios::prune_keeps_the_newest_request,
    scenarios::one_inbox_batch_judges_each_file_against_the_files_before_it,
    scenarios::a_host_takes_over_only_its_own_leases,
    scenarios::edits_are_kept_recorded_and_verified,
    scenarios::a_batch_sees_its_own_new_rows_and_numbers_them_without_gaps,
    lifecycle::accept_claim_answer,
    lifecycle::answering_a_pending_request_claims_it_implicitly,
    lifecycle::a_bad_answer_changes_nothing,
    lifecycle::a_final_request_never_changes,
    lifecycle::cancelled_and_aborted_are_final_too,
    lifecycle::abort_needs_no_lease,
    lifecycle::a_cancel_by_the_lease_is_ask_cancelled,
    lifecycle::an_unknown_request_is_not_found,
    lifecycle::a_second_register_is_duplicate_provider_and_the_first_stays,
    lifecycle::a_heartbeat_extends_by_the_ttl_and_cannot_revive,
    lifecycle::a_stale_lease_cannot_claim_or_answer_after_a_new_one,
    lifecycle::a_release_twice_is_ok_and_returns_claims,
    lifecycle::a_forged_token_is_lease_expired,
    lifecycle::a_lease_of_another_context_is_wrong_context,
    lifecycle::claim_next_takes_the_oldest_pending,
    rules::idempotent_redelivery_is_accepted_once,
    rules::different_content_under_same_id_is_duplicate_id,
    rules::a_request_on_a_tool_call_is_the_calls,
    rules::rejected_input_does_not_reserve_its_id,
    rules::registry_decides_who_may_ask,
    rules::require_provider_consults_the_live_lease_of_the_context,
    rules::deadline_passing_aborts_on_the_next_write,
    rules::lease_past_expiry_is_dead_before_any_sweep_and_the_sweep_returns_its_claims,
    rules::sweep_reports_what_it_ended,
    rules::a_failed_write_still_records_what_its_sweep_ended,
    rules::identical_answer_is_request_final_except_as_a_replay_by_the_same_lease,
    rules::every_state_change_appends_an_event_and_the_chain_verifies,
    rules::refused_operations_append_no_event,
    rules::register_returns_an_unguessable_token,
    ladder::the_ladder_reminds_escalates_and_expires_each_as_an_event,
    ladder::a_declared_default_is_used_on_expiry_and_attributed_to_policy,
    ladder::a_ladder_never_decides_unless_declared,
    ladder::deliveries_are_written_with_their_events,
    ladder::each_channel_has_its_own_rows,
    ladder::who_was_told_hears_the_end,
    ladder::prune_takes_delivered_rows_with_their_request,
    slack::slack_messages_are_recorded_once_per_delivery,
    telegram::telegram_messages_are_recorded_once_per_delivery_and_chat,
    ladder::a_context_policy_applies_under_the_askers_own_ladder,
    links::a_mail_link_answers_once,
    push::push_subscriptions_are_one_per_device_and_push_rows_are_written,
    push::push_reached_devices_are_recorded_per_delivery_and_pruned_with_it,
    sign_in::a_sign_in_is_one_chained_event,
    delegation::away_notices_are_checked_recorded_and_end,
    delegation::a_delegate_answers_for_the_away_person,
    delegation::a_person_and_their_delegate_never_meet_a_quorum_alone,
    sign_in::a_sign_ins_groups_admit_its_person_to_a_quorum_of_that_group,
);

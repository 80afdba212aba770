//! # ma2h-store-contract
//!
//! The behaviour every store adapter (SQLite, DynamoDB, …) must show behind the
//! [`MessageStore`] and [`CredentialStore`] ports, as executable checks. Each check is a public
//! async function named for the behaviour; it takes a **fresh, empty** store and panics with a
//! descriptive message on the first violation. [`store_contract_tests!`] turns every check into a
//! `#[test]` of its own, on a fresh store each, so one failure never hides the others.
//!
//! An adapter's integration test declares them all with one line; the factory is an `async fn`
//! returning `Option<(store, guard)>` (`None` skips, e.g. without a DynamoDB endpoint; the guard,
//! such as a temporary directory, lives as long as the check):
//!
//! ```ignore
//! async fn fresh() -> Option<(MyStore, ())> { Some((MyStore::new_empty(), ())) }
//! ma2h_store_contract::store_contract_tests!(fresh);
//! ```
//!
//! Conventions the checks rely on (see also the port docs in `ma2h_core::ports`):
//! * timestamps are kept to whole milliseconds (the fixtures only use such instants);
//! * an idempotency claim is live while `now < expires_at`;
//! * `due_expiries` is ordered by `expires_at` ascending; `list_messages` follows the listing order (ties by id);
//! * `incr_counter` judges a window's expiry against the `now` it is given (the Hub clock).

use ma2h_core::audit::store::AuditStore;
use ma2h_core::channels::outbox::NotificationStore;
use ma2h_core::decisions::grant_store::GrantStore;
use ma2h_core::messages::triage::TriageStore;
use ma2h_core::ports::{CredentialStore, MailboxStore, MessageStore, SessionStore};

pub mod audit;
pub mod credentials;
pub mod fixtures;
pub mod grants;
pub mod inter_agent;
pub mod listing;
pub mod mailbox;
pub mod maintenance;
pub mod messages;
pub mod notifications;
pub mod push;
pub mod sessions;

pub use audit::*;
pub use credentials::*;
pub use grants::*;
pub use inter_agent::*;
pub use listing::*;
pub use mailbox::*;
pub use maintenance::*;
pub use messages::*;
pub use notifications::*;
pub use push::*;
pub use sessions::*;

/// Every store port, as one bound.
pub trait Store:
    MessageStore + CredentialStore + MailboxStore + SessionStore + NotificationStore + TriageStore + GrantStore + AuditStore
{
}

impl<T> Store for T where
    T: MessageStore
        + CredentialStore
        + MailboxStore
        + SessionStore
        + NotificationStore
        + TriageStore
        + GrantStore
        + AuditStore
{
}

/// Calls `$crate::$callback! { $($args)*; check, check, … }` with every check's name: the one list of
/// checks, so a new check is declared once and runs on every store.
#[macro_export]
macro_rules! for_each_check {
    ($callback:ident $(, $args:tt)*) => {
        $crate::$callback! { $($args),*;
            insert_then_get_round_trips_every_field,
            another_accounts_id_is_missing,
            live_claim_returns_existing_and_writes_nothing,
            expired_claim_is_replaced,
            first_complete_wins_second_sees_already_terminal,
            complete_after_expires_at_is_refused_unless_it_is_the_expiry,
            concurrent_completes_have_exactly_one_winner,
            a_callers_read_of_the_message_never_overrides_the_store,
            due_expiries_returns_due_open_messages_oldest_first,
            purge_leaves_tombstones_and_drops_expired_state,
            count_open_counts_only_open_asks_and_tasks_of_the_agent,
            admission_counts_the_window_and_bounds_the_open_count,
            list_messages_filters_and_returns_summaries,
            listings_are_ordered_and_paged_by_keyset,
            open_counts_count_every_open_message,
            search_matches_every_term_newest_first_in_one_account,
            a_flood_from_one_agent_hides_nothing,
            incr_counter_is_atomic_under_concurrency,
            incr_counter_restarts_after_expiry,
            read_counter_sees_live_counts_only,
            credentials_put_lookup_list_update,
            triage_records_are_compare_and_set_per_message,
            grants_are_found_by_agent_and_key_counted_and_revoked_once,
            the_account_lists_each_of_its_agents_once,
            operator_activity_is_kept_per_account_and_never_moves_backwards,
            devices_are_kept_per_operator_replaced_by_id_and_removed_once,
            passkeys_are_found_by_id_never_taken_over_and_removed_once,
            audit_entries_are_read_per_shard_in_order_and_checkpoints_stored_once,
            secrets_put_get_replace_scoped,
            a_push_terminal_writes_the_obligation_atomically,
            due_pushes_are_claimed_once_and_attempts_recorded,
            bindings_and_secret_names_are_scoped,
            mailbox_entries_round_trip_and_the_depth_cap_writes_nothing,
            claims_are_fifo_bounded_isolated_and_hidden_for_the_window,
            concurrent_claims_never_deliver_one_entry_twice_in_a_window,
            acks_close_only_own_delivered_live_entries,
            due_entries_close_and_purge_from_indexes_and_presence_keeps_the_latest,
            responses_are_stamped_once_and_the_first_ack_wins,
            sessions_register_renew_and_end_by_compare_and_set,
            an_operator_close_records_a_stop_that_gates_registration_until_lifted,
            concurrent_session_transitions_leave_exactly_one_terminal,
            session_addressed_entries_reach_only_their_session_and_bounce_with_prior,
            lapsed_sessions_expire_from_an_index_and_are_purged_once_bounced,
            a_session_renewed_early_is_not_expired_at_its_first_lease_end,
            a_response_entry_commits_with_its_terminal_only,
            an_addressed_insert_commits_its_entry_with_the_message_or_not_at_all,
            principal_addressed_entries_reach_only_session_drains_one_claimant_per_window,
            a_stream_claim_starts_the_window_without_delivery_evidence_and_can_be_acked,
            a_session_bounce_spares_response_and_receipt_entries_and_returns_what_it_closed,
            a_drained_command_entry_is_an_orphan_when_its_retention_lapses,
            the_account_policy_is_written_by_compare_and_set,
            the_notification_outbox_is_created_once_claimed_once_and_saved_by_compare_and_set,
            concurrent_claims_of_one_notification_have_one_winner,
            a_wake_up_never_breaks_a_running_lease
        }
    };
}

/// One `#[tokio::test]` per check, named for it, each on a fresh store from `$fresh` (an
/// `async fn() -> Option<(S, G)>`; `None` skips). The concurrency checks spawn tasks, so the
/// runtime is multi-threaded.
#[macro_export]
macro_rules! store_contract_tests {
    ($fresh:path) => {
        $crate::for_each_check!(__store_contract_test, $fresh);
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __store_contract_test {
    ($fresh:path; $($check:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $check() {
                let Some((store, _guard)) = $fresh().await else { return };
                $crate::$check(store).await;
            }
        )*
    };
}

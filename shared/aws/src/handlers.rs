//! The non-HTTP functions: `deliver` (SQS consumer with partial batch failures) and `sweep`
//! (the EventBridge schedule). Both run the same use cases as the local Hub's workers.

use std::sync::Arc;

use aws_lambda_events::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use ma2h_core::messages::records::PushStatus;
use ma2h_core::messages::sweep;
use ma2h_core::messages::sweep::SweepReport;
use ma2h_core::ports::PushSender;
use ma2h_core::push::deliver;
use ma2h_delivery_http::{EgressPolicy, HttpPushSender};
use ma2h_queue_sqs::PushJob;

use crate::{Deployment, Error};

/// The §9.4-guarded sender for this deployment, with its delivery slots. Built once per
/// container: an attempt whose (account, host), host or account is at its cap goes back to the
/// queue for a second rather than holding up the rest of the batch.
pub fn deliverer(dep: &Deployment) -> Result<Arc<deliver::Deliverer>, Error> {
    let policy = EgressPolicy::from_settings(&dep.hub.settings)?;
    let sender: Arc<dyn PushSender> = Arc::new(HttpPushSender::new(policy)?);
    Ok(Arc::new(deliver::Deliverer::new(&dep.hub, sender)))
}

/// How long an announced job whose terminal has not committed yet stays invisible.
const NOT_YET_COMMITTED_DELAY_SECS: i32 = 1;

fn failure(id: &str) -> BatchItemFailure {
    let mut f = BatchItemFailure::default();
    f.item_identifier = id.to_owned();
    f
}

/// One SQS batch: attempt each push once, all concurrently (a stalled receiver delays only its
/// own records). A retryable outcome stays on the queue, made visible again after the backoff
/// the use case chose (visibility-timeout backoff); the queue's redrive policy moves a message
/// that keeps failing to the DLQ. Delivered, failed and malformed jobs are consumed — the failed
/// state is in the store and shown to operators.
pub async fn deliver(dep: &Deployment, deliverer: &Arc<deliver::Deliverer>, event: SqsEvent) -> SqsBatchResponse {
    let attempts = event.records.into_iter().map(|record| async move {
        let message_id = record.message_id.clone().unwrap_or_default();
        if let Some((account, payload)) = record.body.as_deref().and_then(ma2h_queue_sqs::SlackJob::parse) {
            // Issue 20: a Slack press the HTTP function verified and acknowledged; apply it here.
            return match deliverer.notifier().apply_slack(&dep.hub, &account, &payload).await {
                Ok(()) => None,
                Err(e) => {
                    tracing::error!(error = %e, "slack interaction failed; SQS will redeliver");
                    Some(failure(&message_id))
                }
            };
        }
        let Some(job) = record.body.as_deref().and_then(PushJob::parse) else {
            tracing::warn!(sqs_message_id = %message_id, "dropping a malformed push job");
            return None;
        };
        let id = job.id.clone();
        if job.notify {
            // Issue 20: a channel notification item (claimed conditionally: a duplicate job or
            // one racing the sweep's is a no-op). Its retries live in the store, not the queue.
            let notifier = deliverer.notifier().with_mailer(Arc::new(ma2h_delivery_smtp::SmtpMailer));
            return match notifier.process(&dep.hub, &job.account, &job.id).await {
                Ok(()) => None,
                Err(e) => {
                    tracing::error!(message_id = %id, error = %e, "notification item failed; SQS will redeliver");
                    Some(failure(&message_id))
                }
            };
        }
        let tried = match &job.announced {
            None => deliverer.attempt(&dep.hub, &job.account, &job.id).await,
            Some((resolution, at)) => {
                match deliverer.attempt_announced(&dep.hub, &job.account, &job.id, resolution, *at).await {
                    Ok(deliver::Announced::Tried(t)) => Ok(t),
                    Ok(deliver::Announced::NotYetCommitted) => {
                        // announced a moment before its terminal commits: look again shortly
                        if let Some(handle) = &record.receipt_handle {
                            dep.queue.delay(handle, NOT_YET_COMMITTED_DELAY_SECS).await;
                        }
                        return Some(failure(&message_id));
                    }
                    Err(e) => Err(e),
                }
            }
        };
        match tried {
            Ok(Some(track)) if track.status == PushStatus::Pending => {
                // the backoff the use case recorded becomes the message's invisibility
                if let Some(handle) = &record.receipt_handle {
                    dep.queue.hide_until(handle, track.next_attempt_at, dep.hub.clock.now()).await;
                }
                Some(failure(&message_id))
            }
            Ok(_) => None,
            Err(e) => {
                tracing::error!(message_id = %id, error = %e, "push attempt failed; SQS will redeliver");
                Some(failure(&message_id))
            }
        }
    });
    let mut response = SqsBatchResponse::default();
    response.batch_item_failures = futures_util::future::join_all(attempts).await.into_iter().flatten().collect();
    response
}

/// What one scheduled sweep did: the sweep's report, plus the lost pushes it re-enqueued.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SweepOutcome {
    #[serde(flatten)]
    pub report: SweepReport,
    pub requeued: usize,
    /// Channel notification items that fell due (reminders, escalations, retries, lost jobs).
    pub notifications_requeued: usize,
}

impl std::ops::Deref for SweepOutcome {
    type Target = SweepReport;
    fn deref(&self) -> &SweepReport {
        &self.report
    }
}

/// Apply due expiries (through the `due` index), purge past retention (through `retain`), and
/// re-enqueue push obligations whose queue message was lost between commit and enqueue.
pub async fn sweep(dep: &Deployment) -> Result<SweepOutcome, Error> {
    let report = sweep::sweep_once(&dep.hub).await?;
    let requeued = sweep::requeue_lost_pushes(&dep.hub).await?;
    let notifications_requeued = ma2h_core::channels::notify::requeue_due(&dep.hub, sweep::REQUEUE_BATCH).await?;
    let outcome = SweepOutcome { report, requeued, notifications_requeued };
    tracing::info!(?report, requeued, notifications_requeued, "sweep");
    Ok(outcome)
}

//! Fixed-minute request budgets kept in the message store's counters.

use chrono::{Duration, Timelike as _};

use crate::{Hub, HubError};

/// One fixed-minute budget: the `limit`-th request of the minute under `scope` passes, the next
/// is 429 with the seconds left in the minute. `0` = no limit.
pub(crate) async fn per_minute(hub: &Hub, scope: &str, limit: u32, what: &str) -> Result<(), HubError> {
    if limit == 0 {
        return Ok(());
    }
    let now = hub.clock.now();
    let minute = now.timestamp().div_euclid(60);
    let window_end = now + Duration::seconds(60 - i64::from(now.second()));
    let count = hub.messages.incr_counter(&format!("{scope}/{minute}"), window_end, now).await?;
    if count > u64::from(limit) {
        return Err(HubError::RateLimited {
            message: format!("more than {limit} {what}"),
            retry_after_secs: u64::try_from((window_end - now).num_seconds().max(1)).unwrap_or(1),
        });
    }
    Ok(())
}

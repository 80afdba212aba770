//! The Hub clock (§9.5) and its randomness.
//!
//! Timestamps: stores keep whole milliseconds; the Hub clock yields millisecond precision so
//! every record round-trips exactly.

use ma2h_protocol::time::Timestamp;

/// The Hub clock (§9.5: authoritative for expiry).
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> Timestamp;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        // Millisecond precision: what the stores keep, so records round-trip exactly.
        ma2h_protocol::time::from_millis(chrono::Utc::now().timestamp_millis())
    }
}

/// Randomness for ids, keys and secrets.
pub trait Random: Send + Sync + 'static {
    fn fill(&self, buf: &mut [u8]);
}

/// The operating system's CSPRNG, read 512 bytes at a time per thread: every id used to cost a
/// `getrandom` system call (1.2 % of a submit's CPU). Each byte is handed out once and only by
/// the thread that read it; requests over 64 bytes go to the OS directly.
#[derive(Debug, Clone, Copy, Default)]
pub struct OsRandom;

const POOL_BYTES: usize = 512;

thread_local! {
    /// Unused OS random bytes and where the unused part starts.
    static POOL: std::cell::RefCell<([u8; POOL_BYTES], usize)> = const { std::cell::RefCell::new(([0; POOL_BYTES], POOL_BYTES)) };
}

impl Random for OsRandom {
    fn fill(&self, buf: &mut [u8]) {
        if buf.len() > 64 {
            getrandom::fill(buf).expect("the OS random source is unavailable");
            return;
        }
        POOL.with_borrow_mut(|(pool, used)| {
            if POOL_BYTES - *used < buf.len() {
                getrandom::fill(pool).expect("the OS random source is unavailable");
                *used = 0;
            }
            let take = &mut pool[*used..*used + buf.len()];
            buf.copy_from_slice(take);
            take.fill(0); // never handed out twice, nor left readable
            *used += buf.len();
        });
    }
}

/// A clock tests move by hand.
#[derive(Debug)]
pub struct ManualClock(std::sync::Mutex<Timestamp>);

impl ManualClock {
    pub fn new(start: Timestamp) -> Self {
        Self(std::sync::Mutex::new(start))
    }
    pub fn set(&self, t: Timestamp) {
        *self.0.lock().expect("clock poisoned") = t;
    }
    pub fn advance(&self, by: chrono::Duration) {
        let mut t = self.0.lock().expect("clock poisoned");
        *t += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *self.0.lock().expect("clock poisoned")
    }
}

#[cfg(test)]
mod tests {
    use super::{OsRandom, Random};

    #[test]
    fn os_random_never_hands_out_the_same_bytes_twice_across_pool_refills() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..2_000 {
            // 10 bytes: what an id takes; 2,000 draws cross the 512-byte pool ~40 times
            let mut b = [0u8; 10];
            OsRandom.fill(&mut b);
            assert!(seen.insert(b), "a 10-byte draw repeated: {b:?}");
        }
        let (mut big, mut big2) = ([0u8; 100], [0u8; 100]);
        OsRandom.fill(&mut big);
        OsRandom.fill(&mut big2);
        assert_ne!(big, big2);
        assert_ne!(big, [0u8; 100]);
    }
}

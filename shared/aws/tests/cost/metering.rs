//! Counting requests on the real SDK clients. Test-only: nothing here is on a production path;
//! it plugs into `aws_sdk_dynamodb::config::Builder::interceptor` (and the SQS equivalent) of
//! clients that are then handed to `assemble`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::config::interceptors::{
    AfterDeserializationInterceptorContextRef, BeforeSerializationInterceptorContextMut,
    BeforeTransmitInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::operation as op;
use aws_sdk_dynamodb::types::{ConsumedCapacity, ReturnConsumedCapacity};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What went over the wire since the last [`Meter::take`].
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Tally {
    /// HTTP requests (every attempt, retries included: each is billed) per
    /// `service:Operation`, e.g. `dynamodb:TransactWriteItems`, `sqs:SendMessage`.
    pub requests: BTreeMap<String, u64>,
    /// Items DynamoDB evaluated for `Query`/`Scan` (`ScannedCount`): what a read is billed on.
    pub scanned: u64,
    /// Capacity units from `ConsumedCapacity`, when the responses carry it (see
    /// [`Meter::ask_for_capacity`]; moto reports placeholders, real DynamoDB real units).
    pub capacity: f64,
}

impl Tally {
    pub fn total(&self, service: &str) -> u64 {
        self.requests.iter().filter(|(k, _)| k.starts_with(&format!("{service}:"))).map(|(_, v)| v).sum()
    }
    pub fn add(&mut self, other: &Tally) {
        for (k, v) in &other.requests {
            *self.requests.entry(k.clone()).or_default() += v;
        }
        self.scanned += other.scanned;
        self.capacity += other.capacity;
    }
}

/// One tally shared by the interceptors of several clients.
#[derive(Debug, Clone, Default)]
pub struct Meter {
    tally: Arc<Mutex<Tally>>,
    capacity: bool,
}

impl Meter {
    /// Also set `ReturnConsumedCapacity=TOTAL` on every DynamoDB request that takes it.
    pub fn ask_for_capacity(mut self) -> Self {
        self.capacity = true;
        self
    }
    /// The interceptor to register on a client of `service` (the prefix in the tally).
    pub fn interceptor(&self, service: &'static str) -> Counting {
        Counting { service, meter: self.clone() }
    }
    /// The tally so far, reset to zero.
    pub fn take(&self) -> Tally {
        std::mem::take(&mut *self.tally.lock().unwrap())
    }
}

#[derive(Debug)]
pub struct Counting {
    service: &'static str,
    meter: Meter,
}

fn units(c: Option<&ConsumedCapacity>) -> f64 {
    c.and_then(|c| c.capacity_units).unwrap_or(0.0)
}

impl Intercept for Counting {
    fn name(&self) -> &'static str {
        "ma2h-cost-meter"
    }

    fn modify_before_serialization(
        &self,
        context: &mut BeforeSerializationInterceptorContextMut<'_>,
        _rc: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if !self.meter.capacity {
            return Ok(());
        }
        let input = context.input_mut();
        let total = Some(ReturnConsumedCapacity::Total);
        if let Some(i) = input.downcast_mut::<op::get_item::GetItemInput>() {
            i.return_consumed_capacity = total;
        } else if let Some(i) = input.downcast_mut::<op::put_item::PutItemInput>() {
            i.return_consumed_capacity = total;
        } else if let Some(i) = input.downcast_mut::<op::update_item::UpdateItemInput>() {
            i.return_consumed_capacity = total;
        } else if let Some(i) = input.downcast_mut::<op::delete_item::DeleteItemInput>() {
            i.return_consumed_capacity = total;
        } else if let Some(i) = input.downcast_mut::<op::query::QueryInput>() {
            i.return_consumed_capacity = total;
        } else if let Some(i) = input.downcast_mut::<op::scan::ScanInput>() {
            i.return_consumed_capacity = total;
        } else if let Some(i) = input.downcast_mut::<op::transact_write_items::TransactWriteItemsInput>() {
            i.return_consumed_capacity = total;
        } else if let Some(i) = input.downcast_mut::<op::batch_write_item::BatchWriteItemInput>() {
            i.return_consumed_capacity = total;
        }
        Ok(())
    }

    /// Once per attempt that goes on the wire. Both services speak an awsJson protocol, so
    /// the operation is the `X-Amz-Target` header's suffix (`DynamoDB_20120810.GetItem`,
    /// `AmazonSQS.SendMessage`).
    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _rc: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let target = context.request().headers().get("x-amz-target").unwrap_or("?");
        let operation = target.rsplit_once('.').map_or(target, |(_, op)| op);
        let mut tally = self.meter.tally.lock().unwrap();
        *tally.requests.entry(format!("{}:{operation}", self.service)).or_default() += 1;
        Ok(())
    }

    fn read_after_deserialization(
        &self,
        context: &AfterDeserializationInterceptorContextRef<'_>,
        _rc: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Ok(out) = context.output_or_error() else { return Ok(()) };
        let (scanned, capacity) = if let Some(o) = out.downcast_ref::<op::query::QueryOutput>() {
            (o.scanned_count, units(o.consumed_capacity.as_ref()))
        } else if let Some(o) = out.downcast_ref::<op::scan::ScanOutput>() {
            (o.scanned_count, units(o.consumed_capacity.as_ref()))
        } else if let Some(o) = out.downcast_ref::<op::get_item::GetItemOutput>() {
            (0, units(o.consumed_capacity.as_ref()))
        } else if let Some(o) = out.downcast_ref::<op::put_item::PutItemOutput>() {
            (0, units(o.consumed_capacity.as_ref()))
        } else if let Some(o) = out.downcast_ref::<op::update_item::UpdateItemOutput>() {
            (0, units(o.consumed_capacity.as_ref()))
        } else if let Some(o) = out.downcast_ref::<op::delete_item::DeleteItemOutput>() {
            (0, units(o.consumed_capacity.as_ref()))
        } else if let Some(o) = out.downcast_ref::<op::transact_write_items::TransactWriteItemsOutput>() {
            (0, o.consumed_capacity().iter().map(|c| units(Some(c))).sum())
        } else if let Some(o) = out.downcast_ref::<op::batch_write_item::BatchWriteItemOutput>() {
            (0, o.consumed_capacity().iter().map(|c| units(Some(c))).sum())
        } else {
            (0, 0.0)
        };
        let mut tally = self.meter.tally.lock().unwrap();
        tally.scanned += u64::try_from(scanned).unwrap_or(0);
        tally.capacity += capacity;
        Ok(())
    }
}

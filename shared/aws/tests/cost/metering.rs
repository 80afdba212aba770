//! Counting requests on the real SDK clients. Test-only: nothing here is on a production path;
//! it plugs into `aws_sdk_dynamodb::config::Builder::interceptor` (and the SQS equivalent) of
//! clients that are then handed to `assemble`.
//!
//! Besides counting requests it records what DynamoDB bills them on: the read units of every
//! read (from the sizes of the items it returned and whether it was strongly consistent) and,
//! for every write, the items it targeted, whether it ran in a transaction and whether it
//! succeeded — `units.rs` turns those into write units with before/after table snapshots.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::types::AttributeValue;
use aws_smithy_runtime_api::client::interceptors::context::{Input, Output};
use aws_smithy_types::config_bag::{Storable, StoreReplace};

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
    /// Read request units, derived (see [`read_units`]).
    pub rru: f64,
    /// Every write request, for [`crate::units`].
    pub writes: Vec<Write>,
    /// Write request units on the table and on its indexes, filled in by `Env::phase`.
    pub wru_table: u64,
    pub wru_gsi: u64,
    /// The same write units by partition (`crate::units::write_heat`), filled in by `Env::phase`.
    pub heat: crate::units::Heat,
    /// Read units by partition read (index or `table`, partition key value).
    pub read_heat: BTreeMap<(String, String), f64>,
}

/// One billed write request.
#[derive(Debug, Clone, PartialEq)]
pub struct Write {
    pub op: &'static str,
    pub targets: Vec<Target>,
    /// Inside `TransactWriteItems`: every item bills twice.
    pub transactional: bool,
    /// A refused conditional write (or cancelled transaction) is billed too.
    pub ok: bool,
}

/// An item a write request names.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub pk: String,
    pub sk: String,
    /// The new item's size, for a `Put`.
    pub put_size: Option<usize>,
    /// A transaction's `ConditionCheck`: billed, writes nothing.
    pub check_only: bool,
}

/// What a request will be billed on, noted before it is sent (the input is gone afterwards).
#[derive(Debug, Clone)]
enum Draft {
    /// `partition`: the index (or `table`) and partition key value a `GetItem` or `Query` reads;
    /// a `BatchGetItem` is attributed item by item from its output.
    Read {
        consistent: bool,
        partition: Option<(String, String)>,
    },
    Write(Write),
}

/// The partition a `Query` reads: its key condition's first clause, `attr = :value`.
fn query_partition(i: &op::query::QueryInput) -> Option<(String, String)> {
    let first = i.key_condition_expression.as_deref()?.split(" AND ").next()?;
    let (_, placeholder) = first.split_once('=')?;
    let value = i.expression_attribute_values.as_ref()?.get(placeholder.trim())?.as_s().ok()?;
    Some((i.index_name.clone().unwrap_or_else(|| "table".into()), value.clone()))
}

impl Storable for Draft {
    type Storer = StoreReplace<Self>;
}

/// DynamoDB's item size (attribute names + values; numbers approximated as 1 byte per two
/// significant digits + 1), the basis of its request units.
pub fn item_size(item: &HashMap<String, AttributeValue>) -> usize {
    item.iter().map(|(k, v)| k.len() + value_size(v)).sum()
}

fn value_size(v: &AttributeValue) -> usize {
    match v {
        AttributeValue::S(s) => s.len(),
        AttributeValue::N(n) => n.trim_start_matches(['-', '0']).len().div_ceil(2) + 1,
        AttributeValue::B(b) => b.as_ref().len(),
        AttributeValue::L(l) => 3 + l.iter().map(|v| 1 + value_size(v)).sum::<usize>(),
        AttributeValue::M(m) => 3 + m.iter().map(|(k, v)| 1 + k.len() + value_size(v)).sum::<usize>(),
        AttributeValue::Ss(l) => l.iter().map(String::len).sum(),
        _ => 1,
    }
}

/// Read units: a strongly consistent read of up to 4 KB is 1 unit, an eventually consistent
/// one half; a `Query` is billed on the total size of what it read, rounded up once; at least
/// one (half) unit even when nothing was found.
pub fn read_units(bytes: usize, consistent: bool) -> f64 {
    let units = bytes.div_ceil(4096).max(1) as f64;
    if consistent { units } else { units / 2.0 }
}

fn target(key: Option<&HashMap<String, AttributeValue>>, put: Option<&HashMap<String, AttributeValue>>) -> Target {
    let map = put.or(key);
    let s = |k: &str| map.and_then(|m| m.get(k)).and_then(|v| v.as_s().ok()).cloned().unwrap_or_default();
    Target { pk: s("pk"), sk: s("sk"), put_size: put.map(item_size), check_only: false }
}

fn write(op: &'static str, targets: Vec<Target>, transactional: bool) -> Draft {
    Draft::Write(Write { op, targets, transactional, ok: false })
}

/// The billing draft of a DynamoDB request input.
fn draft(input: &Input) -> Option<Draft> {
    if let Some(i) = input.downcast_ref::<op::get_item::GetItemInput>() {
        let pk = i.key.as_ref().and_then(|k| k.get("pk")).and_then(|v| v.as_s().ok()).cloned();
        return Some(Draft::Read {
            consistent: i.consistent_read == Some(true),
            partition: pk.map(|p| ("table".into(), p)),
        });
    }
    if let Some(i) = input.downcast_ref::<op::query::QueryInput>() {
        // an index is always read eventually consistently
        let consistent = i.consistent_read == Some(true) && i.index_name.is_none();
        return Some(Draft::Read { consistent, partition: query_partition(i) });
    }
    if let Some(i) = input.downcast_ref::<op::scan::ScanInput>() {
        return Some(Draft::Read { consistent: i.consistent_read == Some(true), partition: None });
    }
    if let Some(i) = input.downcast_ref::<op::batch_get_item::BatchGetItemInput>() {
        let consistent = i.request_items.iter().flat_map(|m| m.values()).all(|k| k.consistent_read == Some(true));
        return Some(Draft::Read { consistent, partition: None });
    }
    if let Some(i) = input.downcast_ref::<op::put_item::PutItemInput>() {
        return Some(write("PutItem", vec![target(None, i.item.as_ref())], false));
    }
    if let Some(i) = input.downcast_ref::<op::update_item::UpdateItemInput>() {
        return Some(write("UpdateItem", vec![target(i.key.as_ref(), None)], false));
    }
    if let Some(i) = input.downcast_ref::<op::delete_item::DeleteItemInput>() {
        return Some(write("DeleteItem", vec![target(i.key.as_ref(), None)], false));
    }
    if let Some(i) = input.downcast_ref::<op::transact_write_items::TransactWriteItemsInput>() {
        let targets = i
            .transact_items
            .iter()
            .flatten()
            .map(|t| {
                if let Some(p) = &t.put {
                    target(None, Some(&p.item))
                } else if let Some(u) = &t.update {
                    target(Some(&u.key), None)
                } else if let Some(d) = &t.delete {
                    target(Some(&d.key), None)
                } else if let Some(c) = &t.condition_check {
                    Target { check_only: true, ..target(Some(&c.key), None) }
                } else {
                    target(None, None)
                }
            })
            .collect();
        return Some(write("TransactWriteItems", targets, true));
    }
    if let Some(i) = input.downcast_ref::<op::batch_write_item::BatchWriteItemInput>() {
        let targets = i
            .request_items
            .iter()
            .flat_map(|m| m.values())
            .flatten()
            .map(|w| match (&w.put_request, &w.delete_request) {
                (Some(p), _) => target(None, Some(&p.item)),
                (_, Some(d)) => target(Some(&d.key), None),
                _ => target(None, None),
            })
            .collect();
        return Some(write("BatchWriteItem", targets, false));
    }
    None
}

/// The read units of a read's output (`None` for anything else).
fn output_read_units(out: &Output, consistent: bool) -> Option<f64> {
    if let Some(o) = out.downcast_ref::<op::get_item::GetItemOutput>() {
        return Some(read_units(o.item.as_ref().map_or(0, item_size), consistent));
    }
    if let Some(o) = out.downcast_ref::<op::query::QueryOutput>() {
        // `Select=COUNT` returns no items: count each evaluated one as a small index entry.
        let bytes = match &o.items {
            Some(items) if !items.is_empty() => items.iter().map(item_size).sum(),
            _ => usize::try_from(o.scanned_count).unwrap_or(0) * 100,
        };
        return Some(read_units(bytes, consistent));
    }
    if let Some(o) = out.downcast_ref::<op::scan::ScanOutput>() {
        return Some(read_units(o.items().iter().map(item_size).sum(), consistent));
    }
    if let Some(o) = out.downcast_ref::<op::batch_get_item::BatchGetItemOutput>() {
        let items = o.responses.iter().flat_map(|m| m.values()).flatten();
        return Some(items.map(|i| read_units(item_size(i), consistent)).sum());
    }
    None
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
        self.rru += other.rru;
        self.writes.extend(other.writes.iter().cloned());
        self.wru_table += other.wru_table;
        self.wru_gsi += other.wru_gsi;
        for (k, v) in &other.heat {
            *self.heat.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &other.read_heat {
            *self.read_heat.entry(k.clone()).or_default() += v;
        }
    }
    /// Table + index write units.
    pub fn wru(&self) -> u64 {
        self.wru_table + self.wru_gsi
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
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Some(d) = draft(context.input()) {
            cfg.interceptor_state().store_put(d);
        }
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
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let result = context.output_or_error();
        match (cfg.load::<Draft>(), &result) {
            (Some(Draft::Write(w)), _) => {
                let w = Write { ok: result.is_ok(), ..w.clone() };
                self.meter.tally.lock().unwrap().writes.push(w);
            }
            (Some(Draft::Read { consistent, partition }), Ok(out)) => {
                if let Some(u) = output_read_units(out, *consistent) {
                    let mut tally = self.meter.tally.lock().unwrap();
                    tally.rru += u;
                    // Issue 38's read heat: a read bills at least half a unit to its partition.
                    if let Some(p) = partition {
                        *tally.read_heat.entry(p.clone()).or_default() += u.max(0.5);
                    } else if let Some(o) = out.downcast_ref::<op::batch_get_item::BatchGetItemOutput>() {
                        for item in o.responses.iter().flat_map(|m| m.values()).flatten() {
                            if let Some(pk) = item.get("pk").and_then(|v| v.as_s().ok()) {
                                let units = read_units(item_size(item), *consistent);
                                *tally.read_heat.entry(("table".into(), pk.clone())).or_default() += units;
                            }
                        }
                    }
                }
            }
            _ => {}
        }
        let Ok(out) = result else { return Ok(()) };
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

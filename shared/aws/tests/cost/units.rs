//! Write request units, derived from what the meter recorded and two snapshots of the table
//! (before and after a phase), with DynamoDB's published rules:
//!
//! * a write bills 1 unit per started KB of the larger of the item before and after it; inside
//!   `TransactWriteItems` twice that; a refused conditional write (or a cancelled transaction)
//!   is billed as if it had written;
//! * each global secondary index entry the write creates, changes or removes bills 1 unit per
//!   started KB of the entry (its keys, the table's keys and its projected attributes, + 100
//!   bytes); a change of the index's keys is a delete plus a put; a write that changes none of an
//!   index's projected attributes costs that index nothing. *Assumption:* index entries of a
//!   transactional write bill as standard writes.
//!
//! An item written more than once in one phase is billed each time at the larger of its sizes
//! before and after the phase, and its index changes once (the phases here write an item once).

use std::collections::{BTreeMap, HashMap};

use aws_sdk_dynamodb::types::AttributeValue;

use crate::metering::{Write, item_size};

pub type Item = HashMap<String, AttributeValue>;
/// Every item of the table by `(pk, sk)`.
pub type Snapshot = HashMap<(String, String), Item>;

#[derive(Debug, Clone)]
pub enum Projection {
    KeysOnly,
    Include(Vec<String>),
    All,
}

#[derive(Debug, Clone)]
pub struct IndexDef {
    pub name: String,
    pub hash: String,
    pub range: Option<String>,
    pub projection: Projection,
}

/// The table's indexes as `infra/dynamodb-table.json` declares them.
pub fn indexes() -> Vec<IndexDef> {
    let def: serde_json::Value = serde_json::from_str(ma2h_store_dynamodb::provision::TABLE_DEFINITION).unwrap();
    let list = def["GlobalSecondaryIndexes"].as_array().cloned().unwrap_or_default();
    list.iter()
        .map(|g| {
            let key = |kind: &str| {
                g["KeySchema"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|k| k["KeyType"] == kind)
                    .map(|k| k["AttributeName"].as_str().unwrap().to_owned())
            };
            let projection = match g["Projection"]["ProjectionType"].as_str() {
                Some("KEYS_ONLY") => Projection::KeysOnly,
                Some("INCLUDE") => Projection::Include(
                    g["Projection"]["NonKeyAttributes"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|a| a.as_str().unwrap().to_owned())
                        .collect(),
                ),
                _ => Projection::All,
            };
            IndexDef {
                name: g["IndexName"].as_str().unwrap().to_owned(),
                hash: key("HASH").unwrap(),
                range: key("RANGE"),
                projection,
            }
        })
        .collect()
}

impl IndexDef {
    /// The index entry an item has (`None` when a key attribute is missing: sparse).
    pub fn entry(&self, item: &Item) -> Option<Item> {
        if !item.contains_key(&self.hash) || self.range.as_ref().is_some_and(|r| !item.contains_key(r)) {
            return None;
        }
        let keep = |k: &str| {
            ["pk", "sk"].contains(&k)
                || k == self.hash
                || self.range.as_deref() == Some(k)
                || match &self.projection {
                    Projection::KeysOnly => false,
                    Projection::Include(a) => a.iter().any(|a| a == k),
                    Projection::All => true,
                }
        };
        Some(item.iter().filter(|(k, _)| keep(k)).map(|(k, v)| (k.clone(), v.clone())).collect())
    }

    fn keys_of(&self, entry: &Item) -> (Option<AttributeValue>, Option<AttributeValue>) {
        (entry.get(&self.hash).cloned(), self.range.as_ref().and_then(|r| entry.get(r).cloned()))
    }
}

/// Units of an index entry (or of an item: `overhead` 0).
fn kb(bytes: usize) -> u64 {
    u64::try_from(bytes.div_ceil(1024).max(1)).unwrap_or(u64::MAX)
}

/// The index units of one item going from `before` to `after`.
pub fn index_units(idx: &IndexDef, before: Option<&Item>, after: Option<&Item>) -> u64 {
    index_changes(idx, before, after).iter().map(|(_, u)| u).sum()
}

/// The units one item's change bills its entry in `idx`, by the partition (hash key value) that
/// takes them: a put or delete bills the entry's size; a key change, the old partition for the
/// delete and the new one for the put; any other change of a projected attribute, the larger size.
fn index_changes(idx: &IndexDef, before: Option<&Item>, after: Option<&Item>) -> Vec<(String, u64)> {
    let old = before.and_then(|i| idx.entry(i));
    let new = after.and_then(|i| idx.entry(i));
    let size = |e: &Item| kb(item_size(e) + 100);
    match (&old, &new) {
        (None, None) => vec![],
        (None, Some(n)) => vec![(hash_value(idx, n), size(n))],
        (Some(o), None) => vec![(hash_value(idx, o), size(o))],
        (Some(o), Some(n)) if idx.keys_of(o) != idx.keys_of(n) => {
            vec![(hash_value(idx, o), size(o)), (hash_value(idx, n), size(n))]
        }
        (Some(o), Some(n)) if o != n => vec![(hash_value(idx, n), size(o).max(size(n)))],
        _ => vec![],
    }
}

/// Write units per partition: `("table", pk)` for the items written, `(index, hash key value)`
/// for every index entry put, changed or removed — the partition that absorbs the write. A key
/// change bills the old partition for the delete and the new one for the put.
pub type Heat = BTreeMap<(String, String), u64>;

fn hash_value(idx: &IndexDef, entry: &Item) -> String {
    match entry.get(&idx.hash) {
        Some(AttributeValue::S(s)) => s.clone(),
        Some(AttributeValue::N(n)) => n.clone(),
        other => format!("{other:?}"),
    }
}

/// [`write_units`], attributed to the partitions that take them.
pub fn write_heat(before: &Snapshot, after: &Snapshot, writes: &[Write], idx: &[IndexDef]) -> Heat {
    let mut heat = Heat::new();
    let mut touched: Vec<(String, String)> = Vec::new();
    for w in writes {
        let factor = if w.transactional { 2 } else { 1 };
        for t in &w.targets {
            let key = (t.pk.clone(), t.sk.clone());
            let old = before.get(&key).map_or(0, item_size);
            let new = after.get(&key).map_or(0, item_size);
            let size = if t.check_only { old } else { old.max(new).max(t.put_size.unwrap_or(0)) };
            *heat.entry(("table".into(), t.pk.clone())).or_default() += kb(size) * factor;
            if w.ok && !t.check_only && !touched.contains(&key) {
                touched.push(key);
            }
        }
    }
    for k in &touched {
        for i in idx {
            for (partition, units) in index_changes(i, before.get(k), after.get(k)) {
                *heat.entry((i.name.clone(), partition)).or_default() += units;
            }
        }
    }
    heat
}

/// (table units, index units) of a phase's writes: [`write_heat`] summed over the partitions.
pub fn write_units(before: &Snapshot, after: &Snapshot, writes: &[Write], idx: &[IndexDef]) -> (u64, u64) {
    write_heat(before, after, writes, idx).iter().fold((0, 0), |(table, gsi), ((place, _), units)| {
        if place == "table" { (table + units, gsi) } else { (table, gsi + units) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(pairs: &[(&str, &str)]) -> Item {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), AttributeValue::S((*v).to_owned()))).collect()
    }

    fn keys_only() -> IndexDef {
        IndexDef { name: "i".into(), hash: "h".into(), range: Some("r".into()), projection: Projection::KeysOnly }
    }

    #[test]
    fn a_sparse_entry_is_put_moved_and_deleted() {
        let idx = keys_only();
        let a = item(&[("pk", "p"), ("sk", "s"), ("h", "x"), ("r", "1")]);
        let b = item(&[("pk", "p"), ("sk", "s"), ("h", "x"), ("r", "2")]);
        let none = item(&[("pk", "p"), ("sk", "s")]);
        assert_eq!(index_units(&idx, Some(&none), Some(&a)), 1, "put");
        assert_eq!(index_units(&idx, Some(&a), Some(&b)), 2, "key change = delete + put");
        assert_eq!(index_units(&idx, Some(&a), Some(&none)), 1, "delete");
        let mut c = a.clone();
        c.insert("other".into(), AttributeValue::S("not projected".into()));
        assert_eq!(index_units(&idx, Some(&a), Some(&c)), 0, "no projected change");
    }

    #[test]
    fn heat_bills_a_key_move_to_both_partitions_and_the_item_to_its_own() {
        let idx = vec![keys_only()];
        let (k, none) = (("p".to_owned(), "s".to_owned()), item(&[("pk", "p"), ("sk", "s")]));
        let a = item(&[("pk", "p"), ("sk", "s"), ("h", "x"), ("r", "1")]);
        let b = item(&[("pk", "p"), ("sk", "s"), ("h", "y"), ("r", "1")]);
        let write = Write {
            op: "UpdateItem",
            targets: vec![crate::metering::Target {
                pk: "p".into(),
                sk: "s".into(),
                put_size: None,
                check_only: false,
            }],
            transactional: false,
            ok: true,
        };
        let before = Snapshot::from([(k.clone(), a.clone())]);
        let heat = write_heat(&before, &Snapshot::from([(k.clone(), b)]), std::slice::from_ref(&write), &idx);
        let want = |i: &str, key: &str| heat.get(&(i.to_owned(), key.to_owned())).copied();
        assert_eq!((want("table", "p"), want("i", "x"), want("i", "y")), (Some(1), Some(1), Some(1)));
        let removed = write_heat(&before, &Snapshot::from([(k, none)]), &[write], &idx);
        assert_eq!(removed.get(&("i".to_owned(), "x".to_owned())), Some(&1));
    }
}

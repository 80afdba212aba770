//! Every vector in `conformance/vectors/` gets the schema verdict it declares from
//! `ma2h_protocol::schema` (§12 class 1), and the set covers one rule per file without duplicates.

use std::collections::HashSet;
use std::path::Path;

use ma2h_conformance::vectors::{self, Vector};
use ma2h_protocol::schema::{self, SchemaKind};

fn all() -> Vec<Vector> {
    vectors::load_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("vectors")).expect("vectors load")
}

#[test]
fn every_vector_gets_its_declared_schema_verdict() {
    let list = all();
    assert!(list.len() >= 23, "only {} vectors", list.len());
    let mut failures = Vec::new();
    for v in &list {
        let envelope = v.instantiate("conformance-agent", "conformance-other", "test");
        let verdict = schema::validate(SchemaKind::Message, &envelope);
        if verdict.is_ok() != v.schema_valid {
            failures.push(format!("{} ({}): expected {}, got {verdict:?}", v.id, v.file.display(), v.schema_valid));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn vectors_are_well_formed_and_unique() {
    let list = all();
    let ids: HashSet<_> = list.iter().map(|v| v.id.clone()).collect();
    assert_eq!(ids.len(), list.len(), "duplicate vector ids");
    for v in &list {
        assert!(!v.rule.is_empty() && !v.section.is_empty(), "{}", v.id);
        // schema-invalid envelopes can only be 400s; 2xx only for schema-valid ones
        if !v.schema_valid {
            assert_eq!(v.status, 400, "{}: a schema-invalid envelope must be a 400", v.id);
        }
        if v.status == 202 {
            assert!(v.schema_valid && v.code.is_none(), "{}", v.id);
        } else {
            assert!(v.code.is_some(), "{}: an error vector names its §8.5 code", v.id);
        }
    }
    // both verdicts and the main status classes are represented
    for status in [202, 400, 403, 422] {
        assert!(list.iter().any(|v| v.status == status), "no vector expects {status}");
    }
}

#[test]
fn placeholders_and_keys_are_substituted() {
    let list = all();
    let mismatch = list.iter().find(|v| v.code.as_deref() == Some("agent_id_mismatch")).expect("mismatch vector");
    assert_eq!(mismatch.instantiate("a", "b", "n")["agent"]["id"], "b");
    let ask = list.iter().find(|v| v.envelope["idempotency_key"].is_string()).expect("an ask vector");
    let e = ask.instantiate("a", "b", "n1");
    assert_eq!(e["agent"]["id"], "a");
    assert!(e["idempotency_key"].as_str().unwrap().ends_with("-n1"));
}

//! The wire types against the published documents: official vectors and examples round-trip,
//! and what the types write validates against this project's schemas — for the bodies below and
//! for generated values (a small deterministic generator, so every run checks the same cases).

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::*;
use crate::envelope::ChecklistItem;
use crate::lifecycle::{Resolution, Status};
use crate::schema::{SchemaKind, validate};
use crate::time;

/// `doc` read as `T` and written back is `doc` again (members in any order).
fn round_trips<T: Serialize + DeserializeOwned>(doc: Value) -> T {
    let typed: T = serde_json::from_value(doc.clone()).unwrap_or_else(|e| panic!("{e}: {doc}"));
    assert_eq!(serde_json::to_value(&typed).unwrap(), doc, "written back differently");
    typed
}

/// `doc` read as `T`, written back, read again: the same value (for bodies whose timestamps are
/// written at millisecond precision, so the text may differ).
fn reads_back<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(doc: Value) -> T {
    let typed: T = serde_json::from_value(doc.clone()).unwrap_or_else(|e| panic!("{e}: {doc}"));
    let again: T = serde_json::from_value(serde_json::to_value(&typed).unwrap()).unwrap();
    assert_eq!(again, typed);
    typed
}

fn valid(kind: SchemaKind, v: &impl Serialize) {
    let doc = serde_json::to_value(v).unwrap();
    validate(kind, &doc).unwrap_or_else(|e| panic!("{kind:?} refuses what we write: {e}\n{doc}"));
}

#[test]
fn official_responses_round_trip_exactly() {
    // autnmy/ma2h-protocol examples/response.json
    let answered: Response = round_trips(
        json!({"ma2h_version": "0.3", "in_reply_to": "msg_01HZXASK0001", "resolution_id": "res_01HZXR3SOLVE", "agent": {"id": "deploybot/dev-team", "run_id": "run_01HZXABCDEF"}, "resolution": "answered", "defaulted": false, "response": {"value": "hold", "edited": false, "actor": "human:alice", "resolved_at": "2026-06-04T15:48:30Z", "comment": "Hold for review \u{2014} let's get a human eye on this before it ships."}, "state": {"sealed": "v1.aead.8f2c...redacted..."}}),
    );
    assert_eq!(answered.resolution, Resolution::Answered);
    // autnmy/ma2h-protocol examples/response-cancelled.json
    let cancelled: Response = round_trips(
        json!({"ma2h_version": "0.3", "in_reply_to": "msg_01HZXASK0001", "resolution_id": "res_01HZXCANCEL", "agent": {"id": "deploybot/dev-team", "run_id": "run_01HZXABCDEF"}, "resolution": "cancelled", "defaulted": false, "response": {"actor": "agent:deploybot/dev-team", "resolved_at": "2026-06-04T15:30:00Z", "comment": "Superseded \u{2014} the agent withdrew this ask before the human acted."}}),
    );
    assert_eq!(cancelled.state, None, "absent stays absent");
    // autnmy/ma2h-protocol conformance/vectors/sv-031-response-entry-valid.json (no `defaulted`:
    // read as false, and this Hub always writes it)
    reads_back::<Response>(
        json!({"ma2h_version": "0.5", "in_reply_to": "msg_01J5MSG0002", "resolution_id": "res_01J5RSLV0001", "agent": {"id": "overseer/fleet", "run_id": "run_01J5OVERSEER01"}, "resolution": "answered", "response": {"value": "approve", "edited": false, "actor": "agent:deploybot/dev-team#sess_01J5WRK0007", "resolved_at": "2026-08-10T12:05:00Z"}, "state": {"sealed": "v1.demo.MOCK-SEALED-STATE-BLOB"}}),
    );
}

#[test]
fn a_null_state_or_value_stays_null_and_never_disappears() {
    let r: Response = round_trips(
        json!({"ma2h_version": "0.5", "in_reply_to": "msg_1", "resolution_id": "res_1", "agent": {"id": "a", "run_id": "r"}, "resolution": "answered", "response": {"value": null, "edited": false, "actor": "human:a", "resolved_at": "2026-08-10T12:05:00Z"}, "defaulted": false, "state": null}),
    );
    assert_eq!((r.state, r.response.unwrap().value), (Some(Value::Null), Some(Value::Null)));
}

#[test]
fn official_entries_round_trip_exactly() {
    // autnmy/ma2h-protocol examples/receipt-bounced.json
    let r: ReceiptEntry = round_trips(
        json!({"ma2h_version": "0.5", "type": "receipt", "id": "rcpt_01J5RCPT0001", "in_reply_to": "msg_01J5MSG0003", "event": "bounced", "prior": "queued", "at": "2026-08-10T12:20:00Z", "session": "sess_01J5WRK0007", "to": "agent:overseer/fleet#sess_01J5OVR0001"}),
    );
    assert_eq!(r.prior, TrackState::Queued);
    // autnmy/ma2h-protocol examples/directive-inbound.json (= sv-008)
    let d: DirectiveEntry = round_trips(
        json!({"ma2h_version": "0.4", "type": "directive", "id": "dir_01HZXDIR0001", "from": "human:alice", "to": "agent:deploybot/dev-team", "created_at": "2026-06-30T12:00:00Z", "title": "Pause deploys until the incident is resolved", "body": "We are mid-incident on prod. Hold all deploys until I say otherwise.", "priority": "urgent", "tags": ["incident", "deploy-freeze"]}),
    );
    assert_eq!(d.from, "human:alice");
    // autnmy/ma2h-protocol conformance/vectors/sv-013-ack-valid.json
    let ack: AckEnvelope = reads_back(
        json!({"ma2h_version": "0.4", "type": "ack", "in_reply_to": "msg_01HZXASK0001", "by": "agent:deploybot/dev-team", "acked_at": "2026-06-30T15:49:00Z", "note": "got your Ship it \u{2014} resuming the deploy", "resolution_id": "res_01HZXR3SOLVE"}),
    );
    valid(SchemaKind::Ack, &ack);
}

#[test]
fn a_drain_item_writes_its_kind_first_and_reads_any_order() {
    let item = MailboxItem {
        kind: EntryKind::Receipt,
        payload: json!({"id": "rcpt_1"}),
        signature: "MA2H-Signature: t=1,jti=j,v1=x".into(),
    };
    let text = serde_json::to_string(&DrainBody { messages: vec![item.clone()] }).unwrap();
    assert_eq!(text, r#"{"messages":[{"receipt":{"id":"rcpt_1"},"signature":"MA2H-Signature: t=1,jti=j,v1=x"}]}"#);
    let back: MailboxItem =
        serde_json::from_value(json!({"signature": item.signature, "future": 1, "receipt": {"id": "rcpt_1"}})).unwrap();
    assert_eq!(item.ack_key(), Some("rcpt_1"));
    assert_eq!(back, item);
    assert!(serde_json::from_value::<MailboxItem>(json!({"signature": "s"})).is_err(), "no entry");
    assert!(serde_json::from_value::<MailboxItem>(json!({"message": {}, "receipt": {}, "signature": "s"})).is_err());
}

#[test]
fn official_acks_sessions_and_presence_read_back_and_validate() {
    // autnmy/ma2h-protocol conformance/vectors/sv-025-submit-ack-queued-destination-valid.json
    let ack: SubmitAck = reads_back(
        json!({"id": "msg_01J5MSG0001", "status": "queued", "poll_url": "https://hub.example/v1/messages/msg_01J5MSG0001", "review_url": "https://hub.example/inbox/msg_01J5MSG0001", "destination": {"state": "offline", "last_seen": "2026-08-10T11:20:00Z"}}),
    );
    assert_eq!(ack.destination.as_ref().map(|d| d.state), Some(Reach::Offline));
    valid(SchemaKind::SubmitAck, &ack);
    // autnmy/ma2h-protocol conformance/vectors/sv-036-submit-ack-terminal-replay-valid.json
    let replay: SubmitAck = reads_back(
        json!({"id": "msg_01J5MSG0003", "status": "bounced", "poll_url": "https://hub.example/v1/messages/msg_01J5MSG0003", "destination": {"state": "offline", "last_seen": "2026-08-10T11:20:00Z"}}),
    );
    assert_eq!((replay.status, replay.review_url), (Status::Bounced, None));
    // autnmy/ma2h-protocol conformance/vectors/sv-058-session-operator-closed-valid.json
    let s: SessionObject = reads_back(
        json!({"id": "sess_01J5WRK0007", "agent_id": "deploybot/dev-team", "state": "closed", "created_at": "2026-08-10T11:55:00Z", "expires_at": "2026-08-10T12:10:00Z", "last_seen": "2026-08-10T11:58:00Z", "ttl_seconds": 900, "closed_at": "2026-08-10T12:01:00Z", "closed_by_operator": true, "run_id": "run_01J5WORKER07", "label": "dev-team \u{b7} issue #612", "kind": "worker", "project": "web-app", "labels": {"repo": "acme/web-app"}}),
    );
    assert!(s.closed_by_operator);
    assert_eq!(
        (s.meta_str("kind"), s.labels().get("repo").map(String::as_str)),
        (Some("worker"), Some("acme/web-app"))
    );
    valid(SchemaKind::Session, &s);
    // autnmy/ma2h-protocol conformance/vectors/sv-064-session-list-scope-valid.json and sv-066
    let list: SessionList = reads_back(
        json!({"sessions": [{"id": "sess_01J5WRK0007", "agent_id": "deploybot/dev-team", "state": "active", "created_at": "2026-08-10T11:55:00Z", "expires_at": "2026-08-10T12:10:00Z"}], "scope": "own"}),
    );
    assert_eq!(list.scope, Some(SessionScope::Own));
    valid(SchemaKind::SessionList, &list);
    let unscoped: SessionList = round_trips(json!({"sessions": []}));
    assert_eq!(unscoped.scope, None, "§16.4: absent is unknown, never `account`");
    // autnmy/ma2h-protocol conformance/vectors/sv-015-presence-valid.json
    let p: Presence = reads_back(
        json!({"agent_id": "deploybot/dev-team", "state": "online", "last_seen": "2026-06-30T15:48:30Z", "freshness_seconds": 90}),
    );
    valid(SchemaKind::Presence, &p);
}

#[test]
fn official_get_bodies_read_their_tracks() {
    // autnmy/ma2h-protocol conformance/vectors/sv-050-get-message-acknowledged-notify-valid.json
    let t: MessageTracks = serde_json::from_value(json!({"ma2h_version": "0.5", "type": "notify", "id": "msg_01J5MSG0005", "status": "acknowledged", "created_at": "2026-08-10T12:00:00Z", "agent": {"id": "overseer/fleet", "run_id": "run_01J5OVERSEER01", "runtime": "cli", "session": "sess_01J5OVR0001"}, "title": "Addressed notify, consumed by the worker", "to": "agent:deploybot/dev-team#sess_01J5WRK0007", "mailbox": {"state": "acknowledged", "delivered_at": "2026-08-10T12:02:00Z", "acknowledged_at": "2026-08-10T12:03:00Z"}})).unwrap();
    assert_eq!((t.status, t.mailbox.map(|m| m.state)), (Status::Acknowledged, Some(TrackState::Acknowledged)));
    // autnmy/ma2h-protocol conformance/vectors/sv-061-get-message-bounced-prior-queued-valid.json
    let t: MessageTracks = serde_json::from_value(json!({"ma2h_version": "0.5", "type": "notify", "id": "msg_01J5MSG0006", "status": "bounced", "created_at": "2026-08-10T12:00:00Z", "agent": {"id": "overseer/fleet", "run_id": "run_01J5OVERSEER01", "runtime": "cli", "session": "sess_01J5OVR0001"}, "title": "Addressed notify bounced before its first drain", "to": "agent:deploybot/dev-team#sess_01J5WRK0007", "mailbox": {"state": "bounced", "prior": "queued"}})).unwrap();
    assert_eq!(t.mailbox.and_then(|m| m.prior), Some(TrackState::Queued));
}

#[test]
fn merged_tracks_replace_a_submitters_member_in_place_and_append_the_rest() {
    let mut envelope = json!({"type": "ask", "status": "mine", "title": "t"}).as_object().unwrap().clone();
    let tracks = MessageTracks {
        id: "msg_1".into(),
        status: Status::Open,
        mailbox: None,
        response: None,
        push: None,
        delivery: None,
    };
    tracks.merge_into(&mut envelope);
    assert_eq!(Value::Object(envelope).to_string(), r#"{"type":"ask","status":"open","title":"t","id":"msg_1"}"#);
}

#[test]
fn nullable_members_are_written_as_null_and_optional_ones_omitted() {
    let push = PushTrackView {
        status: PushStatus::Failed,
        attempts: 3,
        last_error: None,
        next_attempt_at: None,
        delivered_at: None,
    };
    assert_eq!(
        serde_json::to_string(&push).unwrap(),
        r#"{"status":"failed","attempts":3,"last_error":null,"next_attempt_at":null,"delivered_at":null}"#
    );
    let e = ErrorEnvelope::new("not_found", "no such message");
    assert_eq!(serde_json::to_string(&e).unwrap(), r#"{"error":{"code":"not_found","message":"no such message"}}"#);
    let conflict = ErrorEnvelope {
        outcome: Some(ExistingOutcome { id: "msg_1".into(), status: Status::Expired, resolution: None }),
        ..e
    };
    assert_eq!(serde_json::to_value(&conflict).unwrap()["resolution"], Value::Null);
    assert_eq!(serde_json::from_value::<ErrorEnvelope>(serde_json::to_value(&conflict).unwrap()).unwrap(), conflict);
}

/// A small deterministic generator (xorshift): the same cases every run.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn coin(&mut self) -> bool {
        self.below(2) == 0
    }
    fn pick<T: Copy>(&mut self, of: &[T]) -> T {
        of[self.below(of.len() as u64) as usize]
    }
    fn word(&mut self, prefix: &str) -> String {
        let len = 1 + self.below(12) as usize;
        let s: String =
            (0..len).map(|_| char::from(b"abcdefghijkmnpqrstuvwxyz0123456789"[self.below(34) as usize])).collect();
        format!("{prefix}{s}")
    }
    fn time(&mut self) -> time::Timestamp {
        time::from_millis(1_780_000_000_000 + self.below(10_000_000_000) as i64)
    }
    fn opt<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> Option<T> {
        if self.coin() { Some(f(self)) } else { None }
    }
}

#[test]
fn generated_bodies_validate_against_the_schemas() {
    let mut g = Gen(0x9e37_79b9_7f4a_7c15);
    for _ in 0..300 {
        let reach = g.pick(&[Reach::Online, Reach::Offline, Reach::Unknown]);
        let destination =
            g.opt(|g| Reachability { state: reach, last_seen: (reach != Reach::Unknown).then(|| g.time()) });
        let status = match destination {
            Some(_) => g.pick(&[Status::Queued, Status::Open, Status::Delivered, Status::Answered]),
            None => g.pick(&[Status::Open, Status::Delivered, Status::Expired]),
        };
        let id = g.word("msg_");
        valid(
            SchemaKind::SubmitAck,
            &SubmitAck {
                poll_url: format!("https://h.example/v1/messages/{id}"),
                review_url: Some(format!("https://h.example/inbox/{id}")),
                id,
                status,
                destination,
            },
        );

        let resolution =
            g.pick(&[Resolution::Answered, Resolution::Declined, Resolution::Cancelled, Resolution::Expired]);
        let actor = match resolution {
            Resolution::Expired => "system:expiry".to_owned(),
            _ => format!("human:{}", g.word("")),
        };
        let detail = ResponseDetail {
            value: (resolution == Resolution::Answered).then(|| json!(g.word(""))),
            edited: (resolution == Resolution::Answered).then(|| g.coin()),
            actor,
            resolved_at: time::format(g.time()),
            comment: g.opt(|g| g.word("")),
            checklist: None,
            approvals: Vec::new(),
            on_behalf_of: None,
            grant_id: None,
        };
        let response = Response {
            ma2h_version: "0.5".into(),
            in_reply_to: g.word("msg_"),
            resolution_id: g.word("res_"),
            agent: ResponseAgent { id: g.word("bot-"), run_id: g.word("run_") },
            resolution,
            response: Some(detail),
            defaulted: false,
            state: g.opt(|g| json!({"sealed": g.word("v1.")})),
        };
        valid(SchemaKind::Response, &response);

        let state = g.pick(&[SessionState::Active, SessionState::Closed, SessionState::Expired]);
        let created = g.time();
        let ended = state != SessionState::Active;
        let session = SessionObject {
            id: g.word("sess_"),
            agent_id: g.word("bot-"),
            created_at: created,
            expires_at: created + chrono::Duration::seconds(900),
            ttl_seconds: Some(900),
            closed_at: ended.then_some(created + chrono::Duration::seconds(60)),
            closed_by_operator: state == SessionState::Closed && g.coin(),
            state,
            last_seen: g.opt(|_| created),
            meta: serde_json::from_value(json!({"run_id": g.word("run_"), "labels": {"team": g.word("")}})).unwrap(),
        };
        valid(SchemaKind::Session, &session);
        valid(SchemaKind::SessionList, &SessionList { sessions: vec![session], scope: Some(SessionScope::Own) });

        let ack = AckEnvelope {
            ma2h_version: "0.5".into(),
            kind: AckType::Ack,
            in_reply_to: g.word("dir_"),
            by: format!("agent:{}", g.word("bot-")),
            acked_at: g.time(),
            note: g.opt(|g| g.word("")),
            resolution_id: g.opt(|g| g.word("res_")),
        };
        valid(SchemaKind::Ack, &ack);
        let seen = (reach != Reach::Unknown).then(|| g.time());
        valid(
            SchemaKind::Presence,
            &Presence { agent_id: g.word("bot-"), state: reach, freshness_seconds: 90, last_seen: seen },
        );
        let receipt = ReceiptEntry {
            ma2h_version: "0.5".into(),
            kind: ReceiptType::Receipt,
            id: g.word("rcpt_"),
            in_reply_to: g.word("msg_"),
            event: ReceiptEvent::Bounced,
            prior: g.pick(&[TrackState::Queued, TrackState::Delivered]),
            at: time::format(g.time()),
            session: g.word("sess_"),
            to: format!("agent:{}#{}", g.word("bot-"), g.word("sess_")),
        };
        let item = MailboxItem {
            kind: EntryKind::Receipt,
            payload: serde_json::to_value(&receipt).unwrap(),
            signature: format!("MA2H-Signature: t=1780000000,jti={},v1={}", g.word("j"), "A".repeat(86)),
        };
        valid(SchemaKind::InboundMessage, &item);
    }
}

#[test]
fn a_task_response_with_a_checklist_validates() {
    let detail = ResponseDetail {
        value: None,
        edited: None,
        actor: "human:alice".into(),
        resolved_at: "2026-06-04T15:48:30.000Z".into(),
        comment: None,
        checklist: Some(vec![ChecklistItem { text: "Deploy".into(), done: true }]),
        approvals: Vec::new(),
        on_behalf_of: None,
        grant_id: None,
    };
    let r = Response {
        ma2h_version: "0.5".into(),
        in_reply_to: "msg_1".into(),
        resolution_id: "res_1".into(),
        agent: ResponseAgent { id: "bot".into(), run_id: "r".into() },
        resolution: Resolution::Completed,
        response: Some(detail),
        defaulted: false,
        state: None,
    };
    valid(SchemaKind::Response, &r);
}

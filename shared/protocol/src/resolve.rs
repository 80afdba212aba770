//! The §8.8 resolve request: parsed (schema → 400) then checked against the message (→ 422).

use serde::Deserialize;
use serde_json::Value;

use crate::ProtocolError;
use crate::envelope::{Action, ChecklistItem, Envelope, Mode, Request, Verb};
use crate::lifecycle::Resolution;
use crate::rules::validate_input;
use crate::schema::{self, SchemaKind};

/// Longest accepted resolver comment, in bytes.
pub const MAX_COMMENT_BYTES: usize = 16_384;

/// A schema-valid resolve request body.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ResolveRequest {
    pub resolution: Resolution,
    #[serde(default)]
    pub value: Option<Value>,
    #[serde(default)]
    pub comment: Option<String>,
    #[serde(default)]
    pub checklist: Option<Vec<ChecklistItem>>,
}

impl ResolveRequest {
    pub fn parse(body: &[u8]) -> Result<Self, ProtocolError> {
        let value: Value = serde_json::from_slice(body)
            .map_err(|e| ProtocolError::validation(format!("body is not valid JSON: {e}")))?;
        schema::validate(SchemaKind::ResolveRequest, &value)?;
        Self::deserialize(&value).map_err(|e| ProtocolError::validation(format!("`/`: {e}")))
    }

    /// §8.8 validation against the message: resolution valid for the verb, `permissions`
    /// honoured (§5.2), `value` valid for the request, checklist only for tasks.
    pub fn check_against(&self, env: &Envelope) -> Result<(), ProtocolError> {
        let bad = |m: String| Err(ProtocolError::invalid_field(m));
        if !matches!(
            self.resolution,
            Resolution::Answered | Resolution::Declined | Resolution::Completed | Resolution::Dismissed
        ) || !self.resolution.valid_for(env.kind())
        {
            return bad(format!(
                "`/resolution`: `{}` is not a resolver outcome for a {}",
                self.resolution.as_str(),
                env.kind().as_str()
            ));
        }
        if self.comment.as_ref().is_some_and(|c| c.len() > MAX_COMMENT_BYTES) {
            return bad(format!("`/comment`: longer than {MAX_COMMENT_BYTES} bytes"));
        }
        match &env.verb {
            Verb::Ask(req) => self.check_ask(req),
            Verb::Task(action) => self.check_task(action),
            Verb::Notify => bad("`/resolution`: a notify is not resolvable".into()),
        }
    }

    fn check_ask(&self, req: &Request) -> Result<(), ProtocolError> {
        let bad = |m: String| Err(ProtocolError::invalid_field(m));
        if self.checklist.is_some() {
            return bad("`/checklist`: only task resolutions carry a checklist".into());
        }
        match self.resolution {
            Resolution::Answered if !req.permissions.allow_respond => {
                return bad("`/resolution`: this ask does not allow an answer (permissions.allow_respond is false); only `declined` is possible".into());
            }
            Resolution::Declined if !req.permissions.allow_ignore => {
                return bad("`/resolution`: this ask cannot be declined (permissions.allow_ignore is false)".into());
            }
            _ => {}
        }
        let Some(value) = &self.value else { return Ok(()) };
        match req.mode {
            Mode::Select | Mode::Confirm => {
                let ok = value.as_str().is_some_and(|v| req.options.iter().any(|o| o.value == v));
                if !ok {
                    let values: Vec<&str> = req.options.iter().map(|o| o.value.as_str()).collect();
                    return bad(format!("`/value`: must be one of {values:?}"));
                }
            }
            Mode::Input => {
                // An input ask without a schema is refused at submit (`rules`); never stored.
                let Some(schema) = &req.schema else {
                    return bad("`/request/schema`: required for mode input".into());
                };
                if let Err(errors) = validate_input(schema, value) {
                    return Err(ProtocolError::invalid_at(errors.into_iter().map(|e| e.within("/value")).collect()));
                }
                // §5.2 `allow_edit: false`: the agent's proposal may be accepted, not changed.
                if !req.permissions.allow_edit
                    && let Some(proposal) = crate::rules::proposal(schema)
                    && crate::rules::departs_from(&proposal, value)
                {
                    return bad("`/value`: this ask does not allow editing the proposal (permissions.allow_edit is false): answer with the proposed values, or decline".into());
                }
            }
        }
        Ok(())
    }

    fn check_task(&self, action: &Action) -> Result<(), ProtocolError> {
        if let Some(items) = &self.checklist {
            let same_items = items.len() == action.checklist.len()
                && items.iter().zip(&action.checklist).all(|(a, b)| a.text == b.text);
            if !same_items {
                return Err(ProtocolError::invalid_field(
                    "`/checklist`: must list the task's checklist items, in order, with their final `done` state",
                ));
            }
        }
        Ok(())
    }
}

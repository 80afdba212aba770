//! The project's vectors (`conformance/vectors/`) through the schemas and the live submit path:
//! each must get the schema verdict and the status/code it declares (§12 class 1, §8.5 codes).

use ma2h_protocol::schema::{self, SchemaKind};

use super::Ctx;
use crate::report::{Report, ensure};
use crate::vectors;

pub async fn run(cx: &Ctx, r: &mut Report) {
    let list = match vectors::load_dir(&cx.cfg.vectors) {
        Ok(list) => list,
        Err(e) => {
            r.result("12", "load the conformance vectors", Err(format!("{e:#}")));
            return;
        }
    };
    for v in list {
        // one key per vector and run: the vectors share a base key and must not replay each other
        let envelope = v.instantiate(&cx.cfg.agent_id, &cx.cfg.other_agent_id, &format!("{}-{}", cx.nonce, v.id));
        let schema_ok = schema::validate(SchemaKind::Message, &envelope);
        let resp = cx.hub.submit(&cx.cfg.agent_key, &envelope).await;
        let res = (|| {
            ensure(schema_ok.is_ok() == v.schema_valid, || match &schema_ok {
                Ok(()) => "the schema accepts it but the vector expects invalid".to_owned(),
                Err(e) => format!("the schema rejects it but the vector expects valid: {e}"),
            })?;
            resp.expect(v.status, v.code.as_deref())?;
            if v.status == 202 {
                schema::validate(SchemaKind::SubmitAck, &resp.body).map_err(|e| format!("submit-ack schema: {e}"))?;
            }
            Ok(())
        })();
        if let (202, Some(id), true) = (resp.status, resp.body["id"].as_str(), resp.body["status"] == "open") {
            cx.close(id).await;
        }
        r.result(&v.section, &format!("vector {}: {}", v.id, v.rule), res);
    }
}

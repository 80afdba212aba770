//! IAM as AWS would enforce it on the functions, for the local runs (`make aws-local`, the
//! in-process Lambda tests): each function's policy from the template ([`policy`]), what each
//! AWS call asks IAM for ([`request`]), the checking front before moto ([`front`]) and the
//! report of what `make test` exercised against what is granted ([`report`]).

pub mod front;
pub mod policy;
pub mod report;
pub mod request;

use std::path::Path;

use crate::template::{Function, Template};
pub use front::{Front, Identity};
pub use policy::{Grant, Resolver, SamTemplates};

/// The access key a function signs with in a local run: its logical id and a run-unique tag,
/// so parallel tests never share an identity.
pub fn access_key(function: &Function, run: &str) -> String {
    format!("{}.{run}", function.logical_id)
}

/// Every function's identity for one run (resources resolved by `run`), keyed by logical id.
pub fn identities(
    template: &Template,
    workspace: &Path,
    run: &Resolver,
) -> Result<Vec<(Function, Identity)>, anyhow::Error> {
    let sam = SamTemplates::find(workspace)?;
    let shown = policy::display_resolver(template);
    template
        .functions
        .iter()
        .map(|f| {
            let (docs, grants) = policy::resolved(f, &sam, run, &shown)?;
            Ok((f.clone(), Identity::new(&f.logical_id, &run.account, &docs, grants)?))
        })
        .collect()
}

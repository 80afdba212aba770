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

/// Register every function of `template` with `front`, its policy resolved by `run` (the
/// resources of this run), under an access key of its own: the function's logical id and a
/// run-unique `tag`, so parallel tests never share an identity. Each function with its key.
pub fn register_functions(
    front: &Front,
    template: &Template,
    workspace: &Path,
    run: &Resolver,
    tag: &str,
) -> Result<Vec<(Function, String)>, anyhow::Error> {
    let sam = SamTemplates::find(workspace)?;
    let shown = policy::display_resolver(template);
    template
        .functions
        .iter()
        .map(|f| {
            let (docs, grants) = policy::resolved(f, &sam, run, &shown)?;
            let key = format!("{}.{tag}", f.logical_id);
            front.register(&key, Identity::new(&f.logical_id, &run.account, &docs, grants)?);
            Ok((f.clone(), key))
        })
        .collect()
}

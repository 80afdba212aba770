//! # ma2h-sam
//!
//! `infra/template.yaml` as the local runs need it, so they cannot drift from what SAM deploys:
//! the functions, their HTTP API routes and event sources, the resources ([`template`],
//! [`routes`]), and each function's IAM policy, enforced on every AWS call a function makes
//! locally by a checking front before moto ([`iam`]).

pub mod iam;
pub mod routes;
pub mod template;

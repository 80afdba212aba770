//! Team decisions (issue 40): approval policies — a quorum of distinct approvers and the
//! humans who may never approve ([`policy`], [`quorum`]) — and their administration
//! ([`manage`]). Everything here is a Hub extension: with nothing configured every wire byte is
//! as v0.5 specifies.

pub mod delegation;
pub mod grant_store;
pub mod grants;
pub mod manage;
pub mod policy;
pub mod presence;
pub mod quorum;

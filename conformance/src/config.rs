//! Command-line / environment configuration of one conformance run.

use std::path::PathBuf;

use clap::Parser;

/// Exercise a live MA2H Hub over HTTP and report pass/fail per spec obligation.
///
/// Needs two agent credentials of *different* agents in the same account, and one operator
/// credential of that account whose attested actor (`human:<id>`) is used in `allowed_resolvers`.
#[derive(Debug, Clone, Parser)]
#[command(name = "ma2h-conformance", version)]
pub struct Config {
    /// Base URL of the Hub (e.g. https://abc.execute-api.eu-west-1.amazonaws.com).
    #[arg(long, env = "MA2H_CONFORMANCE_URL")]
    pub base_url: String,
    /// API key of the first agent (the submitter in most checks).
    #[arg(long, env = "MA2H_CONFORMANCE_AGENT_KEY", hide_env_values = true)]
    pub agent_key: String,
    /// `agent.id` the first key is scoped to.
    #[arg(long, env = "MA2H_CONFORMANCE_AGENT_ID")]
    pub agent_id: String,
    /// API key of a second, different agent of the same account (cross-principal checks, §9.1).
    #[arg(long, env = "MA2H_CONFORMANCE_OTHER_AGENT_KEY", hide_env_values = true)]
    pub other_agent_key: String,
    /// `agent.id` of the second agent.
    #[arg(long, env = "MA2H_CONFORMANCE_OTHER_AGENT_ID")]
    pub other_agent_id: String,
    /// An operator credential of the same account.
    #[arg(long, env = "MA2H_CONFORMANCE_OPERATOR_KEY", hide_env_values = true)]
    pub operator_key: String,
    /// The actor the Hub attests for the operator credential, e.g. `human:alice`.
    #[arg(long, env = "MA2H_CONFORMANCE_OPERATOR_ACTOR")]
    pub operator_actor: String,
    /// Host the Hub can reach the runner's callback receiver at (bound to the first agent with
    /// `admin bind-callback`). Without it the push checks are skipped.
    #[arg(long, env = "MA2H_CONFORMANCE_CALLBACK_HOST")]
    pub callback_host: Option<String>,
    /// Local address the receiver listens on (port 0 picks one).
    #[arg(long, env = "MA2H_CONFORMANCE_CALLBACK_LISTEN", default_value = "127.0.0.1:0")]
    pub callback_listen: String,
    /// Public base of the receiver when it sits behind a tunnel or proxy (e.g. an https URL);
    /// default `http://<callback-host>:<listen port>`.
    #[arg(long, env = "MA2H_CONFORMANCE_CALLBACK_PUBLIC_URL")]
    pub callback_public_url: Option<String>,
    /// Name of the HMAC secret registered for the first agent with `admin put-secret`.
    #[arg(long, env = "MA2H_CONFORMANCE_CALLBACK_SECRET_REF", default_value = "conformance-hmac")]
    pub callback_secret_ref: String,
    /// Value of that secret (the receiver verifies §9.2 signatures with it).
    #[arg(long, env = "MA2H_CONFORMANCE_CALLBACK_SECRET", hide_env_values = true)]
    pub callback_secret: Option<String>,
    /// Name of a token registered for the first agent with `admin put-secret`, used as the
    /// `token_ref` of the bearer and apikey push checks.
    #[arg(long, env = "MA2H_CONFORMANCE_TOKEN_REF", default_value = "conformance-token")]
    pub token_ref: String,
    /// Value of that token; without it the bearer/apikey push checks are skipped.
    #[arg(long, env = "MA2H_CONFORMANCE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// The first agent's Hub-issued signing secret, when its bearer/apikey pushes are signed with
    /// `hmac-sha256` (the default). Without it they must verify with the Hub's published Ed25519
    /// keys (`admin set-signing --alg ed25519`).
    #[arg(long, env = "MA2H_CONFORMANCE_SIGNING_SECRET", hide_env_values = true)]
    pub signing_secret: Option<String>,
    /// API key of a third agent the runner may drive past the advertised `requests_per_minute`
    /// (§8.6); without it the 429 checks are skipped. Use an agent nothing else relies on: it
    /// submits up to twice the limit of `notify` messages.
    #[arg(long, env = "MA2H_CONFORMANCE_LIMITED_AGENT_KEY", hide_env_values = true)]
    pub limited_agent_key: Option<String>,
    /// `agent.id` of that third agent.
    #[arg(long, env = "MA2H_CONFORMANCE_LIMITED_AGENT_ID", default_value = "conf-limited")]
    pub limited_agent_id: String,
    /// API key of an agent in a *different* account: the mailbox and presence checks show that a
    /// directive cannot be addressed across accounts, that agent's drain and ack never touch the
    /// first agent's mailbox, and its presence reads `unknown` to this account's operator (§8.7,
    /// §13.2, §15.3). Without it those cross-account parts are left out.
    #[arg(long, env = "MA2H_CONFORMANCE_FOREIGN_AGENT_KEY", hide_env_values = true)]
    pub foreign_agent_key: Option<String>,
    /// `agent.id` of that agent (not an agent id of the first account).
    #[arg(long, env = "MA2H_CONFORMANCE_FOREIGN_AGENT_ID", default_value = "conf-elsewhere")]
    pub foreign_agent_id: String,
    /// API key of an agent of the account that the §16.4 kill-switch and §16.4.1 hard-stop checks
    /// stop (an operator close of its session, `POST /v1/agents/{id}/stop`) and resume. Use an
    /// agent nothing else relies on; the runner lifts its stop afterwards. Without it those checks
    /// are skipped.
    #[arg(long, env = "MA2H_CONFORMANCE_STOP_AGENT_KEY", hide_env_values = true)]
    pub stop_agent_key: Option<String>,
    /// `agent.id` of that agent.
    #[arg(long, env = "MA2H_CONFORMANCE_STOP_AGENT_ID", default_value = "conf-stop")]
    pub stop_agent_id: String,
    /// A second operator credential of the same account, for the `ma2h-hub.decisions` checks
    /// that need two people (a delegate answering for the first operator, a quorum of two).
    /// Without it those checks are skipped.
    #[arg(long, env = "MA2H_CONFORMANCE_SECOND_OPERATOR_KEY", hide_env_values = true)]
    pub second_operator_key: Option<String>,
    /// The actor the Hub attests for it, e.g. `human:bob`.
    #[arg(long, env = "MA2H_CONFORMANCE_SECOND_OPERATOR_ACTOR", default_value = "human:conf-bob")]
    pub second_operator_actor: String,
    /// How long to wait for a push to arrive (and to observe that a 4xx is not retried).
    #[arg(long, env = "MA2H_CONFORMANCE_PUSH_WAIT_SECONDS", default_value_t = 10)]
    pub push_wait_seconds: u64,
    /// Directory of the project's conformance vectors.
    #[arg(long, env = "MA2H_CONFORMANCE_VECTORS", default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/vectors"))]
    pub vectors: PathBuf,
    /// Print the report as one JSON document instead of lines.
    #[arg(long)]
    pub json: bool,
}

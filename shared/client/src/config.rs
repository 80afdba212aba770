//! Configuration from the environment: `MA2H_HUB_URL`, `MA2H_API_KEY`, `MA2H_AGENT_ID`,
//! `MA2H_SIGNING_SECRET`, `MA2H_STATE_KEY`, and `MA2H_RESOLVERS` (comma-separated default
//! `allowed_resolvers`, so a human can answer without per-call flags, §9.1).

use crate::ClientError;

/// Everything the client reads from the environment. Each field is optional here; the accessors
/// turn a missing value into a clear [`ClientError::Config`] naming the variable.
#[derive(Clone, Default)]
pub struct Config {
    pub hub_url: Option<String>,
    pub api_key: Option<String>,
    pub agent_id: Option<String>,
    pub signing_secret: Option<String>,
    pub state_key: Option<String>,
    pub resolvers: Vec<String>,
    pub run_id: Option<String>,
    pub runtime: String,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("hub_url", &self.hub_url)
            .field("agent_id", &self.agent_id)
            .field("resolvers", &self.resolvers)
            .finish_non_exhaustive() // never print secrets
    }
}

impl Config {
    /// Read the process environment.
    pub fn from_env() -> Self {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Read through `lookup` (testable). Blank values count as unset.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let get = |k: &str| lookup(k).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        let resolvers = get("MA2H_RESOLVERS")
            .map(|v| v.split(',').map(|r| r.trim().to_owned()).filter(|r| !r.is_empty()).collect())
            .unwrap_or_default();
        // §4.1 runtime: github-actions when running there, else cli.
        let runtime = if get("GITHUB_ACTIONS").as_deref() == Some("true") { "github-actions" } else { "cli" };
        Self {
            hub_url: get("MA2H_HUB_URL").map(|u| u.trim_end_matches('/').to_owned()),
            api_key: get("MA2H_API_KEY"),
            agent_id: get("MA2H_AGENT_ID"),
            signing_secret: get("MA2H_SIGNING_SECRET"),
            state_key: get("MA2H_STATE_KEY"),
            resolvers,
            run_id: get("MA2H_RUN_ID").or_else(|| get("GITHUB_RUN_ID")),
            runtime: runtime.to_owned(),
        }
    }

    fn need<'a>(v: &'a Option<String>, name: &str, what: &str) -> Result<&'a str, ClientError> {
        v.as_deref().ok_or_else(|| ClientError::Config(format!("{name} is not set ({what})")))
    }

    pub fn hub_url(&self) -> Result<&str, ClientError> {
        Self::need(&self.hub_url, "MA2H_HUB_URL", "the Hub's base URL, e.g. http://127.0.0.1:8080")
    }
    pub fn api_key(&self) -> Result<&str, ClientError> {
        Self::need(&self.api_key, "MA2H_API_KEY", "the agent's API key")
    }
    pub fn agent_id(&self) -> Result<&str, ClientError> {
        Self::need(&self.agent_id, "MA2H_AGENT_ID", "the agent.id the API key is scoped to")
    }
    pub fn state_key(&self) -> Result<&str, ClientError> {
        Self::need(&self.state_key, "MA2H_STATE_KEY", "the per-agent state-seal key, 32 bytes base64 (§9.3)")
    }
}

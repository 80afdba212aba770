//! The receiver side: `ma2h verify` (§9.2 + replay cache), `ma2h seal-state` / `ma2h open-state`
//! (§9.3), and the key/config plumbing they share with `ma2h listen`.

use std::io::Read;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use ma2h_client::replay::ReplayCache;
use ma2h_client::verify::{self, Rejection, Verdict, Verifier};
use ma2h_client::{Client, Config, StateKey, seal};
use serde_json::Value;

use crate::exit::{self, fail, usage};

/// How a receiver knows itself and its keys.
#[derive(Args, Debug, Clone)]
pub struct KeyArgs {
    /// This receiver's own callback URL, exactly as sent in callback.url (never taken from the request).
    #[arg(long, env = "MA2H_CALLBACK_URL")]
    pub callback_url: Option<String>,
    /// An HMAC secret (repeatable: two during rotation). Also MA2H_CALLBACK_SECRET,
    /// MA2H_CALLBACK_SECRET_PREVIOUS and MA2H_SIGNING_SECRET.
    #[arg(long = "key")]
    pub keys: Vec<String>,
    /// An Ed25519 public key, base64url (repeatable: two during rotation).
    #[arg(long = "ed25519-key")]
    pub ed25519_keys: Vec<String>,
    /// Also trust the Ed25519 keys the Hub publishes in /.well-known/ma2h `signing_keys`.
    #[arg(long)]
    pub discover_keys: bool,
    /// Replay window in seconds (§9.2: ±120).
    #[arg(long, default_value_t = 120)]
    pub window: i64,
    /// Replay-cache directory (default $MA2H_STATE_DIR, $XDG_STATE_HOME/ma2h or ~/.local/state/ma2h).
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
}

impl KeyArgs {
    pub async fn verifier(&self, config: &Config, callback_url: Option<String>) -> Result<Verifier> {
        let url = callback_url
            .or_else(|| self.callback_url.clone())
            .ok_or_else(|| usage("--callback-url (or MA2H_CALLBACK_URL) is required: the receiver's own URL"))?;
        let mut keys: Vec<_> = self.keys.iter().map(|k| verify::hmac_key(k)).collect();
        for var in ["MA2H_CALLBACK_SECRET", "MA2H_CALLBACK_SECRET_PREVIOUS"] {
            if let Some(v) = std::env::var(var).ok().filter(|v| !v.trim().is_empty()) {
                keys.push(verify::hmac_key(v.trim()));
            }
        }
        if let Some(s) = &config.signing_secret {
            keys.push(verify::hmac_key(s));
        }
        for k in &self.ed25519_keys {
            keys.push(verify::ed25519_key(k).ok_or_else(|| usage(format!("--ed25519-key `{k}` is not a key")))?);
        }
        if self.discover_keys {
            let hub = config.hub_url().map_err(|e| usage(e.to_string()))?;
            let doc = Client::new(hub, "")?.discover().await.map_err(exit::client)?;
            keys.extend(verify::keys_from_capability(&doc));
        }
        if keys.is_empty() {
            return Err(usage(
                "no verification key: pass --key / --ed25519-key / --discover-keys, or set MA2H_CALLBACK_SECRET or MA2H_SIGNING_SECRET",
            ));
        }
        let dir = self.state_dir.clone().unwrap_or_else(ReplayCache::default_dir);
        let cache =
            ReplayCache::open(&dir).with_context(|| format!("opening the replay cache in {}", dir.display()))?;
        let mut v = Verifier::new(&url, keys, Some(cache));
        v.window_secs = self.window;
        Ok(v)
    }
}

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The MA2H-Signature header value (or MA2H_SIGNATURE).
    #[arg(long, env = "MA2H_SIGNATURE")]
    pub signature: Option<String>,
    /// The received body, byte for byte (`-` = stdin).
    #[arg(long, default_value = "-")]
    pub body: String,
    #[command(flatten)]
    pub keys: KeyArgs,
}

pub fn read_input(path: &str) -> Result<Vec<u8>> {
    if path == "-" {
        let mut buf = Vec::new();
        std::io::stdin().read_to_end(&mut buf).context("reading stdin")?;
        Ok(buf)
    } else {
        std::fs::read(path).with_context(|| format!("reading {path}"))
    }
}

/// Map a verdict to output + exit code: the verified body on stdout when accepted.
pub fn verdict_code(verdict: Result<Verdict, Rejection>) -> u8 {
    match verdict {
        Ok(Verdict::Accepted(r)) => {
            eprintln!("accepted: {} {} ({})", r.in_reply_to, r.resolution, r.resolution_id);
            println!("{}", r.body);
            exit::OK
        }
        Ok(Verdict::Duplicate(r)) => {
            eprintln!("duplicate: {} {} already acted on", r.in_reply_to, r.resolution_id);
            exit::DUPLICATE
        }
        Err(Rejection::Cache(e)) => {
            eprintln!("error: replay cache: {e}");
            exit::FAILURE
        }
        Err(e) => {
            eprintln!("rejected: {e}");
            exit::REJECTED
        }
    }
}

pub async fn verify_cmd(a: &VerifyArgs, config: &Config) -> Result<u8> {
    let header = a.signature.clone().ok_or_else(|| usage("--signature (or MA2H_SIGNATURE) is required"))?;
    let verifier = a.keys.verifier(config, None).await?;
    let body = read_input(&a.body)?;
    Ok(verdict_code(verifier.verify(&body, &header, ma2h_client::now_unix())))
}

#[derive(Args, Debug)]
pub struct SealArgs {
    /// The state to seal, a JSON file (`-` = stdin).
    #[arg(long = "in", default_value = "-")]
    pub input: String,
    /// Print a fresh random MA2H_STATE_KEY and exit.
    #[arg(long)]
    pub generate_key: bool,
}

/// `open-state` flags.
#[derive(Args, Debug)]
pub struct OpenArgs {
    /// A sealed state object, a Response, or a GET body, as a JSON file (`-` = stdin).
    #[arg(long = "in", default_value = "-")]
    pub input: String,
}

fn state_key(config: &Config) -> Result<(StateKey, String)> {
    let key =
        StateKey::parse(config.state_key().map_err(|e| usage(e.to_string()))?).map_err(|e| usage(e.to_string()))?;
    Ok((key, config.agent_id().map_err(|e| usage(e.to_string()))?.to_owned()))
}

fn parse_json(bytes: &[u8]) -> Result<Value> {
    serde_json::from_slice(bytes).map_err(|e| usage(format!("input is not JSON: {e}")))
}

pub fn seal_cmd(a: &SealArgs, config: &Config) -> Result<u8> {
    if a.generate_key {
        println!("{}", StateKey::generate_base64());
        return Ok(exit::OK);
    }
    let (key, agent) = state_key(config)?;
    let state = parse_json(&read_input(&a.input)?)?;
    println!("{}", seal::seal(&key, &agent, &state));
    Ok(exit::OK)
}

/// Accepts the sealed object itself, a §6 Response (`.state`) or a §8.2 GET body (`.response.state`).
pub fn open_cmd(a: &OpenArgs, config: &Config) -> Result<u8> {
    let (key, agent) = state_key(config)?;
    let input = parse_json(&read_input(&a.input)?)?;
    let sealed = if input.get("ma2h_sealed").is_some() {
        &input
    } else if let Some(s) = input.get("state") {
        s
    } else if let Some(s) = input.get("response").and_then(|r| r.get("state")) {
        s
    } else {
        return Err(fail(exit::STATE_REJECTED, "state rejected: the input carries no sealed state"));
    };
    let plain =
        seal::open(&key, &agent, sealed).map_err(|e| fail(exit::STATE_REJECTED, format!("state rejected: {e}")))?;
    println!("{plain}");
    Ok(exit::OK)
}

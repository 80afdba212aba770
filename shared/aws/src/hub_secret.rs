//! The Hub's keys from Secrets Manager, read once per cold start. The template passes only the
//! secret's name (`MA2H_HUB_SECRET`), never its value: a key in the function's environment would
//! be readable by anyone allowed `lambda:GetFunctionConfiguration`. The function's role may read
//! that one secret (`secretsmanager:GetSecretValue`), nothing else.
//!
//! The secret is a JSON object: `master_key` and `ed25519_seed` (base64, 32 bytes each) and,
//! while a signing key is being rotated, `ed25519_previous` (an array of seeds still published,
//! so pushes signed before the rotation keep verifying). `MA2H_MASTER_KEY` / `MA2H_ED25519_SEED`
//! in the environment still win (moto, LocalStack, the admin binary).

use ma2h_core::settings::{Secret, Settings};
use serde::Deserialize;

use crate::wiring::ConfigError;

/// The variable naming the secret (name or ARN).
pub const VAR: &str = "MA2H_HUB_SECRET";

#[derive(Deserialize)]
struct HubSecret {
    master_key: String,
    ed25519_seed: String,
    #[serde(default)]
    ed25519_previous: Vec<String>,
}

/// Fill the keys the environment did not set from the secret's JSON text.
pub fn apply(mut settings: Settings, secret_json: &str) -> Result<Settings, ConfigError> {
    let parsed: HubSecret = serde_json::from_str(secret_json).map_err(|e| ConfigError::Invalid {
        var: VAR,
        // serde's message names the field, never a value
        reason: format!("the secret is not a JSON object with master_key and ed25519_seed: {e}"),
    })?;
    if settings.master_key.is_none() {
        settings.master_key = Some(Secret(parsed.master_key));
    }
    if settings.ed25519_seed.is_none() {
        settings.ed25519_seed = Some(Secret(parsed.ed25519_seed));
        if settings.ed25519_previous.is_empty() {
            settings.ed25519_previous = parsed.ed25519_previous;
        }
    }
    Ok(settings)
}

/// Read the secret named by `MA2H_HUB_SECRET` when the environment lacks a key.
pub async fn load(
    settings: Settings,
    config: &aws_config::SdkConfig,
    secret_id: Option<String>,
) -> Result<Settings, crate::Error> {
    let complete = settings.master_key.is_some() && settings.ed25519_seed.is_some();
    let Some(id) = secret_id.filter(|_| !complete) else { return Ok(settings) };
    let client = aws_sdk_secretsmanager::Client::new(config);
    let out = client.get_secret_value().secret_id(&id).send().await.map_err(|e| {
        format!(
            "reading the Hub's keys from Secrets Manager ({id}): {}",
            aws_sdk_secretsmanager::error::DisplayErrorContext(&e)
        )
    })?;
    let text = out.secret_string().ok_or_else(|| format!("{id}: the secret has no string value"))?;
    Ok(apply(settings, text)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

    #[test]
    fn the_secret_fills_missing_keys_and_the_environment_wins() {
        let json = format!(r#"{{"master_key":"{SEED}","ed25519_seed":"{SEED}","ed25519_previous":["{SEED}"]}}"#);
        let s = apply(Settings::default(), &json).unwrap();
        assert_eq!(s.master_key.unwrap().0, SEED);
        assert_eq!(s.ed25519_previous.len(), 1);
        let env = Settings { master_key: Some(Secret("from-env".into())), ..Settings::default() };
        let s = apply(env, &json).unwrap();
        assert_eq!(s.master_key.unwrap().0, "from-env");
        assert_eq!(s.ed25519_seed.unwrap().0, SEED);
    }

    #[test]
    fn a_malformed_secret_names_the_fields_never_a_value() {
        let err = apply(Settings::default(), r#"{"master_key":"s3cr3t-value"}"#).unwrap_err().to_string();
        assert!(err.contains("ed25519_seed") && !err.contains("s3cr3t-value"), "{err}");
        assert!(apply(Settings::default(), "not json").is_err());
    }
}

//! The Hub's keys from Secrets Manager, read once per cold start, in two secrets so that each
//! function reads only what it needs. The template passes only their names, never a value (a key
//! in the function's environment would be readable by anyone allowed
//! `lambda:GetFunctionConfiguration`):
//!
//! - **the key secret** (`MA2H_HUB_SECRET`, every function but discovery): a JSON object with
//!   `master_key` and `ed25519_seed` (standard base64, 32 bytes each) and, while a signing key
//!   is being rotated, `ed25519_previous` — the *public* keys (base64url, as the capability
//!   document shows them) still published so pushes signed before the rotation keep verifying;
//! - **the public keys** (`MA2H_HUB_PUBLIC_SECRET`, the discovery function only, which serves
//!   the capability document and signs nothing): `ed25519_public` and `ed25519_previous`.
//!
//! [`generate`], [`rotate`] and [`public_of`] keep the two in step (`ma2h-admin-aws
//! init-hub-keys`, `rotate-hub-key`, `publish-hub-keys`; `make aws-local`). `MA2H_MASTER_KEY` /
//! `MA2H_ED25519_SEED` in the environment still win (moto, LocalStack, the admin binary).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ma2h_core::kernel::keys::HubKeys;
use ma2h_core::kernel::settings::{Secret, Settings};
use serde::{Deserialize, Serialize};

use crate::wiring::ConfigError;

/// The variable naming the key secret (name or ARN).
pub const VAR: &str = "MA2H_HUB_SECRET";
/// The variable naming the public-keys secret (the discovery function's only secret).
pub const PUBLIC_VAR: &str = "MA2H_HUB_PUBLIC_SECRET";

/// The key secret's JSON.
#[derive(Deserialize, Serialize)]
pub struct HubSecret {
    pub master_key: String,
    pub ed25519_seed: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ed25519_previous: Vec<String>,
}

/// The public-keys secret's JSON.
#[derive(Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct PublicKeys {
    pub ed25519_public: String,
    #[serde(default)]
    pub ed25519_previous: Vec<String>,
}

fn invalid(var: &'static str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { var, reason: reason.into() }
}

fn parse(secret_json: &str) -> Result<HubSecret, ConfigError> {
    // serde's message names the field, never a value
    serde_json::from_str(secret_json)
        .map_err(|e| invalid(VAR, format!("the secret is not a JSON object with master_key and ed25519_seed: {e}")))
}

/// Fill the keys the environment did not set from the key secret's JSON text.
pub fn apply(mut settings: Settings, secret_json: &str) -> Result<Settings, ConfigError> {
    let parsed = parse(secret_json)?;
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

/// The published keys of a key secret: what its public-keys secret must hold.
pub fn public_of(secret_json: &str) -> Result<PublicKeys, ConfigError> {
    let parsed = parse(secret_json)?;
    let keys = HubKeys::from_config(&parsed.ed25519_seed, &parsed.ed25519_previous)?;
    Ok(PublicKeys { ed25519_public: keys.current_public(), ed25519_previous: parsed.ed25519_previous })
}

/// The keys a public-keys secret publishes (signing nothing).
pub fn published_keys(public_json: &str) -> Result<HubKeys, ConfigError> {
    let p: PublicKeys = serde_json::from_str(public_json)
        .map_err(|e| invalid(PUBLIC_VAR, format!("not a JSON object with ed25519_public: {e}")))?;
    let current = HubKeys::parse_public(&p.ed25519_public)
        .ok_or_else(|| invalid(PUBLIC_VAR, "ed25519_public is not a public key"))?;
    Ok(HubKeys::public_only(current, HubKeys::parse_previous(&p.ed25519_previous)?))
}

fn random_key() -> String {
    let mut k = [0u8; 32];
    getrandom::fill(&mut k).expect("the OS random source");
    STANDARD.encode(k)
}

/// A new key secret (random master key and seed) as JSON.
pub fn generate() -> String {
    serde_json::to_string(&HubSecret { master_key: random_key(), ed25519_seed: random_key(), ed25519_previous: vec![] })
        .expect("serializable")
}

/// The key secret after a signing-key rotation: a new seed, the old public key first among the
/// previous ones (kept `keep_previous` deep, newest first). The master key is never rotated in
/// place (it seals the stored secrets).
pub fn rotate(secret_json: &str, keep_previous: usize) -> Result<String, ConfigError> {
    let mut s = parse(secret_json)?;
    let old = public_of(secret_json)?.ed25519_public;
    s.ed25519_previous.insert(0, old);
    s.ed25519_previous.truncate(keep_previous);
    s.ed25519_seed = random_key();
    Ok(serde_json::to_string(&s).expect("serializable"))
}

/// A secret's string value.
async fn read(client: &aws_sdk_secretsmanager::Client, id: &str) -> Result<String, crate::Error> {
    let out = client
        .get_secret_value()
        .secret_id(id)
        .send()
        .await
        .map_err(sm_error("reading the Hub's keys from Secrets Manager: GetSecretValue", id))?;
    Ok(out.secret_string().ok_or_else(|| format!("{id}: the secret has no string value"))?.to_owned())
}

/// Read the key secret named by `MA2H_HUB_SECRET` when the environment lacks a key.
pub async fn load(
    settings: Settings,
    config: &aws_config::SdkConfig,
    secret_id: Option<String>,
) -> Result<Settings, crate::Error> {
    let complete = settings.master_key.is_some() && settings.ed25519_seed.is_some();
    let Some(id) = secret_id.filter(|_| !complete) else { return Ok(settings) };
    Ok(apply(settings, &read(&aws_sdk_secretsmanager::Client::new(config), &id).await?)?)
}

/// Read the public keys named by `MA2H_HUB_PUBLIC_SECRET`.
pub async fn load_public(config: &aws_config::SdkConfig, secret_id: &str) -> Result<HubKeys, crate::Error> {
    Ok(published_keys(&read(&aws_sdk_secretsmanager::Client::new(config), secret_id).await?)?)
}

/// A Secrets Manager failure naming the operation and the secret (never a value).
fn sm_error<E>(op: &str, id: &str) -> impl Fn(aws_sdk_secretsmanager::error::SdkError<E>) -> crate::Error
where
    E: std::error::Error + Send + Sync + 'static,
{
    let what = format!("{op} {id}");
    move |e| format!("{what}: {}", aws_sdk_secretsmanager::error::DisplayErrorContext(&e)).into()
}

/// Create the key secret `name` with fresh keys unless it exists; `true` if created.
pub async fn create(client: &aws_sdk_secretsmanager::Client, name: &str) -> Result<bool, crate::Error> {
    match client.create_secret().name(name).secret_string(generate()).send().await {
        Ok(_) => Ok(true),
        Err(e) if e.as_service_error().is_some_and(|s| s.is_resource_exists_exception()) => Ok(false),
        Err(e) => Err(sm_error("CreateSecret", name)(e)),
    }
}

/// Write `public_name` from the key secret `name` (created, or replaced): what discovery
/// publishes then matches what the other functions sign with.
pub async fn publish(
    client: &aws_sdk_secretsmanager::Client,
    name: &str,
    public_name: &str,
) -> Result<PublicKeys, crate::Error> {
    let public = public_of(&read(client, name).await?)?;
    put_public(client, public_name, &public).await?;
    Ok(public)
}

async fn put_public(
    client: &aws_sdk_secretsmanager::Client,
    public_name: &str,
    public: &PublicKeys,
) -> Result<(), crate::Error> {
    let text = serde_json::to_string(public).expect("serializable");
    match client.create_secret().name(public_name).secret_string(&text).send().await {
        Ok(_) => Ok(()),
        Err(e) if e.as_service_error().is_some_and(|s| s.is_resource_exists_exception()) => {
            put(client, public_name, text).await
        }
        Err(e) => Err(sm_error("CreateSecret", public_name)(e)),
    }
}

/// Replace the value of the existing secret `id`.
async fn put(client: &aws_sdk_secretsmanager::Client, id: &str, text: String) -> Result<(), crate::Error> {
    client.put_secret_value().secret_id(id).secret_string(text).send().await.map_err(sm_error("PutSecretValue", id))?;
    Ok(())
}

/// Rotate the signing key stored in `name`: the new public key is published first (beside the
/// old one), then the key secret is replaced — so no push is ever signed with a key the
/// capability document does not list. Functions pick the new key up at their next cold start.
pub async fn rotate_stored(
    client: &aws_sdk_secretsmanager::Client,
    name: &str,
    public_name: &str,
    keep_previous: usize,
) -> Result<PublicKeys, crate::Error> {
    let rotated = rotate(&read(client, name).await?, keep_previous)?;
    let public = public_of(&rotated)?;
    put_public(client, public_name, &public).await?;
    put(client, name, rotated).await?;
    Ok(public)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

    #[test]
    fn the_secret_fills_missing_keys_and_the_environment_wins() {
        let previous = HubKeys::from_seed(&[9u8; 32], vec![]).current_public();
        let json = format!(r#"{{"master_key":"{SEED}","ed25519_seed":"{SEED}","ed25519_previous":["{previous}"]}}"#);
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

    #[test]
    fn the_public_secret_publishes_what_the_key_secret_signs_with_and_nothing_private() {
        let secret = generate();
        let public = public_of(&secret).unwrap();
        let text = serde_json::to_string(&public).unwrap();
        let private: HubSecret = serde_json::from_str(&secret).unwrap();
        assert!(!text.contains(&private.ed25519_seed) && !text.contains(&private.master_key), "{text}");
        let full = HubKeys::from_config(&private.ed25519_seed, &[]).unwrap();
        let published = published_keys(&text).unwrap();
        assert_eq!(published.published(), full.published());
        assert!(published.signer().is_none());
    }

    #[test]
    fn a_rotation_signs_with_a_new_key_and_still_publishes_the_old_one() {
        let before = generate();
        let after = rotate(&before, 2).unwrap();
        let (b, a): (HubSecret, HubSecret) =
            (serde_json::from_str(&before).unwrap(), serde_json::from_str(&after).unwrap());
        assert_eq!(a.master_key, b.master_key, "the master key is never rotated in place");
        assert_ne!(a.ed25519_seed, b.ed25519_seed);
        let (old, new) = (public_of(&before).unwrap(), public_of(&after).unwrap());
        assert_eq!(new.ed25519_previous, vec![old.ed25519_public.clone()]);
        assert_ne!(new.ed25519_public, old.ed25519_public);
        let twice = rotate(&rotate(&after, 2).unwrap(), 2).unwrap();
        assert_eq!(public_of(&twice).unwrap().ed25519_previous.len(), 2, "kept two deep");
    }
}

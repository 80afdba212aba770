//! The Hub's keys read from Secrets Manager (moto) at start: what `MA2H_HUB_SECRET` names fills
//! the settings; a missing secret is a start-up error naming it, never a value.

use ma2h_core::kernel::settings::{Secret, Settings};
use ma2h_test_support::{ED25519_SEED_B64, MASTER_KEY_B64, moto_config, unique};

#[tokio::test]
async fn the_keys_come_from_the_named_secret_and_a_missing_one_fails_start_up() {
    let Some(config) = moto_config().await else { return };
    let name = unique("ma2h-hub-secret");
    let sm = aws_sdk_secretsmanager::Client::new(&config);
    let value = format!(r#"{{"master_key":"{MASTER_KEY_B64}","ed25519_seed":"{ED25519_SEED_B64}"}}"#);
    sm.create_secret().name(&name).secret_string(value).send().await.unwrap();

    let s = ma2h_aws::hub_secret::load(Settings::default(), &config, Some(name.clone())).await.unwrap();
    assert_eq!(s.master_key.as_ref().map(|k| k.0.as_str()), Some(MASTER_KEY_B64));
    assert_eq!(s.ed25519_seed.as_ref().map(|k| k.0.as_str()), Some(ED25519_SEED_B64));

    // keys already in the environment: the secret is not read at all
    let env = Settings {
        master_key: Some(Secret(MASTER_KEY_B64.into())),
        ed25519_seed: Some(Secret(ED25519_SEED_B64.into())),
        ..Settings::default()
    };
    let s = ma2h_aws::hub_secret::load(env, &config, Some("no-such-secret".into())).await.unwrap();
    assert!(s.master_key.is_some());

    let err =
        ma2h_aws::hub_secret::load(Settings::default(), &config, Some(format!("{name}-absent"))).await.unwrap_err();
    let text = err.to_string();
    assert!(text.contains(&format!("{name}-absent")) && !text.contains(MASTER_KEY_B64), "{text}");
}

/// `init-hub-keys`, `rotate-hub-key` and `publish-hub-keys` on Secrets Manager: the key secret is
/// never overwritten by an init, a rotation publishes the new key beside the old one, and what
/// discovery serves from the public secret is exactly what the others sign and verify with.
#[tokio::test]
async fn init_rotate_and_publish_keep_the_two_secrets_in_step() {
    use ma2h_aws::hub_secret::{create, load, load_public, publish, rotate_stored};
    use ma2h_core::kernel::keys::HubKeys;
    let Some(config) = moto_config().await else { return };
    let sm = aws_sdk_secretsmanager::Client::new(&config);
    let (name, public) = (unique("ma2h-hub"), unique("ma2h-hub-public"));
    assert!(create(&sm, &name).await.unwrap());
    assert!(!create(&sm, &name).await.unwrap(), "an existing key secret is never replaced");
    let first = publish(&sm, &name, &public).await.unwrap();
    assert!(first.ed25519_previous.is_empty());

    let rotated = rotate_stored(&sm, &name, &public, 1).await.unwrap();
    assert_ne!(rotated.ed25519_public, first.ed25519_public);
    assert_eq!(rotated.ed25519_previous, vec![first.ed25519_public.clone()]);
    let served = load_public(&config, &public).await.unwrap();
    let settings = load(Settings::default(), &config, Some(name.clone())).await.unwrap();
    let signing = HubKeys::from_config(&settings.ed25519_seed.unwrap().0, &settings.ed25519_previous).unwrap();
    assert_eq!(served.published(), signing.published(), "discovery publishes what the others sign with");
    assert!(served.signer().is_none() && signing.signer().is_some());

    let again = rotate_stored(&sm, &name, &public, 1).await.unwrap();
    assert_eq!(again.ed25519_previous, vec![rotated.ed25519_public], "kept one deep");
}

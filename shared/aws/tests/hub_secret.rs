//! The Hub's keys read from Secrets Manager (moto) at start: what `MA2H_HUB_SECRET` names fills
//! the settings; a missing secret is a start-up error naming it, never a value.

use ma2h_core::settings::{Secret, Settings};
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

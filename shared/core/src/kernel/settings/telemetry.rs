//! OpenTelemetry trace export (issue 43): off unless `MA2H_OTLP_ENDPOINT` names a collector.

use super::Env;

/// Where traces go, if anywhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TelemetrySettings {
    /// The OTLP/HTTP collector's base URL (`MA2H_OTLP_ENDPOINT`, e.g. `http://localhost:4318`,
    /// the ADOT Lambda layer's collector); spans go to `{endpoint}/v1/traces` as protobuf. Unset:
    /// no export, and no cost on the request path.
    pub otlp_endpoint: Option<String>,
    /// The `service.name` resource attribute (`MA2H_OTLP_SERVICE_NAME`; default `ma2h-hub`, or
    /// the Lambda function's name on AWS).
    pub service_name: String,
}

impl Default for TelemetrySettings {
    fn default() -> Self {
        Self { otlp_endpoint: None, service_name: "ma2h-hub".into() }
    }
}

impl TelemetrySettings {
    /// Read on their own, before the rest of the settings (a Lambda function starts tracing
    /// before it builds its adapters); `Settings::from_vars` reads them the same way.
    pub fn from_env() -> Result<Self, super::SettingsError> {
        let mut e = Env::new(|k| std::env::var(k).ok());
        let mut s = Self::default();
        s.read(&mut e);
        e.finish()?;
        Ok(s)
    }

    pub(super) fn read(&mut self, e: &mut Env<'_>) {
        // Refused without echoing the value: a URL may carry a token.
        if let Some(v) = e.raw("MA2H_OTLP_ENDPOINT") {
            match endpoint(&v) {
                Ok(url) => self.otlp_endpoint = Some(url),
                Err(why) => e.refuse(&format!("MA2H_OTLP_ENDPOINT {why}")),
            }
        }
        if let Some(name) = e.raw("MA2H_OTLP_SERVICE_NAME") {
            self.service_name = name;
        } else if let Some(function) = e.raw("AWS_LAMBDA_FUNCTION_NAME") {
            self.service_name = function;
        }
    }
}

fn endpoint(v: &str) -> Result<String, &'static str> {
    let url = url::Url::parse(v).map_err(|_| "is not a URL")?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err("must be an http(s) URL with a host (e.g. http://localhost:4318)");
    }
    if !url.username().is_empty() || url.password().is_some() || url.query().is_some() {
        return Err("must not carry credentials or a query");
    }
    Ok(v.trim_end_matches('/').to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pairs: &[(&str, &str)]) -> Result<TelemetrySettings, String> {
        let vars: std::collections::HashMap<String, String> =
            pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        let mut e = Env::new(|k| vars.get(k).cloned());
        let mut s = TelemetrySettings::default();
        s.read(&mut e);
        e.finish().map(|()| s).map_err(|e| e.to_string())
    }

    #[test]
    fn export_is_off_by_default_and_an_endpoint_turns_it_on() {
        assert_eq!(read(&[]).unwrap(), TelemetrySettings::default());
        let s = read(&[("MA2H_OTLP_ENDPOINT", "http://localhost:4318/"), ("MA2H_OTLP_SERVICE_NAME", "hub-a")]).unwrap();
        assert_eq!(s.otlp_endpoint.as_deref(), Some("http://localhost:4318"));
        assert_eq!(s.service_name, "hub-a");
        let lambda = read(&[("AWS_LAMBDA_FUNCTION_NAME", "ma2h-submit")]).unwrap();
        assert_eq!(lambda.service_name, "ma2h-submit");
    }

    #[test]
    fn a_bad_endpoint_is_refused_by_name() {
        for bad in ["localhost:4318", "ftp://collector", "https://user:pw@collector"] {
            let err = read(&[("MA2H_OTLP_ENDPOINT", bad)]).unwrap_err();
            assert!(err.contains("MA2H_OTLP_ENDPOINT"), "{bad}: {err}");
            assert!(!err.contains("pw@"), "the value is never echoed: {err}");
        }
    }
}

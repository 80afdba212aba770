//! Extractors: the authenticated caller, and request bodies, paths and queries whose rejections
//! become §8.5 envelopes instead of axum's plain-text defaults.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::header;
use axum::http::request::Parts;
use ma2h_core::kernel::auth;
use ma2h_core::kernel::auth::Principal;
use ma2h_core::{Hub, HubError};
use std::collections::HashMap;

use crate::error::ApiError;

/// The header carrying an API key when `Authorization: Bearer` is not used (§9.1 `apikey`).
pub const API_KEY_HEADER: &str = "x-api-key";

/// The authenticated principal, from `Authorization: Bearer <key>` or `X-API-Key: <key>`.
#[derive(Debug, Clone)]
pub struct Caller(pub Principal);

impl FromRequestParts<Hub> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, hub: &Hub) -> Result<Self, Self::Rejection> {
        let bearer = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token);
        let api_key = parts.headers.get(API_KEY_HEADER).and_then(|v| v.to_str().ok());
        let client = parts.extensions.get::<ClientIp>().map(|c| c.0);
        let principal = auth::authenticate_from(hub, bearer.or(api_key), client).await?;
        // issue 40: an operator's own API request is activity (presence for on-call ladders)
        if let ma2h_core::kernel::credentials::PrincipalId::Operator(human) = &principal.id {
            ma2h_core::decisions::presence::seen(hub, &principal.account, human).await;
        }
        Ok(Self(principal))
    }
}

/// The raw body, capped. An over-size body is a 422 (§8.6), never a bare 413.
#[derive(Debug)]
pub struct Body(pub Bytes);

impl FromRequest<Hub> for Body {
    type Rejection = ApiError;

    async fn from_request(req: Request, hub: &Hub) -> Result<Self, Self::Rejection> {
        let limit = hub.settings.max_request_bytes();
        let body = req.into_body();
        let bytes = axum::body::to_bytes(body, limit).await.map_err(|e| {
            let cause = e.into_inner();
            body_error(&*cause, hub)
        })?;
        Ok(Self(bytes))
    }
}

/// A request body that did not arrive before the server's body deadline (the local server wraps
/// every body in one; see `ma2h-hub`'s `server` module).
#[derive(Debug, thiserror::Error)]
#[error("request body deadline elapsed")]
pub struct BodyTimeout;

/// Why reading a body failed: its deadline passed (408), it ran past the cap (422, §8.6:
/// over-size is never a bare 413), or it could not be read at all — malformed chunked framing,
/// say (400).
fn body_error(e: &(dyn std::error::Error + 'static), hub: &Hub) -> HubError {
    let mut cause = Some(e);
    while let Some(c) = cause {
        if c.is::<BodyTimeout>() {
            return HubError::RequestTimeout { seconds: hub.settings.server.body_timeout.as_secs() };
        }
        if c.is::<http_body_util::LengthLimitError>() {
            // The read stops one byte past the largest envelope (`max_request_bytes`), so that an
            // envelope of exactly the maximum is still read and judged by the use case.
            let max = hub.settings.limits.max_envelope_bytes;
            return HubError::invalid_field(format!("request body exceeds max_envelope_bytes ({max})"));
        }
        cause = c.source();
    }
    HubError::validation(format!("the request body could not be read: {e}"))
}

/// A path parameter; a segment that does not decode (invalid UTF-8 after percent-decoding) is a
/// 400 envelope, not axum's plain-text rejection.
#[derive(Debug)]
pub struct Path<T>(pub T);

impl<S, T> FromRequestParts<S> for Path<T>
where
    S: Send + Sync,
    T: serde::de::DeserializeOwned + Send,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let axum::extract::Path(value) = axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map_err(|e| HubError::validation(format!("bad path: {}", e.body_text())))?;
        Ok(Self(value))
    }
}

/// The client's address if the transport supplied one (never a rejection).
#[derive(Debug, Clone, Copy, Default)]
pub struct MaybeClientIp(pub Option<std::net::IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for MaybeClientIp {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Self(parts.extensions.get::<ClientIp>().map(|c| c.0)))
    }
}

/// The client's address, when the transport knows it (the local server's peer address, API
/// Gateway's `sourceIp`); inserted as a request extension and used to throttle failed sign-ins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientIp(pub std::net::IpAddr);

/// The transport's own id for this request (API Gateway's `requestId`), inserted as a request
/// extension by the Lambda adapter; the Router answers it in `x-request-id` and logs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransportRequestId(pub String);

/// Query parameters as a map; bad encodings are a 400.
#[derive(Debug, Default)]
pub struct Params(pub HashMap<String, String>);

impl<S: Send + Sync> FromRequestParts<S> for Params {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Query(map) = Query::<HashMap<String, String>>::from_request_parts(parts, state)
            .await
            .map_err(|e| HubError::validation(format!("bad query string: {e}")))?;
        Ok(Self(map))
    }
}

impl Params {
    pub fn get(&self, k: &str) -> Option<&str> {
        self.0.get(k).map(String::as_str)
    }

    /// A non-negative integer parameter, or a 400 naming it.
    pub fn u32(&self, k: &str) -> Result<Option<u32>, ApiError> {
        self.get(k)
            .map(|v| {
                v.parse::<u32>()
                    .map_err(|_| HubError::validation(format!("query `{k}` must be a non-negative integer")).into())
            })
            .transpose()
    }
}

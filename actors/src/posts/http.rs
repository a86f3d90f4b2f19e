//! How platform responses are classified: transient (retried with backoff),
//! unauthorized (the token is refreshed once) or permanent (the post fails).

use std::time::Duration;

use rand::Rng;
use reqwest::{RequestBuilder, Response, StatusCode};

/// A failed step of a publication.
#[derive(Debug, Clone, PartialEq)]
pub enum PubError {
    /// 5xx, 408, 429, timeouts, connection errors: try again later.
    Transient {
        message: String,
        retry_after: Option<Duration>,
    },
    /// The access token was refused (expired or revoked).
    Unauthorized(String),
    /// The platform refused the request for good.
    Permanent(String),
}

impl PubError {
    pub fn transient(message: impl Into<String>) -> Self {
        PubError::Transient {
            message: message.into(),
            retry_after: None,
        }
    }

    pub fn message(&self) -> &str {
        match self {
            PubError::Transient { message, .. } => message,
            PubError::Unauthorized(m) | PubError::Permanent(m) => m,
        }
    }
}

pub type PubResult<T> = Result<T, PubError>;

/// Sends a request; network failures and timeouts are transient.
pub async fn send(what: &str, req: RequestBuilder) -> PubResult<Response> {
    match req.send().await {
        Ok(r) => Ok(r),
        Err(e) if e.is_timeout() => Err(PubError::transient(format!("{what}: timed out"))),
        Err(e) => Err(PubError::transient(format!("{what}: {}", without_url(&e)))),
    }
}

fn without_url(e: &reqwest::Error) -> String {
    // The URL may carry a token (Instagram passes access_token in the query).
    let mut s = e.to_string();
    if let Some(u) = e.url() {
        s = s.replace(u.as_str(), "<url>");
    }
    s
}

/// Sends a request and returns the response when it is 2xx (or `extra_ok`).
pub async fn send_ok(what: &str, req: RequestBuilder, extra_ok: &[u16]) -> PubResult<Response> {
    let resp = send(what, req).await?;
    let status = resp.status();
    if status.is_success() || extra_ok.contains(&status.as_u16()) {
        return Ok(resp);
    }
    let retry_after = retry_after(&resp);
    let body = resp.text().await.unwrap_or_default();
    Err(classify(what, status, retry_after, &body))
}

/// Sends a request and decodes its 2xx JSON body.
pub async fn send_json(what: &str, req: RequestBuilder) -> PubResult<serde_json::Value> {
    let resp = send_ok(what, req, &[]).await?;
    resp.json().await.map_err(|e| {
        PubError::transient(format!("{what}: unreadable response: {}", without_url(&e)))
    })
}

fn retry_after(resp: &Response) -> Option<Duration> {
    let v = resp.headers().get("retry-after")?.to_str().ok()?.trim();
    v.parse::<u64>().ok().map(Duration::from_secs)
}

/// The error of a non-2xx answer. The three platforms all put a readable
/// text in `error.message` (TikTok also `error.code`; Graph API `error.code`
/// 190 means an invalid or expired token, whatever the status).
pub fn classify(
    what: &str,
    status: StatusCode,
    retry_after: Option<Duration>,
    body: &str,
) -> PubError {
    let json: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    let err = &json["error"];
    let detail = err["message"]
        .as_str()
        .or_else(|| err.as_str())
        .or_else(|| json["error_description"].as_str())
        .map(str::to_string)
        .unwrap_or_else(|| body.chars().take(200).collect());
    let message = format!("{what}: {} {}", status.as_u16(), detail.trim());
    let token_error = err["code"].as_i64() == Some(190)
        || matches!(
            err["code"].as_str(),
            Some("access_token_invalid" | "invalid_token")
        );
    match status.as_u16() {
        401 => PubError::Unauthorized(message),
        _ if token_error => PubError::Unauthorized(message),
        429 => PubError::Transient {
            message,
            retry_after,
        },
        408 | 500..=599 => PubError::Transient {
            message,
            retry_after,
        },
        _ => PubError::Permanent(message),
    }
}

/// Exponential backoff with jitter: `base × 2^(attempt-1)`, capped, then a
/// random value in its upper half.
pub fn backoff(attempt: u32, base: Duration, max: Duration) -> Duration {
    let exp = base.saturating_mul(1u32 << attempt.saturating_sub(1).min(20));
    let d = exp.min(max);
    let half = d / 2;
    half + Duration::from_millis(rand::rng().random_range(0..=half.as_millis().max(1) as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification() {
        let c = |s: u16, b: &str| classify("x", StatusCode::from_u16(s).unwrap(), None, b);
        assert!(matches!(c(503, ""), PubError::Transient { .. }));
        assert!(matches!(c(429, "{}"), PubError::Transient { .. }));
        assert!(matches!(c(401, "{}"), PubError::Unauthorized(_)));
        assert!(matches!(
            c(
                400,
                r#"{"error":{"message":"Error validating access token","code":190}}"#
            ),
            PubError::Unauthorized(_)
        ));
        let p = c(
            403,
            r#"{"error":{"message":"The caller does not have permission"}}"#,
        );
        assert_eq!(
            p,
            PubError::Permanent("x: 403 The caller does not have permission".into())
        );
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        let (b, m) = (Duration::from_millis(100), Duration::from_millis(1000));
        for a in 1..10 {
            let d = backoff(a, b, m);
            let full = (b * 2u32.pow(a - 1)).min(m);
            assert!(
                d >= full / 2 && d <= full + Duration::from_millis(1),
                "{a}: {d:?}"
            );
        }
    }
}

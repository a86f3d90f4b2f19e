//! OAuth 2.0 authorization-code flow of each platform: the authorize URL,
//! the code exchange and the refresh.
//!
//! - YouTube (Google): PKCE S256, `access_type=offline` for a refresh token.
//! - TikTok (Login Kit for web): `client_key`, `state`; PKCE is only required
//!   by TikTok for desktop and mobile apps, so the web flow uses `state`.
//! - Instagram (Instagram Login): `state`; the short-lived token is exchanged
//!   for a 60-day one, which is refreshed with `ig_refresh_token` (no
//!   refresh token).

use base64::Engine;
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use rand::RngCore;
use sha2::{Digest, Sha256};

use super::http::{send_json, PubError, PubResult};
use super::provider::Provider;
use super::settings::{ProviderSettings, PublishSettings};

/// Tokens as a platform returns them.
#[derive(Debug, Clone, Default)]
pub struct TokenSet {
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub expires_in: i64,
    pub refresh_expires_in: Option<i64>,
    /// TikTok `open_id`, Instagram user id (YouTube: found afterwards).
    pub account_id: String,
    pub scope: String,
}

/// A random URL-safe string of `bytes` random bytes.
pub fn random_token(bytes: usize) -> String {
    let mut b = vec![0u8; bytes];
    rand::rng().fill_bytes(&mut b);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

/// The PKCE S256 challenge of a verifier.
pub fn pkce_challenge(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

pub fn uses_pkce(p: Provider) -> bool {
    p == Provider::YouTube
}

fn enc(s: &str) -> String {
    utf8_percent_encode(s, NON_ALPHANUMERIC).to_string()
}

fn query(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={}", enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// The page the user is sent to, to grant access.
pub fn authorize_url(
    p: Provider,
    s: &PublishSettings,
    state: &str,
    verifier: Option<&str>,
) -> String {
    let ps = s.provider(p);
    let redirect = s.redirect_uri(p);
    let challenge = verifier.map(pkce_challenge);
    let mut pairs: Vec<(&str, &str)> = match p {
        Provider::YouTube => vec![
            ("client_id", &ps.client_id),
            ("redirect_uri", &redirect),
            ("response_type", "code"),
            ("scope", &ps.scopes),
            ("access_type", "offline"),
            ("prompt", "consent"),
            ("include_granted_scopes", "true"),
            ("state", state),
        ],
        Provider::TikTok => vec![
            ("client_key", &ps.client_id),
            ("redirect_uri", &redirect),
            ("response_type", "code"),
            ("scope", &ps.scopes),
            ("state", state),
        ],
        Provider::Instagram => vec![
            ("client_id", &ps.client_id),
            ("redirect_uri", &redirect),
            ("response_type", "code"),
            ("scope", &ps.scopes),
            ("state", state),
        ],
    };
    if let Some(c) = challenge.as_deref() {
        pairs.push(("code_challenge", c));
        pairs.push(("code_challenge_method", "S256"));
    }
    let sep = if ps.auth_url.contains('?') { '&' } else { '?' };
    format!("{}{sep}{}", ps.auth_url, query(&pairs))
}

fn oauth_error(e: PubError) -> PubError {
    match e {
        // A refused code or refresh token is permanent, whatever the status.
        PubError::Unauthorized(m) => PubError::Permanent(m),
        other => other,
    }
}

fn tokens(v: &serde_json::Value) -> PubResult<TokenSet> {
    // TikTok nests errors in a 200 body on some failures.
    if let Some(e) = v["error"].as_str().filter(|e| !e.is_empty() && *e != "ok") {
        let d = v["error_description"].as_str().unwrap_or("");
        return Err(PubError::Permanent(format!(
            "token request refused: {e} {d}"
        )));
    }
    let access = v["access_token"].as_str().unwrap_or("");
    if access.is_empty() {
        return Err(PubError::Permanent(
            "token response without access_token".into(),
        ));
    }
    let num = |k: &str| {
        v[k].as_i64()
            .or_else(|| v[k].as_str().and_then(|s| s.parse().ok()))
    };
    Ok(TokenSet {
        access_token: access.to_string(),
        refresh_token: v["refresh_token"].as_str().map(str::to_string),
        expires_in: num("expires_in").unwrap_or(3600),
        refresh_expires_in: num("refresh_expires_in"),
        account_id: v["open_id"]
            .as_str()
            .map(str::to_string)
            .or_else(|| v["user_id"].as_i64().map(|n| n.to_string()))
            .or_else(|| v["user_id"].as_str().map(str::to_string))
            .unwrap_or_default(),
        scope: v["scope"]
            .as_str()
            .map(str::to_string)
            .or_else(|| v["permissions"].as_str().map(str::to_string))
            .unwrap_or_default(),
    })
}

fn form_request(
    http: &reqwest::Client,
    ps: &ProviderSettings,
    form: &[(&str, &str)],
) -> reqwest::RequestBuilder {
    http.post(&ps.token_url)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("cache-control", "no-cache")
        .body(query(form))
}

/// Exchanges an authorization code for tokens.
pub async fn exchange_code(
    http: &reqwest::Client,
    p: Provider,
    s: &PublishSettings,
    code: &str,
    verifier: Option<&str>,
) -> PubResult<TokenSet> {
    let ps = s.provider(p);
    let redirect = s.redirect_uri(p);
    let id_field = if p == Provider::TikTok {
        "client_key"
    } else {
        "client_id"
    };
    let mut form = vec![
        (id_field, ps.client_id.as_str()),
        ("client_secret", ps.client_secret.as_str()),
        ("code", code),
        ("grant_type", "authorization_code"),
        ("redirect_uri", redirect.as_str()),
    ];
    if let Some(v) = verifier {
        form.push(("code_verifier", v));
    }
    let v = send_json("token exchange", form_request(http, ps, &form))
        .await
        .map_err(oauth_error)?;
    let mut t = tokens(&v)?;
    if p == Provider::Instagram {
        // Short-lived (1 h) to long-lived (60 days).
        let long = send_json(
            "long-lived token exchange",
            http.get(format!("{}/access_token", ps.api_url.trim_end_matches('/')))
                .query(&[
                    ("grant_type", "ig_exchange_token"),
                    ("client_secret", ps.client_secret.as_str()),
                    ("access_token", t.access_token.as_str()),
                ]),
        )
        .await
        .map_err(oauth_error)?;
        let l = tokens(&long)?;
        t.access_token = l.access_token;
        t.expires_in = l.expires_in;
    }
    Ok(t)
}

/// Gets a fresh access token: with the refresh token (YouTube, TikTok) or by
/// refreshing the long-lived token itself (Instagram).
pub async fn refresh(
    http: &reqwest::Client,
    p: Provider,
    s: &PublishSettings,
    access_token: &str,
    refresh_token: Option<&str>,
) -> PubResult<TokenSet> {
    let ps = s.provider(p);
    let v = match p {
        Provider::Instagram => {
            send_json(
                "token refresh",
                http.get(format!(
                    "{}/refresh_access_token",
                    ps.api_url.trim_end_matches('/')
                ))
                .query(&[
                    ("grant_type", "ig_refresh_token"),
                    ("access_token", access_token),
                ]),
            )
            .await
        }
        Provider::YouTube | Provider::TikTok => {
            let Some(rt) = refresh_token else {
                return Err(PubError::Permanent(
                    "no refresh token: reconnect the account".into(),
                ));
            };
            let id_field = if p == Provider::TikTok {
                "client_key"
            } else {
                "client_id"
            };
            let form = [
                (id_field, ps.client_id.as_str()),
                ("client_secret", ps.client_secret.as_str()),
                ("grant_type", "refresh_token"),
                ("refresh_token", rt),
            ];
            send_json("token refresh", form_request(http, ps, &form)).await
        }
    }
    .map_err(oauth_error)?;
    tokens(&v)
}

/// YouTube: the channel of the token (id, title), for the integrations list.
pub async fn youtube_channel(
    http: &reqwest::Client,
    s: &PublishSettings,
    token: &str,
) -> PubResult<(String, String)> {
    let v = send_json(
        "channel lookup",
        http.get(format!(
            "{}/youtube/v3/channels",
            s.youtube.api_url.trim_end_matches('/')
        ))
        .query(&[("part", "snippet"), ("mine", "true")])
        .bearer_auth(token),
    )
    .await?;
    let item = &v["items"][0];
    Ok((
        item["id"].as_str().unwrap_or("").to_string(),
        item["snippet"]["title"].as_str().unwrap_or("").to_string(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_matches_rfc7636_example() {
        assert_eq!(
            pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn authorize_urls() {
        let mut s = PublishSettings {
            redirect_base: "https://clips.example".into(),
            ..Default::default()
        };
        s.youtube.client_id = "yt-client".into();
        let u = authorize_url(Provider::YouTube, &s, "st4te", Some("verifier"));
        assert!(
            u.starts_with("https://accounts.google.com/o/oauth2/v2/auth?client_id=yt%2Dclient"),
            "{u}"
        );
        assert!(
            u.contains("&state=st4te")
                && u.contains("code_challenge_method=S256")
                && u.contains("access_type=offline")
        );
        assert!(u.contains(&enc(
            "https://clips.example/api/integrations/youtube/callback"
        )));
        let t = authorize_url(Provider::TikTok, &s, "st4te", None);
        assert!(
            t.contains("client_key=") && !t.contains("code_challenge"),
            "{t}"
        );
    }
}

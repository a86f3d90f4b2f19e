//! Stripe's hosted pages, as a browser sees them: `GET /c/pay/:id` (the
//! checkout, with a Pay button that completes the session and returns to
//! its `success_url`) and `GET /p/session/:id` (the customer portal, with a
//! link back to its `return_url`); a browser test maps
//! `checkout.stripe.com` / `billing.stripe.com` onto them. And the
//! environment that points the binary at the local Stripe.

use poem::web::{Data, Path as PPath};
use poem::{handler, Response};

use super::{FakeStripe, PRICES, SECRET_KEY, WEBHOOK_SECRET};

/// Environment for the binary to use the fake at `base` (prices of
/// [`PRICES`], both secrets) and send users back to the given URLs.
pub fn app_env(base: &str, success_url: &str, cancel_url: &str) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = [
        ("CLIPFORGE_BILLING_STRIPE_SECRET_KEY", SECRET_KEY),
        ("CLIPFORGE_BILLING_WEBHOOK_SECRET", WEBHOOK_SECRET),
        ("CLIPFORGE_BILLING_SUCCESS_URL", success_url),
        ("CLIPFORGE_BILLING_CANCEL_URL", cancel_url),
        ("CLIPFORGE_BILLING_STRIPE_API_BASE", base),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    for (plan, freq, id) in PRICES {
        let var = format!(
            "CLIPFORGE_BILLING_PRICE_{}_{}",
            plan.to_uppercase(),
            freq.to_uppercase()
        );
        env.push((var, id.to_string()));
    }
    env
}

fn html(body: String) -> Response {
    Response::builder()
        .content_type("text/html; charset=utf-8")
        .body(format!(
            "<!doctype html><html lang=\"en\"><head><title>Stripe (test)</title></head><body><main>{body}</main></body></html>"
        ))
}

/// The hosted checkout: what is bought, and a Pay button.
#[handler]
pub fn checkout_page(fake: Data<&FakeStripe>, id: PPath<String>) -> Response {
    let Some(session) = fake.state().sessions.get(&id.0).cloned() else {
        return Response::builder()
            .status(poem::http::StatusCode::NOT_FOUND)
            .finish();
    };
    let plan = session["metadata"]["plan"].as_str().unwrap_or("?");
    let frequency = session["metadata"]["frequency"].as_str().unwrap_or("?");
    html(format!(
        "<h1>Subscribe to Clipforge {plan} ({frequency})</h1><p>Test mode: no card is charged.</p>\
         <form method=\"post\"><button type=\"submit\">Pay</button></form>\
         <a href=\"{}\">Back</a>",
        session["cancel_url"].as_str().unwrap_or("/")
    ))
}

/// Pay: the session completes (as [`FakeStripe::pay`]) and Stripe sends the
/// browser to the session's `success_url` with its id filled in.
#[handler]
pub fn checkout_pay(fake: Data<&FakeStripe>, id: PPath<String>) -> Response {
    if !fake.state().sessions.contains_key(&id.0) {
        return Response::builder()
            .status(poem::http::StatusCode::NOT_FOUND)
            .finish();
    }
    let session = fake.pay(&id.0);
    let to = session["success_url"]
        .as_str()
        .unwrap_or("/")
        .replace("{CHECKOUT_SESSION_ID}", &id.0);
    Response::builder()
        .status(poem::http::StatusCode::SEE_OTHER)
        .header("location", to)
        .finish()
}

/// The customer portal: a link back to the application.
#[handler]
pub fn portal_page(fake: Data<&FakeStripe>) -> Response {
    let back = fake.state().portal_return.clone();
    html(format!(
        "<h1>Clipforge billing</h1><p>Your subscription is active.</p><a href=\"{back}\">Return to Clipforge</a>"
    ))
}

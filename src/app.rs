//! Wiring: storage, the engine, the HTTP routes and middleware.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clipforge_actors::accounts::Accounts;
use clipforge_actors::billing::Billing;
use clipforge_actors::engine::{Engine, Settings};
use clipforge_actors::media::whisper::ModelOptions;
use clipforge_actors::storage::kv::{KvStore, SledStore};
use clipforge_actors::storage::kv_postgres::{PostgresOptions, PostgresStore};
use clipforge_actors::storage::links::StableLinks;
use clipforge_actors::storage::objects::{LocalStore, ObjectStore, S3Config, S3Store};
use poem::endpoint::make_sync;
use poem::http::StatusCode;
use poem::web::Data;
use poem::{get, handler, post, Endpoint, EndpointExt, IntoResponse, Response, Route};
use poem_openapi::OpenApiService;

use crate::api::auth::AuthApi;
use crate::api::billing::{admin_set_plan, BillingApi};
use crate::api::clip_timeline::ClipTimelineApi;
use crate::api::clips::ClipsApi;
use crate::api::credits::CreditsApi;
use crate::api::export::ExportApi;
use crate::api::integrations::IntegrationsApi;
use crate::api::keys::KeysApi;
use crate::api::media::MediaApi;
use crate::api::notifications::NotificationsApi;
use crate::api::plans::PlansApi;
use crate::api::posts::ScheduleApi;
use crate::api::projects::ProjectsApi;
use crate::api::templates::TemplatesApi;
use crate::api::webhooks::WebhooksApi;
use crate::config::Config;
use crate::error_body::error_response;
use crate::state::{AppState, State};

pub type Apis = (
    AuthApi,
    MediaApi,
    ProjectsApi,
    ClipsApi,
    ClipTimelineApi,
    ExportApi,
    TemplatesApi,
    CreditsApi,
    PlansApi,
    NotificationsApi,
    BillingApi,
    ScheduleApi,
    IntegrationsApi,
    KeysApi,
    WebhooksApi,
);

/// The OpenAPI service (also used to write `openapi/openapi.json`).
pub fn api_service() -> OpenApiService<Apis, ()> {
    OpenApiService::new(
        (AuthApi, MediaApi, ProjectsApi, ClipsApi, ClipTimelineApi, ExportApi, TemplatesApi, CreditsApi, PlansApi, NotificationsApi, BillingApi, ScheduleApi, IntegrationsApi, KeysApi, WebhooksApi),
        "Clipforge API",
        env!("CARGO_PKG_VERSION"),
    )
    .description("Long videos in, captioned vertical clips out. Every error has the body {\"error\": code, \"message\": text}.")
    .server("/api")
}

fn media_secret(config: &Config) -> anyhow::Result<Vec<u8>> {
    if !config.auth.media_secret.is_empty() {
        return Ok(config.auth.media_secret.expose().as_bytes().to_vec());
    }
    let path = config.node.data_dir.join("media.secret");
    if let Ok(s) = std::fs::read(&path) {
        if s.len() >= 32 {
            return Ok(s);
        }
    }
    let mut bytes = vec![0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("random: {e}"))?;
    let hex = hex::encode(&bytes).into_bytes();
    std::fs::write(&path, &hex).with_context(|| format!("writing {}", path.display()))?;
    Ok(hex)
}

/// The configured object store, and the local one when media is served here.
pub async fn object_store(
    config: &Config,
    public_url: &str,
) -> anyhow::Result<(Arc<dyn ObjectStore>, Option<Arc<LocalStore>>)> {
    Ok(match config.storage.backend.as_str() {
        "s3" => (
            Arc::new(
                S3Store::connect(S3Config {
                    bucket: config.storage.s3_bucket.clone(),
                    region: config.storage.s3_region.clone(),
                    endpoint_url: config.storage.s3_endpoint.clone(),
                    access_key_id: config.storage.s3_access_key_id.clone(),
                    secret_access_key: config.storage.s3_secret_access_key.expose().to_string(),
                    create_bucket: true,
                })
                .await
                .context("connecting to S3")?,
            ),
            None,
        ),
        _ => {
            let dir = config
                .storage
                .local_dir
                .clone()
                .unwrap_or_else(|| config.node.data_dir.join("media"));
            let local = Arc::new(
                LocalStore::new(dir, public_url.to_string(), media_secret(config)?)
                    .context("opening local storage")?,
            );
            (local.clone(), Some(local))
        }
    })
}

/// The configured record store: sled in `<data_dir>/db`, or the
/// namespace `storage.postgres_namespace` in PostgreSQL (shared by every
/// node of a cluster).
/// How long a starting node waits for the sled database's lock (a server
/// restarted right after a crash; see `SledStore::open_waiting`).
const DB_LOCK_WAIT: Duration = Duration::from_secs(10);

pub fn kv_store(config: &Config) -> anyhow::Result<Arc<dyn KvStore>> {
    let storage = &config.storage;
    Ok(match storage.kv.as_str() {
        "postgres" => {
            let mut options = PostgresOptions::new(
                storage.postgres_url.expose(),
                storage.postgres_namespace.trim(),
            );
            options.pool_size = storage.postgres_pool_size;
            // Blocks this thread only (the store runs its own runtime).
            let store = PostgresStore::open(options)
                .context("opening the PostgreSQL store (storage.postgres_url)")?;
            tracing::info!(namespace = %store.namespace(), "records in PostgreSQL");
            Arc::new(store)
        }
        _ => Arc::new(
            SledStore::open_waiting(
                &config.node.data_dir.join("db"),
                storage.db_cache_mb * 1024 * 1024,
                DB_LOCK_WAIT,
            )
            .context("opening the database")?,
        ),
    })
}

/// Builds the engine and returns the shared state.
pub async fn build_state(config: Config, public_url: String) -> anyhow::Result<State> {
    let data = &config.node.data_dir;
    std::fs::create_dir_all(data).with_context(|| format!("creating {}", data.display()))?;
    let kv = kv_store(&config)?;
    // What a previous run of this node left (it may have been killed).
    crate::leftovers::stop_orphans(data);
    crate::leftovers::scratch_in(&data.join("tmp"))?;
    let (objects, local) = object_store(&config, &public_url).await?;
    let links = Arc::new(StableLinks::new(&public_url, &media_secret(&config)?));
    let accounts = Arc::new(
        Accounts::new(kv.clone(), config.plans.table())
            .with_sign_in_limits(config.limits.sign_in_limits()),
    );
    let p = &config.pipeline;
    let settings = Settings {
        data_dir: data.clone(),
        model_dir: p
            .model_dir
            .clone()
            .unwrap_or_else(crate::config::default_model_dir),
        model: ModelOptions {
            threads: p.threads,
            compute_type: p.compute_type.clone(),
            beam_size: p.beam_size,
        },
        batch_size: p.batch_size,
        x264_preset: p.x264_preset.clone(),
        stage_retries: p.stage_retries,
        workers: p.workers,
        max_clips: 10,
        renders_per_account: p.renders_per_account.max(1),
        idle: Duration::from_secs(p.idle_secs),
        rerank: p.rerank(),
    };
    let engine = Engine::new(kv, objects.clone(), accounts, settings);
    engine
        .start_supervision()
        .await
        .map_err(|e| anyhow::anyhow!("starting the supervision tree: {e}"))?;
    // Join the cluster first: resumed projects then send their stages to
    // the cluster's workers, and the scheduler knows it is clustered.
    let cluster = crate::cluster::start(&config, &engine).await?;
    let publishing = crate::posts::start(&config, &public_url, engine.clone()).await?;
    crate::webhooks::start(&config, &engine, links.clone()).await?;
    // Periodic node work beyond the sweeps: platform tokens refreshed and,
    // on a cluster, projects and posts taken over by their owners once the
    // node has heard from its peers and on every membership change.
    let mut periodic = vec![publishing.token_refresh()];
    match &cluster {
        Some(c) => periodic.push(crate::cluster::hand_off_job(
            c.clone(),
            engine.clone(),
            publishing.clone(),
        )),
        None => {
            let resumed = engine.resume_all().await.map_err(|e| anyhow::anyhow!(e))?;
            if resumed > 0 {
                tracing::info!(resumed, "resumed unfinished projects");
            }
        }
    }
    let billing = billing(&config)?;
    let guard = Arc::new(crate::security::Guard::new(&config, &public_url)?);
    start_housekeeping(&engine, &guard, &config, periodic).await?;
    Ok(Arc::new(AppState {
        guard,
        cluster,
        projects: engine.projects().clone(),
        engine,
        objects,
        local,
        links,
        config,
        billing,
        publishing,
    }))
}

/// Stripe billing when fully configured; otherwise off, with a warning
/// naming what is missing (billing routes then answer 503).
fn billing(config: &Config) -> anyhow::Result<Option<Arc<Billing>>> {
    let settings = config.billing.settings();
    let missing = settings.missing();
    if !missing.is_empty() {
        tracing::warn!(missing = %missing.join(","), "billing is off: settings missing");
        return Ok(None);
    }
    let billing = Billing::new(settings).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(Some(Arc::new(billing)))
}

#[handler]
fn healthz() -> &'static str {
    "ok"
}

/// Ready when storage answers and the speech model is installed; 503 with
/// the reasons otherwise (a load balancer then sends work elsewhere).
#[handler]
async fn readyz(state: Data<&State>) -> Response {
    let mut problems = Vec::new();
    if state.engine.kv().get_async("meta", b"ready").await.is_err() {
        problems.push("storage unavailable".to_string());
    }
    let model = state.engine.settings().model_dir.join("model.bin");
    if !model.is_file() {
        problems.push(format!(
            "speech model missing: {} (run `make setup`)",
            model.display()
        ));
    }
    if problems.is_empty() {
        "ready".into_response()
    } else {
        error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            "not_ready",
            &problems.join("; "),
        )
    }
}

#[handler]
fn metrics(state: Data<&State>) -> Response {
    let s = &state.engine;
    let busy = s.load().busy as usize;
    let projects = s.projects().live_projects();
    let stages: usize = projects
        .iter()
        .map(|(_, p)| p.actor.get_children().len())
        .sum();
    let waiting = projects.len().saturating_sub(busy);
    let supervisors = 1 + s
        .tree()
        .branches()
        .iter()
        .filter(|b| b.cell().is_some())
        .count();
    let actors = "clipforge_actors";
    let actors_help = "Live actors by kind.";
    let gauges: [clipforge_actors::metrics::Gauge<'_>; 8] = [
        (
            "clipforge_queue_depth",
            &[],
            "Projects waiting for a worker.",
            waiting as f64,
        ),
        (
            "clipforge_workers_busy",
            &[],
            "Worker slots in use.",
            busy as f64,
        ),
        (
            actors,
            &[("kind", "project")],
            actors_help,
            projects.len() as f64,
        ),
        (actors, &[("kind", "stage")], actors_help, stages as f64),
        (
            actors,
            &[("kind", "user")],
            actors_help,
            s.desk().live_count() as f64,
        ),
        (
            actors,
            &[("kind", "schedule")],
            actors_help,
            state.publishing.live_actors() as f64,
        ),
        (
            actors,
            &[("kind", "supervisor")],
            actors_help,
            supervisors as f64,
        ),
        (
            "clipforge_sse_channels",
            &[],
            "Projects with SSE subscribers.",
            s.projects().sse_channels() as f64,
        ),
    ];
    Response::builder()
        .content_type("text/plain; version=0.0.4")
        .body(s.metrics().render(&gauges))
}

/// Routes with logging, metrics and the uniform error body for errors that
/// never reach a handler (unknown route, bad method, malformed body).
pub fn routes(state: State) -> impl Endpoint {
    let api = api_service();
    let spec = crate::api::openapi::finish(&api.spec());
    crate::mcp::tools::init(&spec);
    let doc: Arc<serde_json::Value> =
        Arc::new(serde_json::from_str(&spec).expect("the document is JSON"));
    let docs = api.swagger_ui();
    let st = state.clone();
    Route::new()
        .nest("/api", api)
        .at(
            "/api/openapi.json",
            make_sync(move |_| {
                Response::builder()
                    .content_type("application/json")
                    .body(spec.clone())
            }),
        )
        .nest("/docs", docs)
        .at("/mcp", poem::endpoint::make(crate::mcp::http::mcp))
        .at("/healthz", get(healthz))
        .at("/readyz", get(readyz))
        .at("/metrics", get(metrics))
        .at("/media/*key", get(crate::media::media))
        .at("/admin/actors", get(crate::admin::admin_actors))
        .at("/admin/cluster", get(crate::cluster::admin_cluster))
        .at(
            crate::api::media::COMMIT_PATH,
            post(crate::cluster::commit_upload),
        )
        .at("/admin/actors/:name", get(crate::admin::admin_actor))
        .at("/admin/accounts/:id/plan", post(admin_set_plan))
        .at("/", get(crate::console::ui).head(crate::console::ui))
        .at("/*path", get(crate::console::ui).head(crate::console::ui))
        .data(state)
        .around(move |ep, req| {
            let st = st.clone();
            let doc = doc.clone();
            async move {
                let started = Instant::now();
                let method = req.method().to_string();
                let path = req.uri().path().to_string();
                let accepts_html = req
                    .header("accept")
                    .is_some_and(|a| a.contains("text/html"));
                let request_id = uuid::Uuid::new_v4().to_string();
                let origin = req.header("origin").map(str::to_string);
                let (result, retry_after) =
                    crate::ratelimit::with_retry_after(crate::middleware::guarded(&st, &*ep, req))
                        .await;
                let mut resp = match result {
                    Ok(r) => r.into_response(),
                    Err(e) => uniform_error(e),
                };
                if resp.status() == StatusCode::METHOD_NOT_ALLOWED {
                    if let Some(allow) = crate::api::openapi::allowed_methods(&doc, &path)
                        .and_then(|a| a.parse().ok())
                    {
                        resp.headers_mut().insert(poem::http::header::ALLOW, allow);
                    }
                }
                if method == "GET" {
                    resp = crate::console::callback_for_browser(&path, accepts_html, resp).await;
                }
                if resp.status().is_client_error() || resp.status().is_server_error() {
                    resp = ensure_json_error(resp).await;
                }
                if resp.status() == StatusCode::TOO_MANY_REQUESTS
                    && !resp.headers().contains_key("retry-after")
                {
                    resp.headers_mut()
                        .insert("retry-after", retry_after.unwrap_or(1).into());
                }
                st.guard.finish(origin.as_deref(), &mut resp);
                let status = resp.status().as_u16();
                let secs = started.elapsed().as_secs_f64();
                st.engine.metrics().observe_request(
                    &method,
                    &clipforge_actors::metrics::route_label(&path),
                    status,
                    secs,
                );
                crate::telemetry::request(&request_id, &method, &path, status, secs * 1000.0);
                resp.headers_mut().insert(
                    "x-request-id",
                    request_id.parse().expect("uuid is a valid header"),
                );
                Ok(resp)
            }
        })
}

fn uniform_error(e: poem::Error) -> Response {
    let status = e.status();
    if e.has_source() && status == StatusCode::INTERNAL_SERVER_ERROR {
        tracing::error!(error = %e, "unhandled error");
    }
    // What was wrong with the request (a body that does not parse or
    // breaks a documented constraint), for the 4xx message.
    let detail: String = e.to_string().trim().chars().take(300).collect();
    let resp = e.into_response();
    if resp
        .content_type()
        .map(|c| c.starts_with("application/json"))
        .unwrap_or(false)
    {
        return resp;
    }
    let code = status_code(status);
    let message = if status == StatusCode::INTERNAL_SERVER_ERROR {
        "something went wrong on our side; please try again".to_string()
    } else if status.is_client_error() && !detail.is_empty() {
        detail
    } else {
        status.canonical_reason().unwrap_or("error").to_lowercase()
    };
    error_response(status, code, &message)
}

async fn ensure_json_error(resp: Response) -> Response {
    if resp
        .content_type()
        .map(|c| c.starts_with("application/json"))
        .unwrap_or(false)
    {
        return resp;
    }
    let status = resp.status();
    let text = resp.into_body().into_string().await.unwrap_or_default();
    let message = if status.is_server_error() || text.trim().is_empty() {
        status.canonical_reason().unwrap_or("error").to_lowercase()
    } else {
        text.trim().chars().take(300).collect()
    };
    error_response(status, status_code(status), &message)
}

fn status_code(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "invalid_request",
        401 => "unauthorized",
        403 => "forbidden",
        404 => "not_found",
        405 => "method_not_allowed",
        409 => "conflict",
        413 => "payload_too_large",
        415 => "unsupported_media_type",
        429 => "rate_limited",
        503 => "unavailable",
        _ => "internal_error",
    }
}

/// The node's periodic work, each job a supervised actor of the
/// `housekeeping` branch (`clipforge_actors::housekeeping`): idle account
/// actors stopped (at least as often as the idle limit, at most every 15 s)
/// and the heaps' free pages given back to the system (`allocator.rs`),
/// again a second after actors stopped, once they are gone; and rate-limit
/// keys whose
/// rate is replenished forgotten (every minute).
async fn start_housekeeping(
    engine: &Arc<Engine>,
    guard: &Arc<crate::security::Guard>,
    config: &Config,
    more: Vec<clipforge_actors::housekeeping::Periodic>,
) -> anyhow::Result<()> {
    use crate::allocator::release;
    use clipforge_actors::housekeeping::{Periodic, PeriodicActor, Then};
    use clipforge_actors::supervisor::spawner;
    let s = engine.clone();
    let every = Duration::from_secs(config.pipeline.idle_secs.clamp(1, 15));
    let passivation = Periodic::new("passivation", every, move || {
        let n = s.passivate_idle();
        // The heaps keep what is freed for reuse (allocator.rs): give it
        // back on every sweep, and again once the stopped actors are gone.
        release();
        if n == 0 {
            return Then::Nothing;
        }
        tracing::debug!(passivated = n, "idle account actors stopped");
        Then::After(
            Duration::from_secs(1),
            Arc::new(|| {
                release();
                Then::Nothing
            }),
        )
    });
    let g = guard.clone();
    let prune = Periodic::new("rate-prune", Duration::from_secs(60), move || {
        g.rates.prune();
        Then::Nothing
    });
    let mut children = vec![
        (
            "passivation",
            spawner("passivation", PeriodicActor, passivation),
        ),
        ("rate-prune", spawner("rate-prune", PeriodicActor, prune)),
    ];
    for p in more {
        children.push((p.name, spawner(p.name, PeriodicActor, p)));
    }
    engine
        .tree()
        .start_housekeeping(children)
        .await
        .map_err(|e| anyhow::anyhow!("starting housekeeping: {e}"))
}

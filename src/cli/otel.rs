//! OTLP export of the `tool_call` spans (the `otel` feature; docs/telemetry.md).
//!
//! The log is set up before tools.yaml is read, so the OpenTelemetry layer is installed empty
//! ([`layer`]) and filled in by [`start`] once `toolgate serve` knows its configuration. Only
//! `tool_call` spans reach it (no events, no other spans), and only once it is filled in.
//!
//! Spans are exported by the SDK's batch span processor, on its own thread: a bounded queue
//! (spans beyond it are dropped, a call never waits), an export timeout on every request (the
//! blocking reqwest client's timeout), and [`Exporter::shutdown`] flushes what is left within
//! that timeout at exit. A collector that is down or never answers costs the gateway nothing
//! but the dropped spans.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry::{Key, KeyValue};
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::resource::{EnvResourceDetector, ResourceDetector as _};
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, Sampler, SdkTracerProvider,
};
use toolgate::model::config::{OtlpConfig, TelemetryConfig};
use toolgate::model::secrets::Field;
use tracing::span;
use tracing_subscriber::Registry;
use tracing_subscriber::layer::{Context, Filter, Layer};

/// The layer once export is on.
type OtelLayer =
    tracing_opentelemetry::OpenTelemetryLayer<Registry, opentelemetry_sdk::trace::Tracer>;

/// The OpenTelemetry layer, set once by [`start`].
static LAYER: OnceLock<OtelLayer> = OnceLock::new();
/// Whether [`LAYER`] is set: until then no span is enabled for it (a call costs nothing more).
static ON: AtomicBool = AtomicBool::new(false);

/// The default export timeout (the OTLP exporter's, `OTEL_EXPORTER_OTLP_TIMEOUT`'s default).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The layer to install under the log's: empty until [`start`], then the OpenTelemetry
/// layer, for `tool_call` spans only.
pub(super) fn layer() -> impl Layer<Registry> {
    Late.with_filter(CallSpans)
}

/// Enables the `tool_call` spans, once export is on.
struct CallSpans;

impl<S> Filter<S> for CallSpans {
    fn enabled(&self, meta: &tracing::Metadata<'_>, _: &Context<'_, S>) -> bool {
        ON.load(Ordering::Relaxed) && is_call_span(meta)
    }

    fn callsite_enabled(
        &self,
        meta: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        if is_call_span(meta) {
            // Asked again at every span: export may be turned on later.
            tracing::subscriber::Interest::sometimes()
        } else {
            tracing::subscriber::Interest::never()
        }
    }
}

/// The runtime's per-call span.
fn is_call_span(meta: &tracing::Metadata<'_>) -> bool {
    meta.is_span() && meta.name() == "tool_call" && meta.target().starts_with("toolgate_runtime")
}

/// Passes everything on to [`LAYER`] once it is set.
struct Late;

impl Layer<Registry> for Late {
    fn on_new_span(&self, attrs: &span::Attributes<'_>, id: &span::Id, ctx: Context<'_, Registry>) {
        if let Some(layer) = LAYER.get() {
            layer.on_new_span(attrs, id, ctx);
        }
    }

    fn on_record(&self, id: &span::Id, values: &span::Record<'_>, ctx: Context<'_, Registry>) {
        if let Some(layer) = LAYER.get() {
            layer.on_record(id, values, ctx);
        }
    }

    fn on_follows_from(&self, id: &span::Id, follows: &span::Id, ctx: Context<'_, Registry>) {
        if let Some(layer) = LAYER.get() {
            layer.on_follows_from(id, follows, ctx);
        }
    }

    fn on_event(&self, event: &tracing::Event<'_>, ctx: Context<'_, Registry>) {
        if let Some(layer) = LAYER.get() {
            layer.on_event(event, ctx);
        }
    }

    fn on_enter(&self, id: &span::Id, ctx: Context<'_, Registry>) {
        if let Some(layer) = LAYER.get() {
            layer.on_enter(id, ctx);
        }
    }

    fn on_exit(&self, id: &span::Id, ctx: Context<'_, Registry>) {
        if let Some(layer) = LAYER.get() {
            layer.on_exit(id, ctx);
        }
    }

    fn on_close(&self, id: span::Id, ctx: Context<'_, Registry>) {
        if let Some(layer) = LAYER.get() {
            layer.on_close(id, ctx);
        }
    }

    // SAFETY: the pointers point into `LAYER`, a static set once and never changed, so they
    // stay valid as long as the caller's borrow of `self` (and longer).
    unsafe fn downcast_raw(&self, id: TypeId) -> Option<*const ()> {
        if id == TypeId::of::<Self>() {
            return Some(std::ptr::from_ref(self).cast());
        }
        // SAFETY: forwarded as is; see above.
        LAYER
            .get()
            .and_then(|layer| unsafe { layer.downcast_raw(id) })
    }
}

/// The running export: flush it at exit with [`shutdown`](Self::shutdown).
pub(super) struct Exporter {
    provider: SdkTracerProvider,
    timeout: Duration,
}

impl Exporter {
    /// Exports what is still queued and stops, waiting at most the export timeout.
    pub(super) fn shutdown(self) {
        if let Err(e) = self.provider.shutdown_with_timeout(self.timeout) {
            tracing::warn!("OTLP export: the spans left at shutdown were not all sent: {e}");
        }
    }
}

/// Reads an environment variable, an empty value counting as unset (as the OpenTelemetry
/// specification says).
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Whether export is on: `gateway.telemetry.otlp` (unless `enabled: false`), else an
/// `OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT` in the environment; never with `OTEL_SDK_DISABLED=true`
/// or `OTEL_TRACES_EXPORTER=none`.
fn wanted(otlp: Option<&OtlpConfig>) -> bool {
    if env("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
        || env("OTEL_TRACES_EXPORTER").is_some_and(|v| v.trim().eq_ignore_ascii_case("none"))
    {
        return false;
    }
    match otlp {
        Some(otlp) => otlp.enabled != Some(false),
        None => {
            env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some()
                || env("OTEL_EXPORTER_OTLP_ENDPOINT").is_some()
        }
    }
}

/// The share of new traces kept: `sample_ratio`, else `OTEL_TRACES_SAMPLER(_ARG)`, else 1.
fn sample_ratio(otlp: &OtlpConfig) -> Result<f64, String> {
    if let Some(ratio) = otlp.sample_ratio {
        if !(0.0..=1.0).contains(&ratio) {
            return Err(format!(
                "gateway.telemetry.otlp.sample_ratio must be between 0 and 1, not {ratio}"
            ));
        }
        return Ok(ratio);
    }
    Ok(match env("OTEL_TRACES_SAMPLER").as_deref().map(str::trim) {
        Some("always_off" | "parentbased_always_off") => 0.0,
        Some("traceidratio" | "parentbased_traceidratio") => env("OTEL_TRACES_SAMPLER_ARG")
            .and_then(|a| a.trim().parse::<f64>().ok())
            .filter(|r| (0.0..=1.0).contains(r))
            .unwrap_or(1.0),
        _ => 1.0,
    })
}

/// The export timeout: `timeout_ms`, else `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` /
/// `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds), else 10 s.
fn timeout(otlp: &OtlpConfig) -> Duration {
    otlp.timeout_ms
        .map(Duration::from_millis)
        .unwrap_or_else(|| {
            env("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
                .or_else(|| env("OTEL_EXPORTER_OTLP_TIMEOUT"))
                .and_then(|t| t.trim().parse().ok())
                .map_or(DEFAULT_TIMEOUT, Duration::from_millis)
        })
}

/// Refuses a transport other than OTLP/HTTP protobuf, from tools.yaml or the environment.
fn check_protocol(otlp: &OtlpConfig) -> Result<(), String> {
    let given = [
        ("gateway.telemetry.otlp.protocol", otlp.protocol.clone()),
        (
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"),
        ),
        (
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            env("OTEL_EXPORTER_OTLP_PROTOCOL"),
        ),
    ];
    // The first one set decides (tools.yaml, then the signal's variable, then the general one).
    match given.into_iter().find_map(|(name, v)| v.map(|v| (name, v))) {
        Some((name, value)) if value.trim() != "http/protobuf" => Err(format!(
            "{name} is `{}`: toolgate exports OTLP over `http/protobuf` only",
            value.trim()
        )),
        _ => Ok(()),
    }
}

/// The resource: `OTEL_RESOURCE_ATTRIBUTES`, `service.version`, `resource_attributes`, and the
/// service name (`service_name`, `OTEL_SERVICE_NAME`, the environment's `service.name`,
/// `toolgate`), each later one winning.
fn resource(otlp: &OtlpConfig) -> Resource {
    let from_env = EnvResourceDetector::new().detect();
    let service_name = otlp
        .service_name
        .clone()
        .or_else(|| env("OTEL_SERVICE_NAME"))
        .or_else(|| {
            from_env
                .get(&Key::from_static_str("service.name"))
                .map(|v| v.to_string())
        })
        .unwrap_or_else(|| "toolgate".to_string());
    Resource::builder_empty()
        .with_attributes(
            from_env
                .iter()
                .map(|(k, v)| KeyValue::new(k.clone(), v.clone())),
        )
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .with_attributes(
            otlp.resource_attributes
                .iter()
                .map(|(k, v)| KeyValue::new(k.clone(), v.clone())),
        )
        .with_service_name(service_name)
        .build()
}

/// Starts exporting `tool_call` spans when `telemetry` (or the environment) asks for it.
///
/// # Errors
/// A sentence naming the setting at fault (a sample ratio out of range, a protocol other than
/// `http/protobuf`, a header whose `${ENV}` is unset, an endpoint that is not a URL); never a
/// header's value.
pub(super) fn start(telemetry: &TelemetryConfig) -> Result<Option<Exporter>, String> {
    let otlp = telemetry.otlp.clone().unwrap_or_default();
    if !wanted(telemetry.otlp.as_ref()) {
        return Ok(None);
    }
    check_protocol(&otlp)?;
    let ratio = sample_ratio(&otlp)?;
    let timeout = timeout(&otlp);
    let mut headers = HashMap::new();
    for (name, value) in &otlp.headers {
        let value = value
            .resolve_as(Field::Credential)
            .map_err(|e| format!("gateway.telemetry.otlp.headers.{name}: {e}"))?;
        headers.insert(name.clone(), value.expose().to_string());
    }
    // The environment's headers are sent too (the exporter reads them): never print them.
    for var in [
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        "OTEL_EXPORTER_OTLP_HEADERS",
    ] {
        for pair in env(var).unwrap_or_default().split(',') {
            if let Some((_, value)) = pair.split_once('=') {
                toolgate::model::secrets::remember(value.trim());
            }
        }
    }
    let mut builder = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_timeout(timeout)
        .with_headers(headers);
    if let Some(endpoint) = &otlp.endpoint {
        // A base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT`: the traces path goes after it.
        let url = format!("{}/v1/traces", endpoint.trim_end_matches('/'));
        builder = builder.with_endpoint(url);
    }
    let exporter = builder
        .build()
        .map_err(|e| format!("gateway.telemetry.otlp: {e}"))?;
    let mut batch = BatchConfigBuilder::default();
    if let Some(size) = otlp.max_queue_size {
        batch = batch.with_max_queue_size(size.max(1));
    }
    let processor = BatchSpanProcessor::builder(exporter)
        .with_batch_config(batch.build())
        .build();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
            ratio,
        ))))
        .with_resource(resource(&otlp))
        .build();
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("toolgate"))
        .with_location(false)
        .with_threads(false)
        .with_target(false)
        .with_tracked_inactivity(false);
    if LAYER.set(layer).is_err() {
        return Err("OTLP export was started twice".to_string());
    }
    ON.store(true, Ordering::Relaxed);
    // Interest cached before export was on is asked again.
    tracing::callsite::rebuild_interest_cache();
    Ok(Some(Exporter { provider, timeout }))
}

// Calls every operation of the Clipforge API through openapi-fetch with
// the types openapi-typescript generates from openapi/openapi.json, and
// reads typed fields of each answer: `tsc --noEmit` fails when the document
// loses a type a client relies on. Never run; only type-checked.
import createClient from "openapi-fetch";
import type { components, paths } from "./schema";

type Schemas = components["schemas"];

const api = createClient<paths>({ baseUrl: "http://127.0.0.1:8080/api" });

function expectType<T>(_value: T): void {}

export async function everyOperation(file: Blob): Promise<void> {
  // Accounts
  const signUp = await api.POST("/auth/sign-up/email", {
    body: { email: "ana@example.com", password: "correct horse", name: "Ana" },
  });
  if (signUp.data) {
    expectType<string>(signUp.data.token);
    expectType<string | null | undefined>(signUp.data.user.image);
    expectType<Schemas["Plan"]>(signUp.data.user.plan);
  }
  if (signUp.error) expectType<string>(signUp.error.error);
  const signIn = await api.POST("/auth/sign-in/email", {
    body: { email: "ana@example.com", password: "correct horse" },
  });
  expectType<string | undefined>(signIn.data?.user.email);
  const session = await api.GET("/auth/get-session");
  expectType<string | undefined>(session.data?.session.expiresAt);
  await api.POST("/auth/change-password", {
    body: { currentPassword: "correct horse", newPassword: "battery staple", revokeOtherSessions: true },
  });
  const profile = await api.PUT("/auth/profile", { body: { name: "Ana B." } });
  expectType<"ok" | undefined>(profile.data?.status);
  const avatar = await api.PUT("/auth/avatar", {
    body: { file: "" },
    bodySerializer: () => {
      const form = new FormData();
      form.append("file", file);
      return form;
    },
  });
  expectType<string | undefined>(avatar.data?.avatarUrl);
  await api.DELETE("/auth/avatar");
  await api.POST("/auth/sign-out");

  // Preparing a video
  const meta = await api.POST("/meta", { body: { url: "https://www.youtube.com/watch?v=x" } });
  expectType<number | undefined>(meta.data?.durationSec);
  const upload = await api.POST("/upload", {
    body: { file: "" },
    bodySerializer: () => {
      const form = new FormData();
      form.append("file", file);
      return form;
    },
  });
  const fileKey = upload.data?.fileKey ?? "";

  // Projects
  const created = await api.POST("/projects", {
    body: { fileKey, clipDurationPreset: "15-30", captionTemplate: "karaoke", skipCuts: false },
  });
  const projectId = created.data?.projectId ?? "";
  expectType<Schemas["ProjectState"] | undefined>(created.data?.project.state);
  const list = await api.GET("/projects", { params: { query: { page: 1, limit: 20 } } });
  expectType<number | undefined>(list.data?.total);
  const project = await api.GET("/projects/{id}", { params: { path: { id: projectId } } });
  const clip = project.data?.clips[0];
  expectType<number | undefined>(clip?.score);
  expectType<string | undefined>(clip?.transcripts[0]?.text);
  expectType<string | null | undefined>(project.data?.project.error);
  await api.GET("/projects/{id}/status", {
    params: { path: { id: projectId }, header: { "Last-Event-ID": "3" } },
    parseAs: "stream",
  });
  const timeline = await api.GET("/projects/{id}/export", {
    params: { path: { id: projectId }, query: { format: "fcpxml" } },
    parseAs: "blob",
  });
  expectType<Blob | undefined>(timeline.data);
  const cancelled = await api.POST("/projects/{id}/cancel", { params: { path: { id: projectId } } });
  expectType<Schemas["ProjectStatusText"] | undefined>(cancelled.data?.status);
  const deleted = await api.DELETE("/projects/{id}", { params: { path: { id: projectId } } });
  expectType<boolean | undefined>(deleted.data?.deleted);

  // Clip editing: the title at once; a range, words, layout, frame or
  // template as a new rendered version; versions; added clips
  const clipPath = { id: projectId, clip_id: "00000000-0000-4000-8000-000000000000" };
  const edited = await api.PATCH("/projects/{id}/clips/{clip_id}", {
    params: { path: clipPath },
    body: { title: "Open with a question" },
  });
  expectType<string | undefined>(edited.data?.title);
  const rerendered = await api.PATCH("/projects/{id}/clips/{clip_id}", {
    params: { path: clipPath },
    body: { startSec: 3.2, endSec: 31.5, words: [{ index: 4, text: "creator" }], layout: "fit", aspectRatio: "1:1", captionTemplate: "bold" },
  });
  expectType<Schemas["ClipStatus"] | undefined>(rerendered.data?.status);
  expectType<number | undefined>(rerendered.data?.version);
  // Reframing by hand: the faces per shot, spans following one or held
  const faces = await api.GET("/projects/{id}/clips/{clip_id}/faces", { params: { path: clipPath } });
  expectType<number | undefined>(faces.data?.faces[0]?.boxes[0]?.w);
  expectType<number | undefined>(faces.data?.shots[0]?.toSec);
  await api.PATCH("/projects/{id}/clips/{clip_id}", {
    params: { path: clipPath },
    body: { reframe: [{ fromSec: 0, toSec: 4, faceId: faces.data?.faces[0]?.id ?? 0 }, { fromSec: 4, toSec: 9, x: 960 }] },
  });
  const wave = await api.GET("/projects/{id}/clips/{clip_id}/waveform", { params: { path: clipPath } });
  expectType<number[] | undefined>(wave.data?.db);
  const words = await api.GET("/projects/{id}/clips/{clip_id}/words", { params: { path: clipPath } });
  expectType<number | undefined>(words.data?.words[0]?.startSec);
  const versions = await api.GET("/projects/{id}/clips/{clip_id}/versions", { params: { path: clipPath } });
  expectType<boolean | undefined>(versions.data?.versions[0]?.current);
  const restored = await api.POST("/projects/{id}/clips/{clip_id}/versions/{version}/restore", {
    params: { path: { ...clipPath, version: 1 } },
  });
  expectType<number | undefined>(restored.data?.version);
  const added = await api.POST("/projects/{id}/clips", {
    params: { path: { id: projectId } },
    body: { startSec: 40, endSec: 70 },
  });
  expectType<string | undefined>(added.data?.id);
  const more = await api.POST("/projects/{id}/more-clips", {
    params: { path: { id: projectId } },
    body: { count: 2 },
  });
  expectType<string | undefined>(more.data?.clips[0]?.title);

  // Caption templates
  const templates = await api.GET("/caption-templates");
  expectType<boolean | undefined>(templates.data?.templates[0]?.isDefault);
  const template = await api.POST("/caption-templates", {
    body: { name: "Loud", fontSize: 80, animation: "pop", backgroundColor: null },
  });
  const templateId = template.data?.id ?? "";
  expectType<Schemas["Animation"] | undefined>(template.data?.animation);
  expectType<Schemas["WatermarkPosition"] | undefined>(template.data?.watermarkPosition);
  await api.PUT("/caption-templates/{id}", {
    params: { path: { id: templateId } },
    body: { isDefault: true, watermarkPosition: "bottom-right" },
  });
  await api.DELETE("/caption-templates/{id}", { params: { path: { id: templateId } } });

  // Credits and plans
  const credits = await api.GET("/credits");
  expectType<number | undefined>(credits.data?.totalCredits);
  await api.POST("/credits/select-plan", { body: { plan: "free" } });
  const ledger = await api.GET("/credits/ledger", { params: { query: { page: 1 } } });
  expectType<Schemas["LedgerEntryType"] | undefined>(ledger.data?.entries[0]?.type);
  const plans = await api.GET("/plans");
  expectType<number | null | undefined>(plans.data?.plans[0]?.monthlyCredits);
  expectType<number | undefined>(plans.data?.plans[0]?.prices[0]?.amount);

  // Notifications
  const notes = await api.GET("/notifications");
  const note = notes.data?.notifications[0];
  expectType<Schemas["NotificationType"] | undefined>(note?.type);
  await api.POST("/notifications/read");
  await api.POST("/notifications/{id}/read", { params: { path: { id: note?.id ?? "" } } });

  // Billing
  const checkout = await api.POST("/stripe/checkout", { body: { plan: "pro", frequency: "yearly" } });
  expectType<string | undefined>(checkout.data?.url);
  const status = await api.GET("/stripe/checkout/{session_id}", {
    params: { path: { session_id: "cs_test_1" } },
  });
  expectType<boolean | undefined>(status.data?.activated);
  await api.POST("/stripe/customer-portal");
  await api.POST("/stripe/webhook", {
    params: { header: { "Stripe-Signature": "t=1,v1=00" } },
    body: "{}",
    bodySerializer: (b) => b,
  });

  // Scheduling
  const post = await api.POST("/clips/{clip_id}/schedule", {
    params: { path: { clip_id: clip?.id ?? "" } },
    body: { provider: "youtube", title: "Watch this", scheduledAt: "2030-05-01T18:00:00Z" },
  });
  const postId = post.data?.id ?? "";
  expectType<Schemas["PostStatus"] | undefined>(post.data?.status);
  const posts = await api.GET("/clips/scheduled", { params: { query: { limit: 50 } } });
  expectType<number | undefined>(posts.data?.scheduledPosts.length);
  await api.GET("/clips/scheduled/{id}", { params: { path: { id: postId } } });
  await api.PATCH("/clips/scheduled/{id}", {
    params: { path: { id: postId } },
    body: { scheduledAt: "2030-05-02T18:00:00Z" },
  });
  await api.DELETE("/clips/scheduled/{id}", { params: { path: { id: postId } } });
  const bulk = await api.POST("/projects/{id}/bulk-schedule", {
    params: { path: { id: projectId } },
    body: { scheduledAt: "2030-05-01T18:00:00Z", intervalHours: 24, providers: ["tiktok", "youtube"] },
  });
  expectType<number | undefined>(bulk.data?.count);

  // Integrations
  const integrations = await api.GET("/integrations");
  expectType<boolean | undefined>(integrations.data?.integrations[0]?.active);
  const connect = await api.POST("/integrations/{provider}/connect", {
    params: { path: { provider: "youtube" } },
  });
  await api.GET("/integrations/{provider}/callback", {
    params: { path: { provider: "youtube" }, query: { state: connect.data?.state ?? "", code: "c" } },
  });
  const gone = await api.DELETE("/integrations/{provider}", { params: { path: { provider: "tiktok" } } });
  expectType<number | undefined>(gone.data?.failedPosts);

  // API keys (managed with a session; the key is shown once)
  const made = await api.POST("/keys", { body: { name: "CI", scopes: ["read", "write"] } });
  expectType<string | undefined>(made.data?.key);
  expectType<Schemas["KeyScope"][] | undefined>(made.data?.scopes);
  const keys = await api.GET("/keys");
  expectType<string | null | undefined>(keys.data?.keys[0]?.lastUsedAt);
  const revoked = await api.DELETE("/keys/{id}", { params: { path: { id: made.data?.id ?? "" } } });
  expectType<boolean | undefined>(revoked.data?.revoked);

  // Webhooks (managed with a session; the signing secret is shown once)
  const hook = await api.POST("/webhooks", {
    body: { url: "https://example.com/clipforge", events: ["project.completed", "post.failed"] },
  });
  expectType<string | undefined>(hook.data?.secret);
  expectType<Schemas["WebhookEventType"][] | undefined>(hook.data?.events);
  const hooks = await api.GET("/webhooks");
  expectType<string | null | undefined>(hooks.data?.webhooks[0]?.failingSince);
  const hookId = { id: hook.data?.id ?? "" };
  const test = await api.POST("/webhooks/{id}/test", { params: { path: hookId } });
  expectType<Schemas["DeliveryStatus"] | undefined>(test.data?.status);
  const log = await api.GET("/webhooks/{id}/deliveries", { params: { path: hookId, query: { page: 1, limit: 20 } } });
  expectType<number | null | undefined>(log.data?.deliveries[0]?.responseCode);
  const again = await api.POST("/webhooks/{id}/deliveries/{delivery_id}/redeliver", {
    params: { path: { id: hookId.id, delivery_id: test.data?.id ?? "" } },
  });
  expectType<string | null | undefined>(again.data?.nextAttemptAt);
  const removed = await api.DELETE("/webhooks/{id}", { params: { path: hookId } });
  expectType<boolean | undefined>(removed.data?.deleted);
}

// Response types. Each one is the generated type of its operation when
// openapi/openapi.json describes the response, and otherwise the shape
// from the contract (shared/spec/video-clipping-api.md) and the server's
// views — so once the document types a response, the console is checked
// against it without editing this file.
import type { components, paths } from "./schema";

type Content<R> = R extends { content: infer C } ? C[keyof C] : unknown;
type OkOf<Op> = Op extends { responses: infer R }
  ? 200 extends keyof R
    ? Content<R[200]>
    : 201 extends keyof R
      ? Content<R[201]>
      : unknown
  : unknown;
/** The documented success body of `method path`. */
export type Ok<P extends keyof paths, M extends keyof paths[P]> = OkOf<paths[P][M]>;
/** `Generated` unless the document leaves it untyped (`unknown`). */
type Typed<Generated, Fallback> = unknown extends Generated ? Fallback : Generated;

export type User = components["schemas"]["UserView"];
export type Provider = components["schemas"]["Provider"];
export type Preset = components["schemas"]["ClipDurationPreset"];
export type Animation = components["schemas"]["Animation"];
export type WatermarkPosition = components["schemas"]["WatermarkPosition"];
export type ProjectStatusText = components["schemas"]["ProjectStatusText"];
export type MetaResponse = components["schemas"]["MetaResponse"];
export type UploadResponse = components["schemas"]["UploadResponse"];
export type CreateProjectBody = components["schemas"]["CreateProject"];

export type StepProgress = { download: number; transcribe: number; cut: number; caption: number };
export type ProjectState =
  | "queued"
  | "downloading"
  | "transcribing"
  | "cutting"
  | "captioning"
  | "completed"
  | "failed"
  | "cancelled";

interface ProjectC {
  id: string;
  title: string;
  sourceUrl: string;
  durationSec: number;
  duration: string;
  date: string;
  clips: number;
  status: string;
  state: ProjectState;
  thumbnail: string;
  stepProgress: StepProgress;
  captionTemplate: string;
  error?: string | null;
  createdAt: string;
  updatedAt: string;
}
interface TranscriptC {
  id: string;
  start: string;
  end: string;
  text: string;
}
interface ClipC {
  id: string;
  projectId: string;
  title: string;
  score: number;
  duration: string;
  quality: string;
  thumbnail: string;
  url: string;
  subtitleUrl: string;
  vttUrl: string;
  startSec: number;
  endSec: number;
  transcripts: TranscriptC[];
  createdAt: string;
  reason?: string | null;
}
export type ProjectPage = Typed<
  Ok<"/projects", "get">,
  { projects: ProjectC[]; total: number; page: number; limit: number }
>;
export type Project = ProjectPage["projects"][number];
export type ProjectDetail = Typed<Ok<"/projects/{id}", "get">, { project: ProjectC; clips: ClipC[] }>;
export type Clip = ProjectDetail["clips"][number];
export type Created = Typed<Ok<"/projects", "post">, { projectId: string; project: ProjectC }>;

interface TemplateC {
  id: string;
  name: string;
  description: string;
  isDefault: boolean;
  fontFamily: string;
  fontSize: number;
  fontColor: string;
  highlightColor: string;
  strokeColor: string;
  strokeWidth: number;
  background: boolean;
  backgroundColor: string | null;
  animation: string;
  positionY: number;
  fontStack: string;
  watermarkEnabled: boolean;
  watermarkOpacity: number;
  watermarkPosition: string;
  watermarkSize: number;
  emphasizeKeywords: boolean;
  createdAt: string;
  updatedAt: string;
}
export type TemplateList = Typed<Ok<"/caption-templates", "get">, { templates: TemplateC[] }>;
export type Template = TemplateList["templates"][number];

export type Balance = Typed<
  Ok<"/credits", "get">,
  {
    plan: string;
    credits: number;
    totalCredits: number;
    reserved: number;
    unlimited: boolean;
    cycleStartedAt: string;
    renewsAt: string;
  }
>;
export type LedgerPage = Typed<
  Ok<"/credits/ledger", "get">,
  {
    entries: {
      type: string;
      amount: number;
      projectId: string | null;
      projectTitle: string | null;
      note: string;
      balanceAfter: number;
      createdAt: string;
    }[];
    total: number;
    page: number;
    limit: number;
  }
>;

export type NotificationList = Typed<
  Ok<"/notifications", "get">,
  {
    notifications: {
      id: string;
      type: string;
      title: string;
      message: string;
      read: boolean;
      createdAt: string;
    }[];
  }
>;
export type Notification = NotificationList["notifications"][number];

interface PostC {
  id: string;
  userId: string;
  clipId: string;
  projectId: string;
  provider: string;
  title: string;
  scheduledAt: string;
  status: "pending" | "publishing" | "published" | "failed";
  createdAt: string;
  updatedAt?: string;
  attempts?: number;
  error?: string | null;
  platformPostId?: string | null;
  publishedAt?: string | null;
}
export type PostPage = Typed<
  Ok<"/clips/scheduled", "get">,
  { scheduledPosts: PostC[]; total: number; page: number; limit: number }
>;
export type Post = PostPage["scheduledPosts"][number];
export type Scheduled = Typed<Ok<"/clips/{clip_id}/schedule", "post">, PostC>;
export type BulkScheduled = Typed<
  Ok<"/projects/{id}/bulk-schedule", "post">,
  { scheduledPosts: PostC[]; count: number }
>;

export type IntegrationList = Typed<
  Ok<"/integrations", "get">,
  {
    integrations: {
      provider: string;
      accountId: string;
      accountName: string;
      scope: string;
      connectedAt: string;
      expiresAt: string;
      refreshedAt: string;
      active: boolean;
    }[];
  }
>;
export type Integration = IntegrationList["integrations"][number];
export type Connect = Typed<
  Ok<"/integrations/{provider}/connect", "post">,
  { provider: string; authorizeUrl: string; state: string; redirectUri: string; expiresAt: string }
>;

/** Payload of the SSE `progress` event. */
export interface ProgressEvent {
  projectId: string;
  state: ProjectState;
  status: ProjectStatusText;
  stage: string | null;
  stepProgress: StepProgress;
  percent: number;
}
/** Payload of the SSE `clip` event. */
export interface ClipEvent {
  projectId: string;
  clipId: string;
  index: number;
  title: string;
  score: number;
}
/** Payload of the SSE `render` event (an edited clip's new version). */
export interface RenderEvent {
  projectId: string;
  clipId: string;
  version: number;
  state: "rendering" | "rendered" | "failed";
  percent: number;
  message?: string | null;
}
/** Payload of `completed`, `failed` and `cancelled`. */
export interface EndEvent {
  projectId: string;
  state: ProjectState;
  status: string;
  clips?: number;
  message?: string | null;
}

export type KeyScope = components["schemas"]["KeyScope"];
export type ApiKey = components["schemas"]["ApiKey"];
export type KeyList = components["schemas"]["KeyList"];
export type CreatedKey = components["schemas"]["CreatedKey"];
export type WebhookEventType = components["schemas"]["WebhookEventType"];
export type Webhook = components["schemas"]["Webhook"];
export type WebhookList = components["schemas"]["WebhookList"];
export type CreatedWebhook = components["schemas"]["CreatedWebhook"];
export type Delivery = components["schemas"]["Delivery"];
export type DeliveryPage = components["schemas"]["DeliveryPage"];
export type PlanList = components["schemas"]["PlanList"];
export type PlanInfo = PlanList["plans"][number];

// Who may read /metrics, asked of the management API server the way controller-runtime's metrics filter does:
// a TokenReview authenticates the bearer token, a SubjectAccessReview asks whether that user may `get` the
// non-resource URL /metrics. So a Prometheus ServiceAccount bound to a ClusterRole with
// `nonResourceURLs: ["/metrics"], verbs: ["get"]` can scrape, and nobody else can. Answers are kept briefly (by a
// hash of the token, never the token itself) so a scrape every few seconds does not cost two API calls each time.
import { createHash } from "node:crypto";
import { errorMessage } from "./log.ts";
import type { KubeRest } from "./rest.ts";

export type MetricsAccess = { allowed: true } | { allowed: false; status: 401 | 403 | 500; message: string };

export type MetricsAuthorizer = (authorizationHeader: string | undefined) => Promise<MetricsAccess>;

export interface MetricsAuthorizerOptions {
  /** The non-resource URL asked about; default /metrics. */
  path?: string;
  /** How long an answer is reused for the same token; default 30 s (a revoked binding stops working within it). */
  cacheTtlMs?: number;
  clock?: () => number;
}

interface TokenReviewStatus {
  authenticated?: boolean;
  user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  error?: string;
}

const MAX_CACHED = 1_000;

export function kubeMetricsAuthorizer(rest: KubeRest, options: MetricsAuthorizerOptions = {}): MetricsAuthorizer {
  const path = options.path ?? "/metrics";
  const ttlMs = options.cacheTtlMs ?? 30_000;
  const clock = options.clock ?? Date.now;
  const cache = new Map<string, { until: number; access: MetricsAccess }>();

  async function review(token: string): Promise<MetricsAccess> {
    const tokenReview = await rest.request<{ status?: TokenReviewStatus }>(
      "POST",
      "/apis/authentication.k8s.io/v1/tokenreviews",
      {
        body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token } },
        timeoutMs: 10_000,
      },
    );
    const status = tokenReview.status ?? {};
    if (!status.authenticated || !status.user?.username) {
      return {
        allowed: false,
        status: 401,
        message: `the bearer token is not valid${status.error ? ` (${status.error})` : ""}`,
      };
    }
    const user = status.user;
    const accessReview = await rest.request<{ status?: { allowed?: boolean; reason?: string } }>(
      "POST",
      "/apis/authorization.k8s.io/v1/subjectaccessreviews",
      {
        body: {
          apiVersion: "authorization.k8s.io/v1",
          kind: "SubjectAccessReview",
          spec: {
            user: user.username,
            ...(user.uid ? { uid: user.uid } : {}),
            groups: user.groups ?? [],
            ...(user.extra ? { extra: user.extra } : {}),
            nonResourceAttributes: { path, verb: "get" },
          },
        },
        timeoutMs: 10_000,
      },
    );
    if (accessReview.status?.allowed) return { allowed: true };
    return {
      allowed: false,
      status: 403,
      message: `${user.username} may not get ${path}: bind it to a ClusterRole with nonResourceURLs ["${path}"] and verbs ["get"]`,
    };
  }

  return async (header) => {
    const token = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "")?.[1];
    if (!token)
      return {
        allowed: false,
        status: 401,
        message: `send a bearer token (Authorization: Bearer <token>) of a user allowed to get ${path}`,
      };
    const key = createHash("sha256").update(token).digest("hex");
    const now = clock();
    const cached = cache.get(key);
    if (cached && cached.until > now) return cached.access;
    let access: MetricsAccess;
    try {
      access = await review(token);
    } catch (error) {
      // Not cached: the next scrape asks again once the API server answers.
      return {
        allowed: false,
        status: 500,
        message: `could not check the token with the API server: ${errorMessage(error)}`,
      };
    }
    if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value as string);
    cache.set(key, { until: now + ttlMs, access });
    return access;
  };
}

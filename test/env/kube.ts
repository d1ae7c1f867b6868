// Raw JSON requests to the kube-apiserver with a KubeConfig's credentials. The typed client-node APIs re-encode
// bodies through their model classes, which drop fields they do not model (e.g. `x-kubernetes-int-or-string`
// inside CRD schemas); tests of exact API behaviour also want the status code and the server's own message.
import { request as httpsRequest, type RequestOptions } from "node:https";
import { setTimeout as sleep } from "node:timers/promises";
import type { KubeConfig } from "@kubernetes/client-node";

export interface KubeResponse<T = unknown> {
  status: number;
  /** Parsed JSON body (a Status object for errors), or undefined when the body was empty. */
  body: T;
  /** The raw body text. */
  text: string;
}

export type PatchType = "merge" | "json" | "strategic" | "apply";

const patchContentTypes: Record<PatchType, string> = {
  merge: "application/merge-patch+json",
  json: "application/json-patch+json",
  strategic: "application/strategic-merge-patch+json",
  apply: "application/apply-patch+yaml",
};

export interface KubeRequestOptions {
  method?: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  body?: unknown;
  /** For PATCH: how the body is interpreted (default merge). */
  patchType?: PatchType;
  timeoutMs?: number;
}

/** Retries of a request the API server refused with 429 (client-go retries these 10 times too). */
const MAX_429_RETRIES = 10;

/**
 * One request to `path` (e.g. "/apis/cluster.x-k8s.io/v1beta2/namespaces/default/clusters"). Never throws on HTTP
 * errors. A 429 is retried after its Retry-After, as client-go does: a kube-apiserver that just started answers 429
 * "storage is (re)initializing" until the watch cache of the resource is ready, and rejects the request unprocessed.
 */
export async function kubeRequest<T = unknown>(
  kubeConfig: KubeConfig,
  path: string,
  options: KubeRequestOptions = {},
): Promise<KubeResponse<T>> {
  for (let retry = 0; ; retry++) {
    const { retryAfter, ...response } = await kubeRequestOnce<T>(kubeConfig, path, options);
    if (response.status !== 429 || retry >= MAX_429_RETRIES) return response;
    const retryAfterSeconds = Number(retryAfter ?? "1");
    await sleep(Math.min(5_000, Math.max(100, (Number.isFinite(retryAfterSeconds) ? retryAfterSeconds : 1) * 1000)));
  }
}

async function kubeRequestOnce<T>(
  kubeConfig: KubeConfig,
  path: string,
  options: KubeRequestOptions,
): Promise<KubeResponse<T> & { retryAfter?: string }> {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error("kubeRequest: the KubeConfig has no current cluster");
  const method = options.method ?? (options.body === undefined ? "GET" : "POST");
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers: Record<string, string> = { Accept: "application/json" };
  if (payload !== undefined) {
    headers["Content-Type"] = method === "PATCH" ? patchContentTypes[options.patchType ?? "merge"] : "application/json";
  }
  const requestOptions: RequestOptions = { method, headers, timeout: options.timeoutMs ?? 30_000 };
  await kubeConfig.applyToHTTPSOptions(requestOptions);
  const url = new URL(path, cluster.server);
  return new Promise((resolve, reject) => {
    const request = httpsRequest(url, requestOptions, (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (text += chunk));
      response.on("end", () => {
        let body: unknown;
        try {
          body = text ? JSON.parse(text) : undefined;
        } catch {
          body = text;
        }
        const retryAfter = response.headers["retry-after"];
        resolve({
          status: response.statusCode ?? 0,
          body: body as T,
          text,
          ...(typeof retryAfter === "string" ? { retryAfter } : {}),
        });
      });
      response.on("error", reject);
    });
    request.on("timeout", () =>
      request.destroy(new Error(`${method} ${url.pathname}: no answer within ${requestOptions.timeout} ms`)),
    );
    request.on("error", reject);
    if (payload !== undefined) request.write(payload);
    request.end();
  });
}

/** Like kubeRequest, but throws (with the server's message) unless the status is 2xx. */
export async function kubeRequestOk<T = unknown>(
  kubeConfig: KubeConfig,
  path: string,
  options: KubeRequestOptions = {},
): Promise<T> {
  const response = await kubeRequest<T>(kubeConfig, path, options);
  if (response.status < 200 || response.status > 299) {
    const method = options.method ?? (options.body === undefined ? "GET" : "POST");
    throw new Error(`${method} ${path} failed with HTTP ${response.status}: ${statusMessage(response)}`);
  }
  return response.body;
}

/** The `message` of a Status body, or the raw text. */
export function statusMessage(response: KubeResponse): string {
  const body = response.body as { message?: unknown } | undefined;
  return typeof body?.message === "string" ? body.message : response.text.slice(0, 2000);
}

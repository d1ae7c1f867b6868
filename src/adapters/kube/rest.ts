// Plain-JSON access to the Kubernetes API for any resource, core or custom.
//
// Why not client-node's generated clients and `Watch`: their list results are deserialised into classes with
// Date fields while watch events stay raw JSON (two shapes for one object), `Watch` has no timeout and reports
// its own abort as an error, and requests cannot be cancelled. Here every call is abortable, has a deadline,
// and returns exactly what the API server sent. Credentials still come from the KubeConfig
// (certificates, bearer tokens and exec/auth-provider plugins via `applyToHTTPSOptions`).
import * as http from "node:http";
import * as https from "node:https";
import type { KubeConfig } from "@kubernetes/client-node";
import type { ObjectMeta } from "../../api/types.ts";
import { retryAfterMs, sendAgainAfterRetryAfter } from "./retry-after.ts";

/** Any Kubernetes object as JSON: the runtime only relies on metadata. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
}

/** Where a resource lives in the API: `group` is "" for the core group (ConfigMaps, Secrets, Nodes). */
export interface ResourceRef {
  group: string;
  version: string;
  /** Lower-case plural as in the URL, e.g. "machines". */
  plural: string;
  namespaced: boolean;
}

/** metav1.Status, as the API server returns it in error bodies and watch ERROR events. */
export interface KubeStatus {
  kind?: "Status";
  status?: string;
  message?: string;
  reason?: string;
  code?: number;
  details?: unknown;
}

export interface KubeList<T> {
  items: T[];
  metadata?: { resourceVersion?: string; continue?: string };
}

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";

export interface WatchEvent<T> {
  type: WatchEventType;
  object: T | KubeStatus;
}

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  /** Defaults to application/json; use application/merge-patch+json for merge patches. */
  contentType?: string;
  signal?: AbortSignal;
  /** Whole-request deadline; defaults to the client's `requestTimeoutMs`. */
  timeoutMs?: number;
}

/** The deadline of a request that names none (`--api-request-timeout`'s default). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/** A non-2xx answer from the API server, with its Status. */
export class KubeApiError extends Error {
  readonly code: number;
  readonly status: KubeStatus | undefined;
  readonly reason: string | undefined;
  /** The answer's Retry-After header in milliseconds (seconds on the wire), when it had one. */
  readonly retryAfterMs: number | undefined;

  constructor(
    method: string,
    path: string,
    code: number,
    status: KubeStatus | undefined,
    rawBody: string,
    retryAfterMs?: number,
  ) {
    const detail = status?.message ?? (rawBody.trim().slice(0, 300) || http.STATUS_CODES[code] || "no body");
    super(`${method} ${path}: HTTP ${code}${status?.reason ? ` ${status.reason}` : ""}: ${detail}`);
    this.name = "KubeApiError";
    this.code = code;
    this.status = status;
    this.reason = status?.reason;
    this.retryAfterMs = retryAfterMs;
  }
}

export const isNotFound = (err: unknown): boolean => err instanceof KubeApiError && err.code === 404;
export const isConflict = (err: unknown): boolean =>
  err instanceof KubeApiError && err.code === 409 && err.reason !== "AlreadyExists";
export const isAlreadyExists = (err: unknown): boolean =>
  err instanceof KubeApiError && err.code === 409 && err.reason === "AlreadyExists";
/** 410 Gone: the resourceVersion a watch started from was compacted away; only a fresh list helps. */
export const isGone = (err: unknown): boolean => err instanceof KubeApiError && err.code === 410;

/** The collection URL of a resource, or one object's URL when `name` is given. */
export function resourcePath(ref: ResourceRef, namespace?: string, name?: string): string {
  const base = ref.group === "" ? `/api/${ref.version}` : `/apis/${ref.group}/${ref.version}`;
  const parts = [base];
  if (ref.namespaced && namespace) parts.push("namespaces", encodeURIComponent(namespace));
  parts.push(ref.plural);
  if (name !== undefined) parts.push(encodeURIComponent(name));
  return parts.join("/");
}

interface Connection {
  module: typeof http | typeof https;
  agent: http.Agent;
  headers: Record<string, string>;
}

export class KubeRest {
  private readonly kc: KubeConfig;
  private readonly requestTimeoutMs: number;
  private agent: http.Agent | undefined;

  /** `requestTimeoutMs` bounds every request that names no deadline of its own (watches have an idle timeout). */
  constructor(kc: KubeConfig, options: { requestTimeoutMs?: number } = {}) {
    this.kc = kc;
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  }

  /** The API server URL this client talks to. */
  get server(): string {
    const cluster = this.kc.getCurrentCluster();
    if (!cluster) throw new Error("kubeconfig has no current cluster: set current-context or pass --kubeconfig");
    return cluster.server.replace(/\/+$/, "");
  }

  /**
   * One request, sent again after Retry-After when the API server asks for that (MAX_RETRY_AFTER_RETRIES times at
   * most, within the request's deadline); its last answer's error otherwise.
   */
  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const deadline = performance.now() + (options.timeoutMs ?? this.requestTimeoutMs);
    const answer = await sendAgainAfterRetryAfter<{ value: T } | { error: unknown }>(
      method,
      deadline,
      options.signal,
      () =>
        this.requestOnce<T>(method, path, { ...options, timeoutMs: deadline - performance.now() }).then(
          (value) => ({ value }),
          (error: unknown) => ({ error }),
        ),
      (answer) =>
        "error" in answer && answer.error instanceof KubeApiError
          ? { code: answer.error.code, retryAfterMs: answer.error.retryAfterMs }
          : undefined,
    );
    if ("error" in answer) throw answer.error;
    return answer.value;
  }

  private async requestOnce<T>(method: string, path: string, options: RequestOptions): Promise<T> {
    const url = this.url(path, options.query);
    const connection = await this.connection();
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
    const headers: Record<string, string> = { ...connection.headers, Accept: "application/json" };
    if (payload !== undefined) {
      headers["Content-Type"] = options.contentType ?? "application/json";
      headers["Content-Length"] = String(Buffer.byteLength(payload));
    }
    const timeoutMs = options.timeoutMs ?? this.requestTimeoutMs;
    const signal = options.signal;
    return new Promise<T>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const req = connection.module.request(url, { method, headers, agent: connection.agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("error", fail);
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          const code = res.statusCode ?? 0;
          if (code >= 200 && code < 300) {
            let parsed: T;
            try {
              parsed = (text ? JSON.parse(text) : undefined) as T;
            } catch (err) {
              fail(new Error(`${method} ${path}: the API server sent a body that is not JSON: ${String(err)}`));
              return;
            }
            finish(() => resolve(parsed));
            return;
          }
          fail(new KubeApiError(method, path, code, parseStatus(text), text, retryAfterMs(res.headers["retry-after"])));
        });
      });
      let settled = false;
      const cleanup = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
      };
      function finish(action: () => void) {
        if (settled) return;
        settled = true;
        cleanup();
        action();
      }
      function fail(err: unknown) {
        finish(() => reject(err));
        req.destroy();
      }
      const onAbort = () => fail(signal?.reason);
      const timer = setTimeout(
        () => fail(new Error(`${method} ${path}: no answer from the API server within ${timeoutMs} ms`)),
        timeoutMs,
      );
      signal?.addEventListener("abort", onAbort, { once: true });
      req.on("error", fail);
      req.end(payload);
    });
  }

  get<T>(path: string, options?: RequestOptions): Promise<T> {
    return this.request<T>("GET", path, options);
  }

  /**
   * Streams a watch until the server ends it (resolves), an error occurs (rejects), or `signal` aborts
   * (resolves: stopping on purpose is not an error). `idleTimeoutMs` bounds how long the stream may stay
   * silent; ask the server for bookmarks so a healthy quiet watch still sends something.
   */
  async watch<T>(
    path: string,
    query: Record<string, string | number | boolean | undefined>,
    onEvent: (event: WatchEvent<T>) => void,
    signal: AbortSignal,
    idleTimeoutMs: number,
  ): Promise<void> {
    const url = this.url(path, { ...query, watch: true });
    const connection = await this.connection();
    const headers = { ...connection.headers, Accept: "application/json" };
    return new Promise<void>((resolve, reject) => {
      if (signal.aborted) {
        resolve();
        return;
      }
      let settled = false;
      let idleTimer: ReturnType<typeof setTimeout> | undefined;
      const settle = (err?: unknown) => {
        if (settled) return;
        settled = true;
        if (idleTimer) clearTimeout(idleTimer);
        signal.removeEventListener("abort", onAbort);
        req.destroy();
        if (err === undefined || signal.aborted) resolve();
        else reject(err);
      };
      const armIdleTimer = () => {
        if (idleTimer) clearTimeout(idleTimer);
        idleTimer = setTimeout(
          () => settle(new Error(`watch ${path}: no data from the API server for ${idleTimeoutMs} ms`)),
          idleTimeoutMs,
        );
      };
      const onAbort = () => settle();
      signal.addEventListener("abort", onAbort, { once: true });
      const req = connection.module.request(url, { method: "GET", headers, agent: connection.agent }, (res) => {
        const code = res.statusCode ?? 0;
        if (code !== 200) {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("error", settle);
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            settle(new KubeApiError("WATCH", path, code, parseStatus(text), text));
          });
          return;
        }
        let buffered = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          armIdleTimer();
          buffered += chunk;
          let newline = buffered.indexOf("\n");
          while (newline >= 0 && !settled) {
            const line = buffered.slice(0, newline).trim();
            buffered = buffered.slice(newline + 1);
            newline = buffered.indexOf("\n");
            if (!line) continue;
            let event: WatchEvent<T>;
            try {
              event = JSON.parse(line) as WatchEvent<T>;
            } catch {
              settle(new Error(`watch ${path}: the API server sent a line that is not JSON: ${line.slice(0, 200)}`));
              return;
            }
            try {
              onEvent(event);
            } catch (err) {
              settle(err);
              return;
            }
          }
        });
        res.on("error", settle);
        res.on("aborted", () => settle(new Error(`watch ${path}: the API server closed the stream mid-response`)));
        res.on("end", () => settle());
      });
      req.on("socket", (socket) => socket.setKeepAlive(true, 30_000));
      req.on("error", settle);
      armIdleTimer();
      req.end();
    });
  }

  /** Closes idle keep-alive connections (a stopped process should not hold sockets open). */
  close(): void {
    this.agent?.destroy();
    this.agent = undefined;
  }

  private url(path: string, query?: Record<string, string | number | boolean | undefined>): URL {
    const url = new URL(this.server + path);
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    return url;
  }

  private async connection(): Promise<Connection> {
    const server = this.server;
    const isHttps = server.startsWith("https:");
    // Credentials are re-applied on every call so rotating tokens (exec plugins) stay fresh; the TLS agent is
    // kept so requests (lease renewals every 2 s) reuse connections instead of handshaking each time.
    const options: https.RequestOptions = {};
    await this.kc.applyToHTTPSOptions(options);
    const headers: Record<string, string> = {};
    for (const [key, value] of Object.entries(options.headers ?? {})) {
      if (value !== undefined) headers[key] = Array.isArray(value) ? value.join(", ") : String(value);
    }
    if (options.auth) headers.Authorization = `Basic ${Buffer.from(options.auth).toString("base64")}`;
    if (!this.agent) {
      this.agent = isHttps
        ? new https.Agent({
            keepAlive: true,
            ca: options.ca,
            cert: options.cert,
            key: options.key,
            pfx: options.pfx,
            passphrase: options.passphrase,
            servername: options.servername,
            rejectUnauthorized: options.rejectUnauthorized,
          })
        : new http.Agent({ keepAlive: true });
    }
    return { module: isHttps ? https : http, agent: this.agent, headers };
  }
}

function parseStatus(text: string): KubeStatus | undefined {
  try {
    const parsed = JSON.parse(text) as KubeStatus;
    return parsed && typeof parsed === "object" && parsed.kind === "Status" ? parsed : undefined;
  } catch {
    return undefined;
  }
}

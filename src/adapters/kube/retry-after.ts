// Requests the API server asks to send again later: 429 from API Priority and Fairness, or "storage is
// (re)initializing" from a kube-apiserver that has just started (rejected unprocessed, so any verb is safe to send
// again), and a GET's 5xx with Retry-After. client-go sends them again after the Retry-After they name, up to 10
// times, within the request's context; KubeRest (rest.ts) and every client-node API client made from a KubeConfig
// passed through withRetryAfter do the same, within the request deadline.
import {
  wrapHttpLibrary,
  type Configuration,
  type HttpLibrary,
  type KubeConfig,
  type RequestContext,
  type ResponseContext,
} from "@kubernetes/client-node";
import { sleep, systemClock } from "./clock.ts";

/** Retries after Retry-After per request (client-go's default). */
export const MAX_RETRY_AFTER_RETRIES = 10;
/** The longest Retry-After obeyed per retry; the request's own deadline bounds the whole. */
export const MAX_RETRY_AFTER_MS = 10_000;

/** Retry-After in milliseconds: whole seconds as the API server sends it; an HTTP date or garbage counts as 1 s. */
export function retryAfterMs(header: string | string[] | undefined): number | undefined {
  if (header === undefined) return undefined;
  const seconds = Number(Array.isArray(header) ? header[0] : header);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : 1000;
}

/** How long to wait before sending a `method` request again after answer `code`, or undefined: not again. */
export function retryDelayMs(method: string, code: number, retryAfter: number | undefined): number | undefined {
  const asked = code === 429 || (method.toUpperCase() === "GET" && code >= 500 && retryAfter !== undefined);
  return asked ? Math.min(MAX_RETRY_AFTER_MS, Math.max(100, retryAfter ?? 1000)) : undefined;
}

/**
 * Makes every API client that `kubeConfig.makeApiClient` creates from now on (and KubernetesObjectApi.makeApiClient,
 * which calls it) send a request again after Retry-After, while the retry starts within `deadlineMs` of the first
 * send (the request deadline, `--api-request-timeout`: its abort signal also ends a wait). Returns `kubeConfig`.
 */
export function withRetryAfter(kubeConfig: KubeConfig, deadlineMs: number): KubeConfig {
  type Constructor = new (configuration: Configuration) => object;
  const target = kubeConfig as unknown as { makeApiClient: (type: Constructor) => object };
  const make = target.makeApiClient.bind(kubeConfig);
  target.makeApiClient = (type) =>
    make(
      new Proxy(type, {
        construct: (apiType, [configuration]: [Configuration]) =>
          new apiType({ ...configuration, httpApi: retrying(configuration.httpApi, deadlineMs) }),
      }),
    );
  return kubeConfig;
}

function retrying(inner: HttpLibrary, deadlineMs: number): HttpLibrary {
  return wrapHttpLibrary({
    send: (request: RequestContext): Promise<ResponseContext> =>
      sendAgainAfterRetryAfter(
        request.getHttpMethod(),
        performance.now() + deadlineMs,
        request.getSignal(),
        () => inner.send(request).toPromise(),
        (response) => ({ code: response.httpStatusCode, retryAfterMs: retryAfterMs(response.headers["retry-after"]) }),
        // Read the refused answer to its end, so that its connection goes back to the pool.
        (response) => response.body.text(),
      ),
  });
}

/** What an answer says about sending again: its HTTP status and Retry-After (ms), if any. */
export interface RefusalSigns {
  code: number;
  retryAfterMs: number | undefined;
}

/**
 * Runs `attempt` and runs it again after Retry-After while its answer asks for that (retryDelayMs), at most
 * MAX_RETRY_AFTER_RETRIES times and only while the next attempt would start before `deadline` (performance.now()
 * time); `signal` ends a wait. `signs` reads an answer (undefined: not an HTTP answer, never sent again); `discard`
 * is given each answer that is sent again. Returns the last answer.
 */
export async function sendAgainAfterRetryAfter<T>(
  method: string,
  deadline: number,
  signal: AbortSignal | undefined,
  attempt: () => Promise<T>,
  signs: (answer: T) => RefusalSigns | undefined,
  discard?: (answer: T) => Promise<unknown>,
): Promise<T> {
  for (let retry = 0; ; retry++) {
    const answer = await attempt();
    const refusal = signs(answer);
    const delayMs = refusal && retryDelayMs(method, refusal.code, refusal.retryAfterMs);
    if (delayMs === undefined || retry >= MAX_RETRY_AFTER_RETRIES || performance.now() + delayMs >= deadline)
      return answer;
    await discard?.(answer);
    await sleep(systemClock, delayMs, signal);
  }
}

// One TCP connection carried over one WebSocket port-forward through the workload API server
// (`pods/<pod>/portforward?ports=<port>`), with @kubernetes/client-node's PortForward. Its handler strips the 2-byte
// port prefix of each channel's first frame; channel 0 is the data, channel 1 the error text of the kubelet (or of
// the API server's translator). The two ends live and die together: when the WebSocket closes or fails the TCP socket
// is destroyed, so gRPC sees a dead connection and the etcd client's rebuild-on-transport-failure path (client.ts)
// dials again, which opens a new port-forward; when gRPC closes the socket the WebSocket is terminated.
import type { Socket } from "node:net";
import { Writable } from "node:stream";
import { PortForward, type KubeConfig } from "@kubernetes/client-node";
import { errorMessage } from "../kube/log.ts";
import { podKey, type PodRef } from "./etcd-pods.ts";

/** The part of the `ws` WebSocket used here (client-node types it through isomorphic-ws, whose types are absent). */
interface ForwardWebSocket {
  readonly readyState: number;
  on(event: "close", listener: (code: number, reason: Buffer) => void): void;
  on(event: "error", listener: (error: Error) => void): void;
  terminate(): void;
}

const WEBSOCKET_CLOSED = 3;
/** Close codes of a WebSocket that ended because one side was done, not because something failed. */
const NORMAL_CLOSE_CODES = new Set([1000, 1005]);

export interface ForwardOptions {
  /** The WebSocket must be open within this long, else the connection is dropped (an API server that hangs). */
  openTimeoutMs: number;
  /** Why an established forward ended abnormally (kubelet error text, WebSocket error or close code). */
  onBroken: (why: string) => void;
}

/**
 * Carries `socket` to port `port` of `pod`. Resolves once the WebSocket is open; rejects with the upgrade's failure,
 * e.g. "Unexpected server response: 404", when it cannot be opened: the caller then records why and destroys the socket.
 */
export async function forwardConnection(
  config: KubeConfig,
  pod: PodRef,
  port: number,
  socket: Socket,
  options: ForwardOptions,
): Promise<void> {
  // A socket error (a reset from the gRPC side) only ends the connection; it must never reach the event loop.
  socket.on("error", () => socket.destroy());
  let broken = false;
  let webSocket: ForwardWebSocket | undefined;
  const breakWith = (why: string) => {
    if (!broken) {
      broken = true;
      options.onBroken(why);
    }
    socket.destroy();
    if (webSocket && webSocket.readyState !== WEBSOCKET_CLOSED) webSocket.terminate();
  };
  let errorText = "";
  const errorChannel = new Writable({
    write(chunk: Buffer, _encoding, done) {
      // Each channel's first frame is its port number alone: an empty chunk once the handler has stripped it.
      if (chunk.length === 0) return done();
      errorText += chunk.toString("utf8");
      // The kubelet reports a failed dial into the pod here and sends nothing more on this forward.
      breakWith(`the kubelet reported: ${errorText.trim()}`);
      done();
    },
  });
  const dataChannel = new Writable({
    write(chunk: Buffer, _encoding, done) {
      if (socket.destroyed) done();
      else socket.write(chunk, () => done());
    },
  });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`the port-forward to ${podKey(pod)} was not open within ${options.openTimeoutMs} ms`)),
      options.openTimeoutMs,
    );
  });
  const opening = new PortForward(config, true).portForward(
    pod.namespace,
    pod.name,
    [port],
    dataChannel,
    errorChannel,
    socket,
    0,
  );
  try {
    const opened = await Promise.race([opening, timeout]);
    if (typeof opened === "function") throw new Error("client-node returned a restartable port-forward (retryCount 0)");
    webSocket = opened as unknown as ForwardWebSocket;
  } catch (error) {
    // Opened after the timeout: nobody wants it any more.
    opening
      .then((late) => typeof late !== "function" && (late as unknown as ForwardWebSocket).terminate())
      .catch(() => {});
    throw new Error(upgradeFailure(error), { cause: error });
  } finally {
    clearTimeout(timer);
  }
  const opened = webSocket;
  opened.on("error", (error) => breakWith(`the port-forward failed: ${errorMessage(error)}`));
  opened.on("close", (code, reason) => {
    if (socket.destroyed) return;
    if (NORMAL_CLOSE_CODES.has(code)) socket.destroy();
    else breakWith(`the API server closed the port-forward (code ${code}${reason.length > 0 ? `: ${reason}` : ""})`);
  });
  socket.on("close", () => {
    if (opened.readyState !== WEBSOCKET_CLOSED) opened.terminate();
  });
  if (socket.destroyed) opened.terminate();
}

/** The WebSocket library rejects with an ErrorEvent whose message is all it knows ("Unexpected server response: 403"). */
function upgradeFailure(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === "object" && error !== null && "message" in error && typeof error.message === "string")
    return error.message;
  return errorMessage(error);
}

/** The HTTP status of a refused upgrade, from the WebSocket library's message, if it says one. */
export function refusedStatus(message: string): number | undefined {
  const match = /Unexpected server response: (\d{3})/.exec(message);
  return match ? Number(match[1]) : undefined;
}

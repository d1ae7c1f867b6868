// A pods/portforward stream through kube-apiserver with @kubernetes/client-node's PortForward (WebSocket,
// v4.channel.k8s.io), as Quorum opens one to a workload cluster's etcd Pod: what a test sends and what comes back.
import { Duplex, PassThrough, Writable } from "node:stream";
import { PortForward, type KubeConfig } from "@kubernetes/client-node";
import type WebSocket from "isomorphic-ws";

export interface PortForwardStream {
  /** Everything the pod sent back so far (the data channel; client-node strips the 2-byte port prefix). */
  output(): string;
  /** Everything on the error channel so far (prefix stripped too). */
  errors(): string;
  /** Resolves with the WebSocket close code once the connection closes. */
  readonly closed: Promise<number>;
  send(text: string): void;
  close(): void;
}

function collector(): { stream: Writable; text: () => string } {
  const chunks: Buffer[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk);
      done();
    },
  });
  return { stream, text: () => Buffer.concat(chunks).toString("utf8") };
}

export async function openPortForward(
  kubeConfig: KubeConfig,
  namespace: string,
  pod: string,
  port: number,
): Promise<PortForwardStream> {
  const output = collector();
  const errors = collector();
  const input = new PassThrough();
  const socket: WebSocket | (() => WebSocket | null) = await new PortForward(kubeConfig).portForward(
    namespace,
    pod,
    [port],
    output.stream,
    errors.stream,
    input,
  );
  if (typeof socket === "function") throw new Error("PortForward returned a restartable handle for retryCount 0");
  const closed = new Promise<number>((resolve) => socket.on("close", (code: number) => resolve(code)));
  return {
    output: output.text,
    errors: errors.text,
    closed,
    send: (text) => input.write(text),
    close: () => socket.close(),
  };
}

/**
 * The forward as one Duplex (data channel both ways), e.g. for `tls.connect({ socket })` to a TLS port such as
 * kubeadm's etcd: ends when the WebSocket closes; anything on the error channel destroys it with that message.
 */
export async function portForwardDuplex(
  kubeConfig: KubeConfig,
  namespace: string,
  pod: string,
  port: number,
): Promise<Duplex> {
  const input = new PassThrough();
  const duplex = new Duplex({
    read() {},
    write(chunk: Buffer, _encoding, done) {
      input.write(chunk, done);
    },
    final(done) {
      done();
    },
  });
  const output = new Writable({
    write(chunk: Buffer, _encoding, done) {
      duplex.push(chunk);
      done();
    },
  });
  const errors = new Writable({
    write(chunk: Buffer, _encoding, done) {
      // client-node strips the 2-byte port prefix from each channel's first frame and still passes on what is left:
      // the error channel's first frame is only the prefix, so an empty chunk arrives on every forward.
      if (chunk.length > 0) {
        duplex.destroy(new Error(`pods/portforward ${namespace}/${pod}:${port}: ${chunk.toString("utf8")}`));
      }
      done();
    },
  });
  const socket: WebSocket | (() => WebSocket | null) = await new PortForward(kubeConfig).portForward(
    namespace,
    pod,
    [port],
    output,
    errors,
    input,
  );
  if (typeof socket === "function") throw new Error("PortForward returned a restartable handle for retryCount 0");
  socket.on("close", () => duplex.push(null));
  duplex.on("close", () => socket.close());
  return duplex;
}

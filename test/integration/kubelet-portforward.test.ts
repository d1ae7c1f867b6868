// kube-apiserver's pods/portforward through the kubelet's own /portForward server code (bin/quorum-kubelet-portforward):
// the path Quorum takes to a workload cluster's etcd when the cloud blocks port 2379. A real kube-apiserver, a Node
// whose kubeletEndpoint is the server's port, a Pod bound to it, and a real etcd (the apiserver's own, plain HTTP)
// as the pod's port; the client is @kubernetes/client-node's PortForward (WebSocket, v4.channel.k8s.io).
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { PassThrough, Writable } from "node:stream";
import { after, before, describe, it } from "node:test";
import { PortForward } from "@kubernetes/client-node";
import type WebSocket from "isomorphic-ws";
import { createCA, issueCertificate, oneDay, validFor } from "../../src/adapters/certs/pki.ts";
import { startApiServer, type ApiServer } from "../env/apiserver.ts";
import { kubeRequestOk } from "../env/kube.ts";
import { startKubeletPortForward, type KubeletPortForward } from "../env/kubelet-portforward.ts";
import { freePort, httpGet } from "../env/net.ts";
import { makeTempDir, removeTempDir } from "../env/processes.ts";
import { eventually } from "../env/wait.ts";

interface Forwarded {
  /** Everything the pod sent back (data channel, port prefix stripped by client-node). */
  output: () => string;
  /** Everything on the error channel. */
  errors: () => string;
  closed: Promise<number>;
  send: (text: string) => void;
  close: () => void;
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

describe("pods/portforward through the kubelet port-forward server", () => {
  let api: ApiServer;
  let kubelet: KubeletPortForward;
  let dir: string;
  let etcdHost: string;
  let etcdPort: number;

  before(async () => {
    dir = makeTempDir("kubelet-portforward-test");
    // kubeadm's shape: kube-apiserver presents a client certificate the cluster CA signed, and the kubelet accepts
    // only clients that CA signed; the apiserver does not verify the kubelet's (self-signed) serving certificate.
    const ca = await createCA("quorum-test-cluster-ca", validFor(7 * oneDay));
    const apiserverKubeletClient = await issueCertificate(ca, {
      commonName: "kube-apiserver-kubelet-client",
      organization: ["kubeadm:cluster-admins"],
      usages: "client",
      validity: validFor(oneDay),
    });
    const file = (name: string, contents: string) => {
      writeFileSync(join(dir, name), contents, { mode: 0o600 });
      return join(dir, name);
    };
    const caFile = file("ca.crt", ca.certPem);
    api = await startApiServer({
      ca,
      extraArgs: [
        `--kubelet-client-certificate=${file("kubelet-client.crt", apiserverKubeletClient.certPem)}`,
        `--kubelet-client-key=${file("kubelet-client.key", apiserverKubeletClient.keyPem)}`,
      ],
    });
    // The apiserver's own etcd stands in for the pod: plain HTTP on its own loopback address.
    const etcdUrl = new URL(api.etcd.endpoints()[0]);
    etcdHost = etcdUrl.hostname;
    etcdPort = Number(etcdUrl.port);
    kubelet = await startKubeletPortForward({ targetHost: etcdHost, clientCaFile: caFile, logDir: dir });

    await kubeRequestOk(api.kubeConfig, "/api/v1/nodes", { body: { metadata: { name: "n1" } } });
    await kubeRequestOk(api.kubeConfig, "/api/v1/nodes/n1/status", {
      method: "PATCH",
      body: {
        status: {
          addresses: [{ type: "InternalIP", address: "127.0.0.1" }],
          daemonEndpoints: { kubeletEndpoint: { Port: kubelet.port } },
        },
      },
    });
    // kube-system appears a moment after /readyz (the apiserver's system-namespaces controller creates it).
    await eventually("Pod kube-system/etcd-n1 created", () =>
      kubeRequestOk(api.kubeConfig, "/api/v1/namespaces/kube-system/pods", {
        body: {
          metadata: { name: "etcd-n1", namespace: "kube-system" },
          spec: {
            nodeName: "n1",
            hostNetwork: true,
            containers: [{ name: "etcd", image: "registry.k8s.io/etcd:3.7.0-0" }],
          },
        },
      }),
    );
  });

  after(async () => {
    await kubelet?.stop();
    await api?.stop();
    if (dir) removeTempDir(dir);
  });

  async function forward(port: number): Promise<Forwarded> {
    const output = collector();
    const errors = collector();
    const input = new PassThrough();
    const socket: WebSocket | (() => WebSocket | null) = await new PortForward(api.kubeConfig).portForward(
      "kube-system",
      "etcd-n1",
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

  it("carries an HTTP request to etcd and its answer back, then closes when etcd closes", async (t) => {
    const forwarded = await forward(etcdPort);
    t.after(() => forwarded.close());
    // HTTP/1.0: etcd answers and closes, so the pod side ends first, as a dropped etcd connection would.
    forwarded.send("GET /version HTTP/1.0\r\nHost: etcd\r\n\r\n");
    await eventually("etcd's /version answer through the forward", async () =>
      /^HTTP\/1\.0 200 OK\r\n[\s\S]*"etcdserver":"3\.7\./.test(forwarded.output()),
    );
    const closeCode = await withTimeout(forwarded.closed, 10_000, "the WebSocket to close after etcd closed");
    assert.equal(closeCode, 1000);
    assert.equal(forwarded.errors(), "");
  });

  it("keeps one forward open for several requests and answers, as an etcd client connection needs", async (t) => {
    const forwarded = await forward(etcdPort);
    t.after(() => forwarded.close());
    forwarded.send("GET /health HTTP/1.1\r\nHost: etcd\r\n\r\n");
    await eventually("the first answer", async () => /"health":"true"/.test(forwarded.output()));
    forwarded.send("GET /version HTTP/1.1\r\nHost: etcd\r\n\r\n");
    await eventually("the second answer on the same stream", async () => /"etcdserver"/.test(forwarded.output()));
  });

  it("reports a pod port nothing listens on over the error channel and closes, instead of hanging", async () => {
    const closedPort = await freePort(etcdHost);
    const forwarded = await forward(closedPort);
    // The kubelet dials the pod's port when the forward opens, so the refusal arrives without any data sent.
    const closeCode = await withTimeout(forwarded.closed, 15_000, "the WebSocket to close after the refused dial");
    assert.equal(closeCode, 1000);
    assert.match(forwarded.errors(), new RegExp(`error forwarding port ${closedPort} to pod .*connection refused`));
    assert.equal(forwarded.output(), "");
  });

  it("refuses a caller without a client certificate the cluster CA signed", async () => {
    const refused = await httpGet(`https://${kubelet.address}/healthz`, { rejectUnauthorized: false }).then(
      (response) => `HTTP ${response.status}`,
      (error: Error) => error.message,
    );
    assert.doesNotMatch(refused, /^HTTP 200/);
  });
});

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
